package resource

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// ListOptions are the inputs of "solar resource list".
type ListOptions struct {
	App  *app.App
	Tags []string
	JSON bool
}

// NewCmdList builds "solar resource list".
func NewCmdList(a *app.App, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List resources, optionally those matching a tag expression",
		Long: `List resources sorted by name. A tag expression combines k=v terms with
& (and), | (or), ! (not) and parentheses; k=* matches any value.` + "\n" + app.ExitHelp,
		Example: `  solar resource list
  solar resource list --tag 'env=demo & (role=db | role=lb)'
  solar resource list -t 'tier=*' --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	c.Flags().StringArrayVarP(&opts.Tags, "tag", "t", nil, "tag expression to filter by (repeatable: union)")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type listView struct {
	FormatVersion int            `json:"format_version"`
	Resources     []resourceView `json:"resources"`
}

func listRun(opts *ListOptions) error {
	filter, err := tags.ParseAny(opts.Tags)
	if err != nil {
		return err
	}
	out := listView{FormatVersion: app.FormatVersion, Resources: []resourceView{}}
	err = opts.App.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		list, err := cat.List(filter)
		if err != nil {
			return err
		}
		for _, r := range list {
			v, err := newView(cat, r)
			if err != nil {
				return err
			}
			out.Resources = append(out.Resources, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, out)
	}
	rows := make([][]string, 0, len(out.Resources))
	for _, v := range out.Resources {
		state := "ok"
		if v.Removing {
			state = "removing"
		}
		rows = append(rows, []string{v.Name, v.Base, v.Location, strings.Join(v.Tags, ","), state})
	}
	return app.Table(opts.App.IO.Out, []string{"name", "base", "location", "tags", "state"}, rows)
}
