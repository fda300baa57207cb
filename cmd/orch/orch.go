package orch

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
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
	c.AddCommand(NewCmdList(a, nil), NewCmdShow(a, nil), NewCmdDG(a, nil), NewCmdRunOnce(a, nil), NewCmdResume(a, nil), NewCmdRetry(a, nil),
		NewCmdRestart(a, nil), NewCmdReset(a, nil), NewCmdStop(a, nil), NewCmdFilter(a, nil), NewCmdReport(a, nil), NewCmdCheck(a, nil), NewCmdLogs(a, nil))
	return c
}

// load resolves ref and returns the plan with its task states.
func load(a *app.App, ref string) (*orch.Record, map[string]orch.State, error) {
	var (
		rec    *orch.Record
		states map[string]orch.State
	)
	err := a.View(func(tx *store.Tx) error {
		var err error
		rec, states, err = orch.LoadRef(tx, ref)
		return err
	})
	return rec, states, err
}

func refArg(args []string) string {
	if len(args) == 0 {
		return "last"
	}
	return args[0]
}
