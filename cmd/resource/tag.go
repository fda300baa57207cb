package resource

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// TagOptions are the inputs of "solar resource tag".
type TagOptions struct {
	App    *app.App
	Name   string
	Tags   []string
	Delete bool
}

// NewCmdTag builds "solar resource tag".
func NewCmdTag(a *app.App, runF func(*TagOptions) error) *cobra.Command {
	opts := &TagOptions{App: a}
	c := &cobra.Command{
		Use:   "tag NAME TAG...",
		Short: "Add or delete a resource's tags",
		Long: `Add tags (k=v or bare labels) to a resource, or delete them with --delete
(a bare key deletes that key whatever its value). Tags are copied into staged
entries when a change is staged; retagging does not change what is staged.` + "\n" + app.ExitHelp,
		Example: `  solar resource tag mariadb env=prod role=db
  solar resource tag mariadb env --delete`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.Tags = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return tagRun(opts)
		},
	}
	c.Flags().BoolVarP(&opts.Delete, "delete", "d", false, "delete the tags instead of adding them")
	return c
}

func tagRun(opts *TagOptions) error {
	set, err := tags.ParseList(opts.Tags)
	if err != nil {
		return err
	}
	var r *resources.Resource
	err = opts.App.Update(func(tx *store.Tx) error {
		var err error
		r, err = resources.NewCatalog(tx).SetTags(opts.Name, set, opts.Delete)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "%s tags: %s\n", r.Name, app.Escape(strings.Join(r.Tags.Strings(), ", ")))
	return nil
}
