package orch

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/solarops/solar/orch/handler"
	sshx "github.com/solarops/solar/orch/handler/ssh"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// ErrRunning means another live process is running the plan.
var ErrRunning = errors.New("plan is already being run")

// Runner runs one stored plan: "orch run-once", "resume", "retry",
// "restart" all end here.
//
// Guarantees, on top of the Walker's:
//   - A task's final state, the commit of its staged entry, the outputs it
//     sent and the refreshes it left are written in one transaction, before
//     any task that depends on it starts. Tasks whose handler changes
//     nothing (noop) are the exception: their states are written in batches,
//     since running one again after a crash is harmless.
//   - Only one live process runs a plan at a time.
//   - The store is open only while the run writes or reads it, so other
//     solar commands can use it between tasks; "orch stop" from another
//     terminal or machine is seen at once on a store that notifies
//     (control.listen), else at the next write or idle look.
type Runner struct {
	Store       *store.Handle // the store the plan lives in
	UID         string        // a resolved plan uid
	Concurrency int
	PerNode     int
	Shell       *handler.Shell
	// SSH tunes the connections to nodes with transport ssh.
	SSH sshx.Config
	// AnsiblePlaybook is the ansible-playbook program for bases with
	// handler ansible; "" finds it on PATH.
	AnsiblePlaybook string
	// Progress, if set, is told of every task transition, from one
	// goroutine at a time.
	Progress func(id string, st State)
	Now      func() time.Time
	// Idle is how often the runner, between writes, looks for another
	// process waiting for the store, to let it in (default 20ms).
	Idle time.Duration
	// Prepare, if set, is called in the transaction that claims the plan,
	// with the task states as stored, and returns the states the run
	// starts from: a command's own preparation (tasks set back to PENDING,
	// a check that the plan is still what was reviewed), done where the
	// plan is loaded once. Its error ends Run before any task, with nothing
	// written. It may be called again if the transaction is retried.
	Prepare func(tx *store.Tx, rec *Record, states map[string]State) (map[string]State, error)
	// Started, if set, is called once the plan is claimed, before any task,
	// with the states the run starts from.
	Started func(rec *Record, states map[string]State)
	// Note, if set, is told of what the runner did besides running tasks
	// (processes left by a run that died, killed before their task runs
	// again; a failed attempt that will be retried).
	Note func(msg string)
	// Output, if set, is told of every line a task's script prints, as it
	// prints it (masked with the sensitive inputs), from the tasks'
	// goroutines, one line at a time per task.
	Output func(task string, l handler.Line)
	// LeaseTTL is how long the run's leases on a shared store (its plan,
	// its tasks' resources and slots) outlive their last renewal; zero is
	// store.DefaultLeaseTTL. See claim.go.
	LeaseTTL time.Duration
	// CacheDir is this machine's base cache, where the run writes each
	// base its tasks need from the store, once per digest, and runs it
	// from (bases.Materialize); "" is bases.CacheDir of the environment.
	CacheDir string
	// Actor and Host say who runs the plan (actor.Of, actor.Host): each
	// attempt's record keeps them (attemptlog.go), and the history entries
	// the run commits carry them as ran_by and ran_on; "" Host is this
	// machine's name.
	Actor, Host string
	// StopRequested, if set, is called once when the run finds a stop
	// request for its plan in the store ("orch stop", from any machine),
	// from whichever goroutine found it.
	StopRequested func()

	// pins, if set, are the pins prepare gives the tasks instead of the
	// stored plan's (drift: each resource's committed values).
	pins       map[string]*Pin
	transports []*sshx.Transport // the run's SSH connections, if any node needs them (wireTransports)
	local      *handler.Local    // the run's attempts on this machine (wireTransports)
}

