package inputs

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd builds "solar inputs" with its verbs.
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "inputs",
		Short: "Trace resources' input values across connections",
		Long: `Questions about input values that span resources. "backtrack" shows where a
value comes from: the connections and computations it follows, down to the
resource that owns it.` + "\n" + app.ExitHelp,
		Example: `  solar inputs backtrack ks db_host
  solar inputs backtrack ks --json`,
	}
	c.AddCommand(NewCmdBacktrack(a, nil))
	return c
}
