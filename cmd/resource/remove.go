package resource

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// RemoveOptions are the inputs of "solar resource remove".
type RemoveOptions struct {
	App   *app.App
	Names []string
}

// NewCmdRemove builds "solar resource remove".
func NewCmdRemove(a *app.App, runF func(*RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{App: a}
	return &cobra.Command{
		Use:     "remove NAME...",
		Aliases: []string{"rm"},
		Short:   "Stage the removal of resources",
		Long: `Stage NAME.remove. The resource stays (marked) until its remove action succeeds;
then it is deleted with its connections and the rules that name it. A resource
that was never committed has nothing to undo and is deleted at once.` + "\n" + app.ExitHelp,
		Example: `  solar resource remove keystone
  solar resource remove rmq.2 rmq.3`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Names = args
			if runF != nil {
				return runF(opts)
			}
			return removeRun(opts)
		},
	}
}

func removeRun(opts *RemoveOptions) error {
	var lines []string
	err := opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		st := staging.New(cat, opts.App.Now).By(opts.App.Actor())
		for _, n := range opts.Names {
			if _, err := cat.Get(n); err != nil {
				return err
			}
		}
		for _, n := range opts.Names {
			e, err := st.Remove(n)
			if err != nil {
				return err
			}
			if e == nil {
				lines = append(lines, fmt.Sprintf("removed %s (it was never committed)", n))
			} else {
				lines = append(lines, fmt.Sprintf("staged %s", e.Key))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(opts.App.IO.Out, l)
	}
	return nil
}