// taskInfo is what the runner knows about one task before the walk.
type taskInfo struct {
	node      *planner.Node // the plan's own, not a copy
	handler   handler.Handler
	noop      bool
	checks    bool // the script supports check mode
	baseDir   string
	script    string
	retry     int
	delay     time.Duration
	timeout   time.Duration
	sensitive map[string]bool
	inputDefs map[string]*resources.InputDef
	location  string
	semaList  []string
	rates     []taskRate // the rates its attempts take from (rates.go)
	// inputs are the task's pinned inputs, or (in a plan made before pins)
	// its resource's effective inputs when the run started; the ledger
	// adds the outputs the run sends (ledger.inputs). nil for a noop task.
	inputs   map[string]any
	problem  string         // why the task cannot run at all
	reactOut []planner.Edge // the plan's own react edges from the task, copied
	// pin is what the plan fixed for the task; nil in a plan made before
	// pins were recorded.
	pin *Pin
	// res is the task's resource as prepare decoded it, and resSum the
	// digest of its record then; nil for noop tasks (see keepResource).
	res    *resources.Resource
	resSum uint64
	// batch is the group of tasks the task may run in a batch with
	// (batch.go); nil for a task that always runs alone.
	batch *batchGroup
}

// Run runs the plan until every task is finished, stop is closed (soft:
// running tasks finish, the rest are SKIPPED "stopped") or ctx is cancelled
// (hard: running tasks are killed). It returns the plan's record and the
// final states. The record's plan comes back without its edges: once the
// walk has its own, they are dropped (a fifth of the heap at 100,000
// tasks); Load reads them again.
func (r *Runner) Run(ctx context.Context, stop <-chan struct{}) (*Record, map[string]State, error) {
	sdb, done := r.openStore()
	defer done()
	// The attempts' private dirs are removed behind them: gone when Run returns.
	defer r.settle()
	token := newToken()
	locks, err := r.Store.OpenLocks(store.LockOptions{TTL: r.LeaseTTL, Reserve: r.leaseReserve()})
	if err != nil {
		return nil, nil, err
	}
	defer locks.Close()
	// The plan's claim: on a shared store a lease that says, to every
	// machine, that this process runs it, for as long as it renews it.
	unlock, err := r.takePlan(ctx, stop, sdb, locks)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = unlock() }()

	start, err := r.claimPlan(sdb, token, locks.Leased())
	if err != nil {
		// Nothing runs (the plan may be finished already: a runner was
		// killed after its last task), but what dead runners left in
		// their private directories, secrets and scripts, goes all the
		// same. Their records in the store wait for a run that claims.
		_ = r.sweep()
		return nil, nil, err
	}
	r.fenceWrites(sdb, token)
	if err := r.clearLeftovers(sdb, start.leftover); err != nil {
		return nil, nil, err
	}
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	resLocks := newResLocker(locks)
	defer resLocks.close()
	ex := r.newExecution(sdb, start, stop, kill, resLocks)
	ex.att.rates, _ = locks.(kv.Rates)
	ex.att.stopped = ex.ctl.stopped
	watching := make(chan struct{})
	defer close(watching)
	go ex.watchLease(locks, watching)
	ex.start(start.initial)
	states, walkErr := ex.walk(ctx, start)
	return ex.finish(states, walkErr)
}

// planStart is what the transaction that claims a plan reads: all a run
// starts from.
type planStart struct {
	rec      *Record
	initial  map[string]State       // the task states the walk starts from
	infos    map[string]*taskInfo   // by task id
	leftover map[string]procsRecord // attempts of dead runners (orphanProcs)
	hasProcs bool                   // the store holds records of the plan's attempts
	edits    uint64                 // the plan's edit count (edit.go)
	sent     map[string]any         // outputs earlier runs of the plan sent (resumedOutputs)
	bases    map[string]int         // by task id: the number of its latest attempt in earlier runs (attemptBases)
}

// claimPlan claims the plan for this process and reads what its run
// starts from, in one transaction, and clears a stop request left from an
// earlier run. locked means this process holds the plan's store lock.
func (r *Runner) claimPlan(sdb *sharedDB, token string, locked bool) (*planStart, error) {
	var start *planStart
	err := sdb.Update(func(tx *store.Tx) error {
		start = &planStart{}
		var err error
		if start.rec, err = Load(tx, r.UID); err != nil {
			return err
		}
		if err := claim(tx, r.UID, r.Now(), token, locked); err != nil {
			return err
		}
		if err := tx.Delete(store.Plans, stopKey(r.UID)); err != nil {
			return err
		}
		// What a dead runner's tasks waited for (rates.go) waits no more.
		if err := tx.DeletePrefix(store.Plans, rateWaitPrefix(r.UID)); err != nil {
			return err
		}
		return r.loadPlan(tx, start)
	})
	return start, err
}

