package orch

import (
	"fmt"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// RunPlan runs plan opts.Ref exactly as "orch run-once" does (progress,
// -v, Ctrl-C, a team store's claim and lease, exit statuses 0, 3, 5 and
// 130), for commands outside orch that make a plan and run it at once
// ("resource action").
func RunPlan(opts *RunOptions) error {
	if err := checkRunFlags(opts); err != nil {
		return err
	}
	return runRun(opts)
}

// ActionCheckOptions are the inputs of "resource action --dry-run".
type ActionCheckOptions struct {
	App      *app.App
	Resource string
	Action   string
	JSON     bool
}

// CheckAction predicts what running one resource's action now would do,
// as "orch check" does for a task (orch.Runner.CheckAction), prints the
// prediction and writes nothing. Exit status 3 when the check script
// failed, 130 when interrupted.
func CheckAction(opts *ActionCheckOptions) error {
	a := opts.App
	settings, err := a.RunSettings()
	if err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	pr := newProgress(a.IO.Err, false, false, a.Now())
	in := interrupts(pr)
	defer in.release()
	r := &settings
	r.Store, r.Concurrency, r.PerNode = store.NewHandle(path), 1, 1
	r.Started = func(*orch.Record, map[string]orch.State) {
		fmt.Fprintf(a.IO.Err, "check %s.%s (nothing will be changed)\n", opts.Resource, opts.Action)
	}
	_, preds, err := r.CheckAction(in.ctx, in.stop, opts.Resource, opts.Action)
	pr.end()
	if err != nil {
		return err
	}
	if in.typed() || len(preds) != 1 {
		fmt.Fprintf(a.IO.Err, "interrupted; the check of %s.%s is incomplete (nothing was changed)\n", opts.Resource, opts.Action)
		return &app.InterruptedError{}
	}
	p := preds[0]
	if opts.JSON {
		err = app.JSON(a.IO.Out, struct {
			FormatVersion int             `json:"format_version"`
			Resource      string          `json:"resource"`
			Action        string          `json:"action"`
			Prediction    orch.Prediction `json:"prediction"`
		}{app.FormatVersion, opts.Resource, opts.Action, p})
	} else {
		err = app.Table(a.IO.Out, []string{"task", "prediction", "why"}, [][]string{{p.Task, p.What, p.Why}})
		if err == nil && p.What == orch.Unknown {
			fmt.Fprintln(a.IO.Out, "unknown: the base has no check support for that action (check: in meta.yaml)")
		}
		if err == nil {
			_, err = fmt.Fprintln(a.IO.Out, "nothing was changed")
		}
	}
	if err != nil {
		return err
	}
	if p.What == orch.CheckFailed {
		return &app.FailedError{Msg: "the check failed"}
	}
	return nil
}
