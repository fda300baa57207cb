package orch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/internal/actor"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// SubmitOptions are orch submit's flags.
type SubmitOptions struct {
	RunOptions
	Detach bool
}

// NewCmdSubmit builds "solar orch submit".
func NewCmdSubmit(a *app.App, runF func(*SubmitOptions) error) *cobra.Command {
	opts := &SubmitOptions{RunOptions: RunOptions{App: a, Verb: "submit"}}
	c := &cobra.Command{
		Use:   "submit [UID|last]",
		Short: "Hand a plan to the team store's runners, and follow it",
		Long: `Hand the plan (default: last) to the runners of a PostgreSQL store (solar
runner, on any machine): they claim its ready tasks, heaviest first, and run
them. --concurrency and --per-node are the plan's own limits, held across all
runners together. Tasks a stop or a kill ended run again (as resume runs them);
a plan changed since it was reviewed is refused as run-once refuses it.

Without --detach, submit follows the plan as run-once does: the same progress
lines, Ctrl-C once stops it (running tasks finish), twice kills its running
tasks, and the same exit statuses. With --detach it returns once the plan is
handed over; follow it with solar orch report, stop it with solar orch stop.
A plan already submitted is followed, not handed over again; a finished plan
is not run again (solar orch restart runs it).
orch run-once of a submitted plan runs its tasks beside the runners. A bbolt
store has no runners: submit refuses it with exit 2.` + "\n" + app.ExitHelp,
		Example: `  solar orch submit last
  solar orch submit last --detach --concurrency 20 --per-node 2
  solar runner list && solar orch report last`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if err := checkRunFlags(&opts.RunOptions); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runSubmit(opts)
		},
	}
	addRunFlags(c, &opts.RunOptions)
	c.Flags().BoolVar(&opts.Detach, "detach", false, "return once the plan is handed over")
	return c
}

func runSubmit(opts *SubmitOptions) error {
	a := opts.App
	sshCfg, err := a.SSHConfig()
	if err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	if !store.IsURL(path) {
		return orch.ErrNoFleet
	}
	db, err := a.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	var uid string
	if err := db.View(func(tx *store.Tx) error {
		var err error
		uid, err = orch.Resolve(tx, opts.Ref)
		return err
	}); err != nil {
		return err
	}
	so := orch.SubmitOptions{Concurrency: opts.Concurrency, PerNode: opts.PerNode, By: a.Actor(), Prepare: opts.prepareRun,
		Settings: orch.Runner{SSH: sshCfg, CacheDir: bases.CacheDir(a.Getenv), Now: a.Now}}
	rec, states, err := orch.Submit(db, uid, so)
	switch {
	case errors.Is(err, errFinished):
		fmt.Fprintf(a.IO.Err, "plan %s is already finished; nothing to run (solar orch restart %s runs it again)\n", uid, uid)
		return nil
	case errors.Is(err, orch.ErrSubmitted) && !opts.Detach:
		fmt.Fprintf(a.IO.Err, "plan %s is already submitted; following it\n", uid)
	case err != nil:
		return err
	}
	if opts.Detach {
		fmt.Fprintf(a.IO.Out, "submitted plan %s to the runners (solar orch report %s follows it, solar orch stop %s stops it)\n", uid, uid, uid)
		return nil
	}
	return followFleet(&opts.RunOptions, db, uid, rec, states, nil)
}

// followFleet follows submitted plan uid until it settles, with the
// progress and exit statuses of run-once; Ctrl-C stops it (twice kills)
// through the store, wherever its tasks run. local, if set, is a runner
// of the plan in this process, run beside.
func followFleet(opts *RunOptions, db *store.DB, uid string, rec *orch.Record, states map[string]orch.State, local *orch.FleetRunner) error {
	a := opts.App
	pr := newProgress(a.IO.Err, a.IO.ErrTTY, a.Color(), a.Now())
	in := interrupts(pr)
	defer in.release()
	if rec != nil {
		pr.begin(rec, states)
	}
	pr.start(uid, opts.Verb)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-in.stop:
		case <-stopped:
			return
		}
		if _, err := orch.Stop(db, uid, false); err != nil {
			pr.note("stop: " + err.Error())
		}
		select {
		case <-in.ctx.Done():
		case <-stopped:
			return
		}
		if _, err := orch.Stop(db, uid, true); err != nil {
			pr.note("kill: " + err.Error())
		}
	}()
	runDone := make(chan error, 1)
	if local != nil {
		local.Settings.Note = pr.note
		if opts.Verbose {
			local.Settings.Output = pr.output
		}
		go func() { runDone <- local.Run(context.Background(), nil) }()
	} else {
		runDone <- nil
	}
	go warnNoRunners(db, uid, pr, stopped, local != nil)
	rec, final, err := orch.Follow(context.Background(), db, uid, pr.task)
	close(stopped)
	if rerr := <-runDone; err == nil && rerr != nil {
		err = rerr
	}
	pr.end()
	if err != nil {
		return err
	}
	pr.summary(rec, final)
	return runExit(a, uid, in, final)
}

