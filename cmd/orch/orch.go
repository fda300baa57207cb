package orch

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd returns "solar orch" with its verbs.
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "orch",
		Short: "Inspect, draw, run and control plans",
		Long: `Plans are made by "solar ch process". Name one by its uid, or "last" (the
newest), "last~1" (the one before)...` + "\n" + app.ExitHelp,
		Example: `  solar orch list
  solar orch dg last | dot -Tsvg > plan.svg
  solar orch run-once last
  solar orch report last`,
	}
	c.AddCommand(NewCmdList(a, nil), NewCmdShow(a, nil), NewCmdDG(a, nil), NewCmdRunOnce(a, nil), NewCmdSubmit(a, nil), NewCmdResume(a, nil), NewCmdRetry(a, nil),
		NewCmdRestart(a, nil), NewCmdReset(a, nil), NewCmdStop(a, nil), NewCmdFilter(a, nil), NewCmdNoop(a, nil), NewCmdReport(a, nil), NewCmdCheck(a, nil), NewCmdLogs(a, nil))
	return c
}

func refArg(args []string) string {
	if len(args) == 0 {
		return "last"
	}
	return args[0]
}
