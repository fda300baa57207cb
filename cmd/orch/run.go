package orch

import (
	"bufio"
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
solar orch stop (from any machine) stops a run the same way, and --kill kills
its running tasks. Exit status 3 when some task ended ERROR; 5 when the run
was stopped with tasks left to run (even if killed tasks ended ERROR).` + "\n" + app.ExitHelp,
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

func newCmdRunVariant(a *app.App, v runVariant, runF func(*RunOptions) error) *cobra.Command {
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
			if runF != nil {
				return runF(opts)
			}
			return runRun(opts)
		},
	}
	addRunFlags(c, opts)
	return c
}

// NewCmdResume builds "solar orch resume".
func NewCmdResume(a *app.App, runF func(*RunOptions) error) *cobra.Command {
	return newCmdRunVariant(a, runVariant{
		verb:  "resume",
		short: "Continue an interrupted or stopped run; finished tasks are not run again",
		long:  "Continue the plan: tasks that are not finished (pending, or interrupted while running) run; finished ones are kept. Tasks SKIPPED \"stopped\" run again.",
		reset: orch.Stopped,
	}, runF)
}

// NewCmdRetry builds "solar orch retry".
func NewCmdRetry(a *app.App, runF func(*RunOptions) error) *cobra.Command {
	return newCmdRunVariant(a, runVariant{
		verb:  "retry",
		short: "Run again the tasks that ended ERROR and those they skipped",
		long:  "Set ERROR tasks, and tasks SKIPPED because of them, back to PENDING and run the plan. Use it after fixing the cause of a failure outside solar (a full disk, a node that was down). A changed input makes the plan stale: process the change into a new plan instead (solar ch process --supersede).",
		reset: func(st orch.State) bool {
			_, failed := st.FailedRoot("")
			return failed || orch.Stopped(st)
		},
	}, runF)
}

// NewCmdRestart builds "solar orch restart".
func NewCmdRestart(a *app.App, runF func(*RunOptions) error) *cobra.Command {
	return newCmdRunVariant(a, runVariant{
		verb:  "restart",
		short: "Run every task of a plan again",
		long:  "Set every task back to PENDING and run the plan from the start.",
		reset: func(orch.State) bool { return true },
	}, runF)
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

// prepareRun is the runner's Prepare: the variant's resets, then the
// checks that there is something to run and that it is still what was
// reviewed. Done in the runner's claiming transaction, the plan is loaded
// once (at 100,000 tasks a load costs a second).
func (opts *RunOptions) prepareRun(tx *store.Tx, rec *orch.Record, states map[string]orch.State) (map[string]orch.State, error) {
	// As soon as the plan's size is known: the run's preparation makes
	// its biggest heap.
	orch.TuneGC(len(rec.Plan.Nodes), opts.App.Getenv)
	if opts.Prepare != nil {
		// retry and resume may find nothing to reset; restart always does.
		if err := opts.Prepare(tx, rec, states); err != nil {
			return nil, err
		}
		var err error
		if states, err = orch.States(tx, rec); err != nil {
			return nil, err
		}
	}
	if orch.Done(states) {
		return nil, errFinished
	}
	// What would run must still be what was reviewed.
	var todo []string
	for id, st := range states {
		if !st.Status.Finished() || orch.Stopped(st) {
			todo = append(todo, id)
		}
	}
	return states, orch.RefuseStale(tx, rec, todo)
}

// errFinished rolls back the preparation of a plan that has nothing left
// to run, so that it is not marked unfinished again.
var errFinished = errors.New("plan already finished")

func runRun(opts *RunOptions) error {
	a := opts.App
	settings, err := a.RunSettings()
	if err != nil {
		return err
	}
	var uid string
	err = a.View(func(tx *store.Tx) error {
		var err error
		uid, err = orch.Resolve(tx, opts.Ref)
		return err
	})
	if err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	ttl, err := leaseTTL(a.Getenv)
	if err != nil {
		return err
	}
	if store.IsURL(path) {
		if joined, err := joinFleet(opts, path, uid); joined || err != nil {
			return err
		}
	}
	pr := newProgress(a.IO.Err, a.IO.ErrTTY, a.Color(), a.Now())
	in := interrupts(pr)
	defer in.release()
	r := &settings
	r.Store, r.UID, r.Concurrency, r.PerNode = store.NewHandle(path), uid, opts.Concurrency, opts.PerNode
	r.Progress, r.StopRequested, r.LeaseTTL, r.Prepare, r.Note = pr.task, in.requested, ttl, opts.prepareRun, pr.note
	r.Started = func(rec *orch.Record, states map[string]orch.State) {
		pr.begin(rec, states)
		pr.start(uid, opts.Verb)
	}
	if opts.Verbose {
		r.Output = pr.output
	}
	rec, states, err := r.Run(in.ctx, in.stop)
	pr.end()
	if errors.Is(err, errFinished) {
		// Not an error: the plan is in the state the user asked for.
		fmt.Fprintf(a.IO.Err, "plan %s is already finished; nothing to run (solar orch restart %s runs it again)\n", uid, uid)
		return nil
	}
	if err != nil {
		return err
	}
	pr.summary(rec, states)
	return runExit(a, uid, in, states)
}

// leaseTTL is $SOLAR_LEASE_TTL, the lease time of a run on a team store
// (docs/team-store.md), or zero for the default.
func leaseTTL(getenv func(string) string) (time.Duration, error) {
	v := getenv("SOLAR_LEASE_TTL")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < orch.MinLeaseTTL() {
		return 0, app.Usagef("SOLAR_LEASE_TTL=%q is not a duration of at least %s, such as 15s", v, orch.MinLeaseTTL())
	}
	return d, nil
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

// interrupt is how the operator interrupted a run: Ctrl-C once stops
// starting tasks and waits for the running ones; twice kills them. SIGTERM
// ("solar orch stop", a service manager) is a stop that nobody typed.
type interrupt struct {
	ctx    context.Context
	stop   <-chan struct{}
	mu     sync.Mutex
	sigint bool
	// stopReq is true once the run was asked to stop by SIGTERM or by a
	// request in the store (requested): "orch stop" from any machine.
	stopReq bool
	cancel  context.CancelFunc
	sigs    chan os.Signal
}

// interrupts installs the handlers; release removes them.
func interrupts(pr *progress) *interrupt {
	ctx, cancel := context.WithCancel(context.Background())
	stopCh := make(chan struct{})
	in := &interrupt{ctx: ctx, stop: stopCh, cancel: cancel, sigs: make(chan os.Signal, 2)}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		stopping := false
		for sig := range in.sigs {
			in.mu.Lock()
			if sig == os.Interrupt {
				in.sigint = true
			} else {
				in.stopReq = true
			}
			in.mu.Unlock()
			switch {
			case !stopping && sig == syscall.SIGTERM:
				pr.note("stop requested: running tasks finish, no new task starts")
			case !stopping:
				pr.note("interrupted: running tasks finish, no new task starts (Ctrl-C again to kill them)")
			case sig == syscall.SIGTERM:
				continue // a second stop request asks for nothing more
			default:
				pr.note("killing running tasks")
				cancel()
				return
			}
			stopping = true
			close(stopCh)
		}
	}()
	return in
}

func (in *interrupt) release() {
	signal.Stop(in.sigs)
	in.cancel()
}

// requested is Runner.StopRequested: the run found a stop request in the
// store.
func (in *interrupt) requested() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stopReq = true
}

// stopped reports whether the run was asked to stop other than by Ctrl-C.
func (in *interrupt) stopped() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stopReq
}

// typed reports whether the operator pressed Ctrl-C.
func (in *interrupt) typed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sigint
}

// progress prints task transitions and, on a terminal, a live summary line
// that ticks at least every second.
type progress struct {
	mu      sync.Mutex
	w       *bufio.Writer // the stream, flushed within flushEvery
	tty     bool
	color   bool
	started time.Time
	total   int
	running map[string]bool
	done    int
	failed  int
	status  bool // a summary line is on screen
	quit    chan struct{}
}

// flushEvery bounds how long a progress line waits in the buffer: a run of
// many quick tasks would otherwise spend a system call (and the reader's
// wake-up) on every line.
const flushEvery = 50 * time.Millisecond

func newProgress(w io.Writer, tty, color bool, now time.Time) *progress {
	p := &progress{w: bufio.NewWriterSize(w, 64<<10), tty: tty, color: color, started: now, running: map[string]bool{}, quit: make(chan struct{})}
	go p.tick()
	return p
}

// tick writes out what is buffered every flushEvery and, on a terminal,
// redraws the summary line every second, so the elapsed time moves while
// tasks run without a word.
func (p *progress) tick() {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	redrawn := time.Now()
	for {
		select {
		case <-p.quit:
			return
		case now := <-t.C:
			p.mu.Lock()
			if p.tty && p.status && now.Sub(redrawn) >= time.Second {
				redrawn = now
				fmt.Fprint(p.w, "\r\033[K")
				p.status = false
				p.redraw()
			}
			_ = p.w.Flush()
			p.mu.Unlock()
		}
	}
}

// begin sets the plan's size and what a resumed plan has done already.
func (p *progress) begin(rec *orch.Record, states map[string]orch.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = len(rec.Plan.Nodes)
	for _, st := range states {
		if st.Status.Finished() && !orch.Stopped(st) {
			p.done++
			if st.Status == orch.StatusError {
				p.failed++
			}
		}
	}
}

func (p *progress) start(uid, verb string) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	_ = p.w.Flush() // a note is news: it does not wait
}

func (p *progress) task(id string, st orch.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	elapsed := time.Since(p.started).Seconds()
	line := fmt.Sprintf("%7.2fs  %-28s %s", elapsed, id, app.Paint(string(st.Status), p.color))
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
		line += fmt.Sprintf("  after %s: %s", app.Count(st.Attempts, "attempt"), app.Escape(oneLine(st.Err)))
	default:
		delete(p.running, id)
		p.done++
		if orch.MarkedNoop(st) {
			line += "  " + st.Reason // it did not run: no duration
			break
		}
		line += "  " + duration(st)
		if st.Attempts > 1 {
			line += " (" + app.Count(st.Attempts, "attempt") + ")"
		}
	}
	fmt.Fprintln(p.w, line)
	p.redraw()
}

// redraw puts the summary line back, on a terminal:
// "12/40 done, 3 running, 1 failed, 0:14".
func (p *progress) redraw() {
	if p.tty {
		el := time.Since(p.started).Truncate(time.Second)
		failed := fmt.Sprintf("%d failed", p.failed)
		if p.failed > 0 && p.color {
			failed = "\033[31m" + failed + "\033[0m"
		}
		fmt.Fprintf(p.w, "  %d/%d done, %d running, %s, %d:%02d", p.done, p.total, len(p.running), failed, int(el.Minutes()), int(el.Seconds())%60)
		p.status = true
	}
}

// output prints one line a task printed (-v), prefixed with the task.
func (p *progress) output(task string, l handler.Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, "%s | %s\n", task, app.Escape(l.Text))
	p.redraw()
}

func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	p.clear()
	_ = p.w.Flush()
}

func (p *progress) summary(rec *orch.Record, states map[string]orch.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "plan %s: %s in %.2fs\n", rec.UID, totals(states), time.Since(p.started).Seconds())
	_ = p.w.Flush()
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