// warnNoRunners says once, after a few seconds, that no live runner would
// run the plan.
func warnNoRunners(db *store.DB, uid string, pr *progress, done <-chan struct{}, local bool) {
	if local {
		return
	}
	select {
	case <-done:
		return
	case <-time.After(3 * time.Second):
	}
	fleet, ok := db.Fleet()
	if !ok {
		return
	}
	if list, err := fleet.Runners(context.Background()); err == nil && len(list) == 0 {
		pr.note("no live runner: the plan waits for one (start solar runner on any machine)")
	}
}

// runExit is the exit of a run or a followed plan that ended with final.
func runExit(a *app.App, uid string, in *interrupt, final map[string]orch.State) error {
	if in.typed() {
		if !orch.Done(final) {
			fmt.Fprintf(a.IO.Err, "interrupted; solar orch resume %s finishes the plan\n", uid)
		}
		return &app.InterruptedError{}
	}
	if !orch.Done(final) && (in.stopped() || stoppedTasks(final)) {
		fmt.Fprintf(a.IO.Err, "stopped; solar orch resume %s finishes the plan\n", uid)
		return &app.StoppedError{}
	}
	if n := count(final, orch.StatusError); n > 0 {
		return &app.FailedError{Msg: app.Count(n, "task") + " failed"}
	}
	return nil
}

// stoppedTasks reports whether a stop ended some task of states.
func stoppedTasks(states map[string]orch.State) bool {
	for _, st := range states {
		if orch.Stopped(st) {
			return true
		}
	}
	return false
}

// localRunner is the fleet runner of plan uid that orch run-once runs in
// its own process, beside the fleet's.
func localRunner(opts *RunOptions, path, uid string) (*orch.FleetRunner, error) {
	a := opts.App
	sshCfg, err := a.SSHConfig()
	if err != nil {
		return nil, err
	}
	return &orch.FleetRunner{Store: store.NewHandle(path), Name: actor.Host() + "-" + strconv.Itoa(os.Getpid()), Concurrency: opts.Concurrency, Plan: uid,
		Settings: orch.Runner{SSH: sshCfg, AnsiblePlaybook: a.Getenv("SOLAR_ANSIBLE_PLAYBOOK"), CacheDir: bases.CacheDir(a.Getenv),
			Now: a.Now, Actor: a.Actor(), Host: actor.Host()}}, nil
}

// joinFleet runs plan uid as a runner of the fleet when it was submitted
// (orch run-once of a submitted plan): its tasks run here and on the
// fleet's runners. joined is false for a plan never submitted, which
// run-once runs on its own.
func joinFleet(opts *RunOptions, path, uid string) (joined bool, err error) {
	a := opts.App
	db, err := a.Open()
	if err != nil {
		return false, err
	}
	defer db.Close()
	fleet, ok := db.Fleet()
	if !ok {
		return false, nil
	}
	p, submitted, err := fleet.PlanState(context.Background(), uid)
	if err != nil || !submitted {
		return false, err
	}
	var rec *orch.Record
	var states map[string]orch.State
	if !p.Live {
		so := orch.SubmitOptions{Concurrency: p.Concurrency, PerNode: p.PerNode, By: a.Actor(), Prepare: opts.prepareRun,
			Settings: orch.Runner{CacheDir: bases.CacheDir(a.Getenv), Now: a.Now}}
		if rec, states, err = orch.Submit(db, uid, so); err != nil {
			return true, err
		}
	} else if err := db.View(func(tx *store.Tx) error {
		var err error
		if rec, err = orch.Load(tx, uid); err != nil {
			return err
		}
		states, err = orch.States(tx, rec)
		return err
	}); err != nil {
		return true, err
	}
	local, err := localRunner(opts, path, uid)
	if err != nil {
		return true, err
	}
	return true, followFleet(opts, db, uid, rec, states, local)
}
