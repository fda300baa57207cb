package orch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// RunOptions are the inputs of "orch run-once" and its relatives.
type RunOptions struct {
	App         *app.App
	Ref         string
	Concurrency int
	PerNode     int
	Verbose     bool // stream every task's output lines to stderr
	// Prepare changes task states before the run (retry, restart).
	Prepare func(tx *store.Tx, rec *orch.Record, states map[string]orch.State) error
	Verb    string
}

func addRunFlags(c *cobra.Command, opts *RunOptions) {
	c.Flags().IntVar(&opts.Concurrency, "concurrency", 10, "at most N tasks at once")
	c.Flags().IntVar(&opts.PerNode, "per-node", 1, "at most N tasks at once on one location node")
	c.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "stream every task's output to stderr, each line prefixed with the task")
}

func checkRunFlags(opts *RunOptions) error {
	if opts.Concurrency < 1 || opts.PerNode < 1 {
		return app.Usagef("--concurrency and --per-node must be at least 1")
	}
	return nil
}

// NewCmdRunOnce builds "solar orch run-once".
func NewCmdRunOnce(a *app.App, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{App: a, Verb: "run"}
	c := &cobra.Command{
		Use:   "run-once [UID|last]",
		Short: "Run a plan: every task whose predecessors finished, in parallel, within limits",
		Long: `Run the plan (default: last). Tasks start as soon as their predecessors have
finished and been recorded, highest critical-path weight first, at most
--concurrency at once, at most --per-node at once on one location node, and
within the bases' sema semaphores. A task triggered only by react rules runs if
one of their events happened, else it is SKIPPED "not triggered"; a failure
skips what depends on it ("upstream failed"), except through failed/any rules.
Each success commits its staged entry.

Progress goes to stderr, one line per task transition. Ctrl-C once stops
starting tasks and waits for the running ones; twice kills them. The plan stays
resumable: run-once (or resume) again finishes it without re-running finished
tasks; a plan with every task finished runs nothing (restart runs it again).
Exit status 3 when some task ended ERROR.` + "\n" + app.ExitHelp,
		Example: `  solar orch run-once last
  solar orch run-once last --concurrency 4 --per-node 2
  solar orch run-once last && solar orch report last`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if err := checkRunFlags(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(opts)
		},
	}
	addRunFlags(c, opts)
	return c
}

// runVariant is a verb that resets some task states and then runs the plan
// like run-once.
type runVariant struct {
	verb, short, long string
	reset             func(orch.State) bool
}

func newCmdRunVariant(a *app.App, v runVariant) *cobra.Command {
	opts := &RunOptions{App: a, Verb: v.verb}
	c := &cobra.Command{
		Use:     v.verb + " [UID|last]",
		Short:   v.short,
		Long:    v.long + "\n" + app.ExitHelp,
		Example: "  solar orch " + v.verb + " last",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if err := checkRunFlags(opts); err != nil {
				return err
			}
			opts.Prepare = resetWhere(v.reset)
			return runRun(opts)
		},
	}
	addRunFlags(c, opts)
	return c
}

// NewCmdResume builds "solar orch resume".
func NewCmdResume(a *app.App) *cobra.Command {
	return newCmdRunVariant(a, runVariant{
		verb:  "resume",
		short: "Continue an interrupted or stopped run; finished tasks are not run again",
		long:  "Continue the plan: tasks that are not finished (pending, or interrupted while running) run; finished ones are kept. Tasks SKIPPED \"stopped\" run again.",
		reset: orch.Stopped,
	})
}

// NewCmdRetry builds "solar orch retry".
func NewCmdRetry(a *app.App) *cobra.Command {
	return newCmdRunVariant(a, runVariant{
		verb:  "retry",
		short: "Run again the tasks that ended ERROR and those they skipped",
		long:  "Set ERROR tasks, and tasks SKIPPED because of them, back to PENDING and run the plan. Use it after fixing the cause of a failure outside solar (a full disk, a node that was down). A changed input makes the plan stale: process the change into a new plan instead (solar ch process).",
		reset: func(st orch.State) bool {
			_, failed := st.FailedRoot("")
			return failed || orch.Stopped(st)
		},
	})
}

// NewCmdRestart builds "solar orch restart".
func NewCmdRestart(a *app.App) *cobra.Command {
	return newCmdRunVariant(a, runVariant{
		verb:  "restart",
		short: "Run every task of a plan again",
		long:  "Set every task back to PENDING and run the plan from the start.",
		reset: func(orch.State) bool { return true },
	})
}

// resetWhere returns a Prepare that sets matching tasks back to PENDING.
func resetWhere(match func(orch.State) bool) func(*store.Tx, *orch.Record, map[string]orch.State) error {
	return func(tx *store.Tx, rec *orch.Record, states map[string]orch.State) error {
		for id, st := range states {
			if st.Status != orch.StatusPending && match(st) {
				if err := orch.PutState(tx, rec.UID, id, orch.State{Status: orch.StatusPending}); err != nil {
					return err
				}
			}
		}
		return orch.SetOpen(tx, rec.UID, true)
	}
}

// errFinished rolls back the preparation of a plan that has nothing left
// to run, so that it is not marked unfinished again.
var errFinished = errors.New("plan already finished")

