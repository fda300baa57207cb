package storecmd

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd builds "solar store".
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Show the store, copy it between backends, export it as JSON",
		Long: `The store holds everything solar knows: resources, connections, rules, the
staged log, history, plans, task logs and trusted host keys. It is a bbolt file
(--db PATH, $SOLAR_DB, else ~/.local/state/solar/solar.db) or, for a team, a
PostgreSQL database (--db postgres://..., see docs/team-store.md).` + "\n" + app.ExitHelp,
		Example: `  solar store info
  solar store copy --from ~/.local/state/solar/solar.db --to postgres://solar@db1/solar
  solar store export > solar-backup.json`,
	}
	c.AddCommand(NewCmdInfo(a, nil), NewCmdCopy(a, nil), NewCmdExport(a, nil))
	return c
}
