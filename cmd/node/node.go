package node

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd builds "solar node".
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "Trust, list and check the nodes actions run on",
		Long: `A node is a resource made from a base with node: true (testdata/resources/node).
Resources connected from it run their actions there: on this machine with
transport local, over SSH with transport ssh. An SSH node must be trusted first:
"solar node trust" stores its host key in the store, and a task on a node
whose key is not trusted, or has changed, fails without running.` + "\n" + app.ExitHelp,
		Example: `  solar resource create web1 testdata/resources/node ip=10.0.0.5 transport=ssh ssh_user=deploy
  solar node trust web1
  solar node check web1
  solar node list`,
	}
	c.AddCommand(NewCmdTrust(a, nil), NewCmdList(a, nil), NewCmdCheck(a, nil))
	return c
}