// loadPlan reads, in the transaction that claims the plan start.rec, the
// rest of what the run starts from: the task states (as Runner.Prepare
// makes them), the attempts dead runners left, and every task's
// preparation.
func (r *Runner) loadPlan(tx *store.Tx, start *planStart) error {
	var err error
	if start.initial, err = States(tx, start.rec); err != nil {
		return err
	}
	// Before Prepare resets them: a task a dead runner left INPROGRESS
	// counts its unended attempt.
	if start.bases, err = attemptBases(tx, r.UID, start.initial); err != nil {
		return err
	}
	if r.Prepare != nil {
		if start.initial, err = r.Prepare(tx, start.rec, start.initial); err != nil {
			return err
		}
	}
	if start.leftover, err = orphanProcs(tx); err != nil {
		return err
	}
	if start.hasProcs, err = hasProcs(tx, r.UID); err != nil {
		return err
	}
	start.edits = editCount(tx, r.UID)
	if start.infos, err = r.prepare(tx, start.rec); err != nil {
		return err
	}
	start.sent, err = resumedOutputs(tx, start.initial, start.infos)
	return err
}

// fenceWrites makes every write of the run check first that it still
// holds its claim (fence).
func (r *Runner) fenceWrites(sdb *sharedDB, token string) {
	sdb.fence = func(tx *store.Tx) error {
		// The records every write of the run reads: its claim (fence),
		// a stop request (checkStop) and the edit count (lookForEdits).
		if err := tx.Prefetch(store.Key{Bucket: store.Plans, Key: runnerKey(r.UID)}, store.Key{Bucket: store.Plans, Key: stopKey(r.UID)},
			store.Key{Bucket: store.Plans, Key: editKey(r.UID)}); err != nil {
			return err
		}
		return fence(tx, r.UID, token)
	}
}

// clearLeftovers removes what a run that died left behind, before anything
// starts: its scripts (which must never run beside their resumed copies)
// and its private files (which hold secrets). If it cannot, the run
// releases the plan it claimed and ends.
func (r *Runner) clearLeftovers(sdb *sharedDB, leftover map[string]procsRecord) error {
	err := r.killOrphans(sdb, leftover)
	if err == nil {
		err = r.sweep()
	}
	if err != nil {
		_ = sdb.Update(func(tx *store.Tx) error { return tx.Delete(store.Plans, runnerKey(r.UID)) })
	}
	return err
}

// newExecution wires the parts of a run of start's plan: its control
// (stop, the caller's stop channel, and kill, which cancels the context
// its tasks run with), its ledger, and its attempt runner, which takes
// resource locks and slots from locks.
func (r *Runner) newExecution(sdb *sharedDB, start *planStart, stop <-chan struct{}, kill context.CancelFunc, locks resLocker) *execution {
	ctl := newControl(sdb, start.rec, r.Note, stop, kill, start.edits)
	ctl.onRequest = r.StopRequested
	led := newLedger(sdb, r.UID, start.infos, r.Now, ctl, start.hasProcs)
	led.sent = start.sent
	led.actor, led.host = r.Actor, r.runHost()
	att := &attemptRunner{r: r, sdb: sdb, uid: r.UID, infos: start.infos, led: led, locks: locks, bases: start.bases, runID: newToken()[:8]}
	return &execution{r: r, sdb: sdb, rec: start.rec, ctl: ctl, led: led, att: att}
}

// start sets the run going beside the walk: the store's idle writes, the
// stop watcher and the stream of running attempts' lines; then it tells
// Runner.Started.
func (ex *execution) start(initial map[string]State) {
	_, ex.ctl.opens, _ = ex.sdb.acquireCounted()
	ex.sdb.release()
	// The idle timer armed by the first transaction may fire at any time.
	ex.sdb.mu.Lock()
	ex.sdb.beforeClose = ex.led.flushOnClose
	ex.sdb.mu.Unlock()
	ex.ctl.listen()
	go ex.ctl.watchStop()
	streamDone, streamStopped := make(chan struct{}), make(chan struct{})
	go ex.att.streamLogs(streamDone, streamStopped)
	ex.stopLogs = func() {
		close(streamDone)
		<-streamStopped
	}
	if ex.r.Started != nil {
		ex.r.Started(ex.rec, initial)
	}
}

