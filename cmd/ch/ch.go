package ch

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd returns "solar ch" with its verbs.
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "ch",
		Aliases: []string{"changes"},
		Short:   "Staged changes: list, stage, discard, process into a plan, history, revert",
		Long: `Every resource create, update and remove, and every new connection, is recorded
as a staged entry (one per resource and action) with the resource's tags and the
diff against the last committed state. Entries stay staged until the task that
runs them succeeds.` + "\n" + app.ExitHelp,
		Example: `  solar ch stage -d
  solar ch stage -a restart -t role=db
  solar ch process -t env=demo
  solar ch history -n 5`,
	}
	c.AddCommand(NewCmdStage(a, nil), NewCmdStagedItem(a, nil), NewCmdProcess(a, nil), NewCmdDiscard(a, nil), NewCmdHistory(a, nil), NewCmdRevert(a, nil))
	return c
}