func runRun(opts *RunOptions) error {
	a := opts.App
	sshCfg, err := a.SSHConfig()
	if err != nil {
		return err
	}
	var uid string
	err = a.Update(func(tx *store.Tx) error {
		var err error
		if uid, err = orch.Resolve(tx, opts.Ref); err != nil {
			return err
		}
		// The runner would refuse too, but only after this transaction
		// has reset states under a live run.
		if err := orch.RefuseRunning(tx, uid); err != nil {
			return err
		}
		rec, err := orch.Load(tx, uid)
		if err != nil {
			return err
		}
		states, err := orch.States(tx, rec)
		if err != nil {
			return err
		}
		if opts.Prepare != nil {
			// retry and resume may find nothing to reset; restart always does.
			if err := opts.Prepare(tx, rec, states); err != nil {
				return err
			}
			if states, err = orch.States(tx, rec); err != nil {
				return err
			}
		}
		if orch.Done(states) {
			return errFinished
		}
		// What would run must still be what was reviewed.
		var todo []string
		for id, st := range states {
			if !st.Status.Finished() || orch.Stopped(st) {
				todo = append(todo, id)
			}
		}
		return orch.RefuseStale(tx, rec, todo)
	})
	if errors.Is(err, errFinished) {
		// Not an error: the plan is in the state the user asked for.
		fmt.Fprintf(a.IO.Err, "plan %s is already finished; nothing to run (solar orch restart %s runs it again)\n", uid, uid)
		return nil
	}
	if err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	pr := newProgress(a.IO.Err, a.IO.ErrTTY, a.Now())
	ctx, stop, release := interrupts(pr)
	defer release()
	r := &orch.Runner{Path: path, UID: uid, SSH: sshCfg, Concurrency: opts.Concurrency, PerNode: opts.PerNode, Now: a.Now, Progress: pr.task,
		Started: func(*orch.Record) { pr.start(uid, opts.Verb) }, Note: pr.note}
	if opts.Verbose {
		r.Output = pr.output
	}
	rec, states, err := r.Run(ctx, stop)
	pr.end()
	if err != nil {
		return err
	}
	pr.summary(rec, states)
	if n := count(states, orch.StatusError); n > 0 {
		return &app.FailedError{Msg: app.Count(n, "task") + " failed"}
	}
	return nil
}

// interrupts turns Ctrl-C and SIGTERM into the run's stop (the first) and
// cancellation (Ctrl-C again). release undoes it.
func interrupts(pr *progress) (ctx context.Context, stop <-chan struct{}, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stopCh := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		stopping := false
		for sig := range sigs {
			switch {
			case !stopping && sig == syscall.SIGTERM:
				// "solar orch stop" from another terminal, or a service
				// manager: nobody pressed Ctrl-C here.
				pr.note("stop requested: running tasks finish, no new task starts")
			case !stopping:
				pr.note("stopping: running tasks finish, no new task starts (Ctrl-C again to kill them)")
			case sig == syscall.SIGTERM:
				// A second stop request asks for nothing more.
				continue
			default:
				pr.note("killing running tasks")
				cancel()
				return
			}
			stopping = true
			close(stopCh)
		}
	}()
	return ctx, stopCh, func() {
		signal.Stop(sigs)
		cancel()
	}
}

func count(states map[string]orch.State, s orch.Status) int {
	n := 0
	for _, st := range states {
		if st.Status == s {
			n++
		}
	}
	return n
}

// progress prints task transitions and, on a terminal, a live summary line.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	started time.Time
	running map[string]bool
	done    int
	failed  int
	status  bool // a summary line is on screen
}

func newProgress(w io.Writer, tty bool, now time.Time) *progress {
	return &progress{w: w, tty: tty, started: now, running: map[string]bool{}}
}

func (p *progress) start(uid, verb string) {
	fmt.Fprintf(p.w, "%s plan %s\n", verb, uid)
}

func (p *progress) clear() {
	if p.status {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = false
	}
}

func (p *progress) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintln(p.w, msg)
}

func (p *progress) task(id string, st orch.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	elapsed := time.Since(p.started).Seconds()
	line := fmt.Sprintf("%7.2fs  %-28s %s", elapsed, id, st.Status)
	switch st.Status {
	case orch.StatusInProgress:
		p.running[id] = true
	case orch.StatusSkipped:
		line += "  " + st.Reason
		p.done++
	case orch.StatusError:
		delete(p.running, id)
		p.done++
		p.failed++
		line += fmt.Sprintf("  after %s: %s", app.Count(st.Attempts, "attempt"), oneLine(st.Err))
	default:
		delete(p.running, id)
		p.done++
		line += "  " + duration(st)
		if st.Attempts > 1 {
			line += " (" + app.Count(st.Attempts, "attempt") + ")"
		}
	}
	fmt.Fprintln(p.w, line)
	p.redraw()
}

// redraw puts the summary line back, on a terminal.
func (p *progress) redraw() {
	if p.tty {
		fmt.Fprintf(p.w, "  %d done, %d running, %d failed, %.1fs", p.done, len(p.running), p.failed, time.Since(p.started).Seconds())
		p.status = true
	}
}

// output prints one line a task printed (-v), prefixed with the task.
func (p *progress) output(task string, l handler.Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, "%s | %s\n", task, escapeControl(l.Text))
	p.redraw()
}

func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

func (p *progress) summary(rec *orch.Record, states map[string]orch.State) {
	fmt.Fprintf(p.w, "plan %s: %s in %.2fs\n", rec.UID, totals(states), time.Since(p.started).Seconds())
}

func totals(states map[string]orch.State) string {
	var parts []string
	for _, s := range []orch.Status{orch.StatusSuccess, orch.StatusNoop, orch.StatusSkipped, orch.StatusError, orch.StatusPending, orch.StatusInProgress} {
		if n := count(states, s); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(string(s))))
		}
	}
	if len(parts) == 0 {
		return "no tasks"
	}
	return strings.Join(parts, ", ")
}

func duration(st orch.State) string {
	if st.Start.IsZero() || st.End.IsZero() {
		return ""
	}
	return st.End.Sub(st.Start).Round(time.Millisecond).String()
}

// oneLine joins a multi-line error (a stderr tail) for a progress line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
}
