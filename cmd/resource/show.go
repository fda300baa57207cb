package resource

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// ShowOptions are the inputs of "solar resource show".
type ShowOptions struct {
	App  *app.App
	Name string
	JSON bool
}

// NewCmdShow builds "solar resource show".
func NewCmdShow(a *app.App, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{App: a}
	c := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a resource: base, tags, actions, effective inputs",
		Long: `Show a resource with its effective input values (what its actions will see,
connections applied) and where each connected value comes from. A computed
input (meta.yaml computable:) shows "= EXPR" in the from column and
"computed": true in --json. Sensitive values are masked.` + "\n" + app.ExitHelp,
		Example: `  solar resource show mariadb
  solar resource show mariadb --json | jq '.inputs[] | select(.name=="port").value'`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return showRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

func showRun(opts *ShowOptions) error {
	var v resourceView
	err := opts.App.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		r, err := cat.Get(opts.Name)
		if err != nil {
			return err
		}
		v, err = newView(cat, r)
		return err
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		v.FormatVersion = app.FormatVersion
		return app.JSON(opts.App.IO.Out, v)
	}
	return printView(opts.App.IO.Out, v)
}