// walk runs the plan's tasks from start's states until all are finished
// or the run stops, and returns the walker's states.
func (ex *execution) walk(ctx context.Context, start *planStart) (map[string]State, error) {
	r := ex.r
	tasks, err := walkTasks(ex.rec, start.infos, r.PerNode)
	lastLoaded.forget(ex.rec)
	ex.rec.Plan.Edges = nil
	if err != nil { // a bad sema entry fails the run where the walker refused it before
		return nil, err
	}
	w := &walk.Walker{Concurrency: r.Concurrency, Run: ex.att.run, RunBatch: ex.att.runBatch, Persist: ex.led.persist, PersistBatch: ex.led.persistBatch,
		Begin: ex.led.begin, Sync: ex.led.syncLast, Progress: r.Progress, Now: r.Now}
	return w.Walk(ctx, tasks, start.initial, ex.ctl.stopped)
}

// finish ends the run once its walk has, with states and walkErr: what
// runs beside the walk stops, what is buffered is written, and the plan
// is released (closed if nothing is left to do). It returns Run's results.
func (ex *execution) finish(states map[string]State, walkErr error) (*Record, map[string]State, error) {
	ex.ctl.end()
	ex.stopLogs()
	if err := ex.led.waitBehind(); err != nil && walkErr == nil {
		walkErr = err
	}
	err := ex.sdb.Update(func(tx *store.Tx) error { return ex.release(tx, states, walkErr) })
	if lost := ex.lostLease(); lost != nil {
		return ex.rec, states, lost
	}
	if walkErr != nil {
		return ex.rec, states, walkErr
	}
	return ex.rec, states, err
}

// release writes what is buffered, releases the plan, and closes it if
// nothing is left to do, in tx.
func (ex *execution) release(tx *store.Tx, states map[string]State, walkErr error) error {
	uid := ex.r.UID
	if err := ex.led.drain(tx); err != nil {
		return err
	}
	if err := tx.Delete(store.Plans, runnerKey(uid)); err != nil {
		return err
	}
	if err := tx.Delete(store.Plans, stopKey(uid)); err != nil {
		return err
	}
	if states == nil {
		return nil
	}
	final, err := ex.ctl.finalStates(tx, states, walkErr)
	if err != nil {
		return err
	}
	return SetOpen(tx, uid, !Done(final))
}

// openStore sets defaults and returns the run's store; done closes it and
// the SSH connections the run opened.
func (r *Runner) openStore() (sdb *sharedDB, done func()) {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Idle == 0 {
		r.Idle = 20 * time.Millisecond
	}
	sdb = &sharedDB{store: r.Store, lockWait: 10 * time.Minute, idle: r.Idle, yield: 200 * time.Millisecond}
	return sdb, func() {
		sdb.Close()
		for _, tr := range r.transports {
			tr.Close()
		}
		r.transports = nil
	}
}

// Done reports whether a plan has nothing left to do: every task finished,
// and none only because the run was stopped (resume runs those).
func Done(states map[string]State) bool {
	for _, st := range states {
		if !st.Status.Finished() || Stopped(st) {
			return false
		}
	}
	return true
}

// Stopped reports whether a task did not finish because its run was
// stopped: skipped before it started, or killed while it ran (Ctrl-C
// twice). Resume runs such tasks again.
func Stopped(st State) bool {
	return st.Status == StatusSkipped && st.Reason == ReasonStopped || st.Status == StatusError && st.Err == killed
}

// killed is the error of a task whose run was killed while it ran.
const killed = "killed"

// execution is one Run under way: its plan, and the parts that run it,
// each with one job, wired by newExecution. It is what Run's later steps
// (start, walk, finish) and the lease watcher (claim.go) work on.
type execution struct {
	r   *Runner
	sdb *sharedDB
	rec *Record

	ctl *control       // stop requests and live edits
	led *ledger        // the run's writes and the commits of finished tasks
	att *attemptRunner // the tasks' attempts

	stopLogs  func()                // ends the stream of running attempts' lines (start)
	leaseLost atomic.Pointer[error] // why the run lost its leases (claim.go)
}
