package resource

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd returns "solar resource" with its verbs.
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "resource",
		Aliases: []string{"resources", "res"},
		Short:   "Create, update, remove and inspect resources",
		Long: `A resource is an instance of a base (a directory with meta.yaml and action
scripts) with its own input values and tags. Every create, update and remove is
staged; see "solar ch stage".` + "\n" + app.ExitHelp,
		Example: `  solar resource create node1 testdata/resources/node ip=10.0.0.1 --tags env1
  solar resource update node1 ip=10.0.0.2
  solar resource list --tag env1
  solar resource show node1 --json`,
	}
	c.AddCommand(NewCmdCreate(a, nil), NewCmdUpdate(a, nil), NewCmdRemove(a, nil), NewCmdShow(a, nil), NewCmdList(a, nil), NewCmdTag(a, nil), NewCmdUpgrade(a, nil), NewCmdAction(a, nil))
	return c
}
