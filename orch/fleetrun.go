package orch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/tags"
)

// DefaultFleetLease is how long a runner's claims outlive its last
// heartbeat (solar runner --lease).
const DefaultFleetLease = 10 * time.Second

// fleetPoll is how often a runner looks for work and for stopped plans
// when no notification came: the most a claim or a stop waits.
const fleetPoll = 500 * time.Millisecond

// FleetRunner claims ready tasks of submitted plans from its store's fleet
// and runs them (solar runner; orch run-once and submit on PostgreSQL run
// one for their plan). See docs/architecture.md, "The fleet".
//
// Guarantees: a task runs only under a live claim of this runner (its
// completion is matched on the claim's fence and plan epoch: a runner
// fenced out writes nothing); a runner that cannot renew its claims before
// its local deadline (Lease minus a quarter, on its monotonic clock) kills
// what it runs and claims nothing until it can; a drain claims nothing new
// and waits for what runs; a kill gives what runs back to be claimed again
// (using one of its retries).
type FleetRunner struct {
	Store *store.Handle
	// Name names the runner in the fleet and in its attempts' records.
	Name        string
	Version     string
	Concurrency int // tasks it runs at once (at least 1)
	// Nodes, if set, is a tag expression over node resources: the runner
	// claims only tasks whose node matches, and tasks without a node
	// unless NoLocal.
	Nodes   string
	NoLocal bool
	Lease   time.Duration // zero: DefaultFleetLease
	// Plan, if set, limits the runner to that plan, and Run returns once
	// it is settled (finished or stopped).
	Plan string
	// Settings are what each plan's tasks run with: Shell, SSH,
	// AnsiblePlaybook, CacheDir, Actor, Host, Note, Output, Progress, Now.
	Settings Runner
	// Claimed, if set, is told of every claim as it is made.
	Claimed func(kv.Claim)
	// poll overrides fleetPoll (tests).
	poll time.Duration
}

// fleetPlan is what a runner keeps of one plan it runs tasks of: its
// prepared tasks, the ledger its commits go through, and the attempt
// runner, loaded once.
type fleetPlan struct {
	r     *Runner
	rec   *Record
	infos map[string]*taskInfo
	graph *fleetGraph
	led   *ledger
	att   *attemptRunner
}

// fleetTask is a claim this runner is running.
type fleetTask struct {
	c       kv.Claim
	plan    *fleetPlan
	cancel  context.CancelFunc
	claimed time.Time // on the monotonic clock
	mu      sync.Mutex
	why     string // why it was cancelled: "" (not), lost, killed, drain
	// ended is set once its run returned: a cancel then changes nothing
	// of what it did, and its outcome stands (but a kill's: its plan's
	// epoch moved, so only a give-back can end its claim).
	ended bool
}

func (t *fleetTask) stop(why string) {
	t.mu.Lock()
	if t.why == "" && (!t.ended || why == whyKilled) {
		t.why = why
	}
	t.mu.Unlock()
	t.cancel()
}

// end marks the task's run as returned.
func (t *fleetTask) end() {
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
}

func (t *fleetTask) reason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.why
}

// Reasons a runner cancels a task it runs.
const (
	whyLost   = "lost"   // its claim is gone (reaped, or the lease could not be renewed)
	whyKilled = "killed" // its plan was killed (its epoch moved)
	whyDrain  = "drain"  // the runner was killed while draining
)

// fleetDone is a task that ended on this runner.
type fleetDone struct {
	t       *fleetTask
	outcome walk.Outcome
	start   time.Time
}

// fleetRun is one FleetRunner.Run under way.
type fleetRun struct {
	f     *FleetRunner
	owner string // this instance, its claims' owner (kv.FleetRunner.Instance)
	db    *store.DB
	fleet kv.Fleet
	lease time.Duration

	mu      sync.Mutex
	plans   map[string]*fleetPlan
	loading map[string]chan struct{} // plans being loaded: closed when done
	running map[string]*fleetTask    // by uid + "\x00" + task
	// suspended is set while the runner's leases could not be renewed:
	// it claims nothing.
	suspended bool
	// strays are the fences of claims the last heartbeat found held by
	// this runner but not run by it (findStrays).
	strays map[int64]bool

	done chan fleetDone
	wake chan struct{}
	// nodes are the node names its Nodes expression matches, read again
	// every nodesEvery; nil when it has none.
	nodes     []string
	nodesRead time.Time
	// unrecorded are ended tasks whose record failed, and lastRecord when
	// a record was last tried (retryRecord); the loop's goroutine only.
	unrecorded []fleetDone
	lastRecord time.Time
}

const nodesEvery = 5 * time.Second

// claimWait bounds one claim's transaction.
const claimWait = 5 * time.Second

// Run runs the fleet's tasks until ctx ends (a kill: what runs is killed
// and given back) or drain is closed (nothing new is claimed; it returns
// once what runs has ended), or, with Plan set, until that plan is
// settled.
func (f *FleetRunner) Run(ctx context.Context, drain <-chan struct{}) error {
	db, err := f.Store.Open(store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	fleet, ok := db.Fleet()
	if !ok {
		return ErrNoFleet
	}
	f.Settings.defaults()
	fr := &fleetRun{f: f, db: db, fleet: fleet, lease: f.Lease, plans: map[string]*fleetPlan{}, loading: map[string]chan struct{}{}, running: map[string]*fleetTask{},
		done: make(chan fleetDone, 64), wake: make(chan struct{}, 1)}
	// Claims are this process's, not its name's: a runner restarted
	// under its name never renews what the one before held.
	fr.owner = f.Name + instanceSep + newToken()[:6]
	if fr.lease <= 0 {
		fr.lease = DefaultFleetLease
	}
	if f.Concurrency < 1 {
		f.Concurrency = 1
	}
	reg := kv.FleetRunner{Name: f.Name, Instance: fr.owner, Host: f.Settings.runHost(), PID: os.Getpid(), Version: f.Version, Concurrency: f.Concurrency, Nodes: f.Nodes}
	if err := fleet.Register(context.Background(), reg); err != nil {
		return err
	}
	defer func() { _ = fleet.Unregister(context.Background(), fr.owner) }()
	defer fr.close()
	beatCtx, stopBeat := context.WithCancel(context.Background())
	defer stopBeat()
	go fr.heartbeat(beatCtx)
	go fr.listen(beatCtx)
	return fr.loop(ctx, drain)
}

// loop claims, starts and completes tasks until the run ends.
func (fr *fleetRun) loop(ctx context.Context, drain <-chan struct{}) error {
	poll := fr.f.poll
	if poll == 0 {
		poll = fleetPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	reapEvery := max(fr.lease/4, poll)
	lastReap := time.Time{}
	draining := false
	claimErr := "" // the last claim's failure, told once
	for {
		if ctx.Err() != nil {
			return fr.killAll()
		}
		fr.retryRecord()
		if time.Since(lastReap) >= reapEvery {
			lastReap = time.Now()
			if err := fr.reap(); err != nil {
				fr.note("reaping expired claims: %v", err)
			}
		}
		claimed := 0
		if !draining {
			n, err := fr.claim()
			switch {
			case err != nil && err.Error() != claimErr:
				// Once per kind of failure, not every poll of an outage.
				fr.note("claiming: %v", err)
				claimErr = err.Error()
			case err == nil && claimErr != "":
				fr.note("claiming again")
				claimErr = ""
			}
			claimed = n
		}
		if fr.count() == 0 {
			if draining {
				return nil
			}
			if fr.f.Plan != "" && claimed == 0 {
				settled, err := fr.settlePlan(fr.f.Plan)
				if err != nil {
					return err
				}
				if settled {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-drain:
			if !draining {
				draining = true
				fr.note("draining: claiming nothing new, waiting for %d running tasks", fr.count())
			}
			drain = nil
		case d := <-fr.done:
			fr.completeBatch(d)
		case <-fr.wake:
		case <-tick.C:
		}
	}
}

// count is how many tasks this runner runs now.
func (fr *fleetRun) count() int {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return len(fr.running)
}

func (fr *fleetRun) note(format string, args ...any) {
	if fr.f.Settings.Note != nil {
		fr.f.Settings.Note(fmt.Sprintf(format, args...))
	}
}

// poke wakes the loop (a notification, a finished task).
func (fr *fleetRun) poke() {
	select {
	case fr.wake <- struct{}{}:
	default:
	}
}

// listen pokes the loop on every notification of the fleet's topic.
func (fr *fleetRun) listen(ctx context.Context) {
	ch, ok, err := fr.db.Listen(ctx, fleetTopic)
	if err != nil || !ok {
		return
	}
	for range ch {
		fr.poke()
	}
}

// claim claims what the runner has room for and starts it; it returns how
// many it claimed.
func (fr *fleetRun) claim() (int, error) {
	fr.mu.Lock()
	free, suspended := fr.f.Concurrency-len(fr.running), fr.suspended
	fr.mu.Unlock()
	if free <= 0 || suspended {
		return 0, nil
	}
	filter := kv.ClaimFilter{Runner: fr.owner, Max: free, TTL: fr.lease, Plan: fr.f.Plan, NoLocal: fr.f.NoLocal}
	if fr.f.Nodes != "" {
		nodes, err := fr.matchNodes()
		if err != nil {
			return 0, err
		}
		filter.Nodes = nodes
	}
	now := fr.f.Settings.Now()
	// A database that does not answer must not hold the loop (drain,
	// kill, the ends of running tasks) for long.
	ctx, cancel := context.WithTimeout(context.Background(), claimWait)
	defer cancel()
	claims, err := fr.fleet.Claim(ctx, filter, func(c kv.Claim) (string, string, []byte) {
		raw, err := encodeState(State{Status: StatusInProgress, Start: now})
		if err != nil {
			return "", "", nil
		}
		return store.Plans, taskKey(c.UID, c.Task), raw
	})
	if err != nil {
		return 0, err
	}
	for _, c := range claims {
		fr.start(c)
	}
	return len(claims), nil
}

// matchNodes returns the nodes the runner's expression matches, read
// again every nodesEvery.
func (fr *fleetRun) matchNodes() ([]string, error) {
	if fr.nodes != nil && time.Since(fr.nodesRead) < nodesEvery {
		return fr.nodes, nil
	}
	expr, err := tags.ParseExpr(fr.f.Nodes)
	if err != nil {
		return nil, err
	}
	out := []string{}
	err = fr.db.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		list, err := nodes.List(cat)
		if err != nil {
			return err
		}
		for _, n := range list {
			if res, err := cat.Get(n.Name); err == nil && expr.Match(res.Tags) {
				out = append(out, n.Name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fr.nodes, fr.nodesRead = out, time.Now()
	return out, nil
}

// start runs claim c on a goroutine of its own; its end reaches the loop
// through done.
func (fr *fleetRun) start(c kv.Claim) {
	if fr.f.Claimed != nil {
		fr.f.Claimed(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &fleetTask{c: c, cancel: cancel, claimed: time.Now()}
	fr.mu.Lock()
	fr.running[c.UID+"\x00"+c.Task] = t
	fr.mu.Unlock()
	go func() {
		began := fr.f.Settings.Now()
		fp, err := fr.plan(c.UID)
		var o walk.Outcome
		if err != nil {
			o = walk.Outcome{Err: fmt.Errorf("load plan %s: %w", c.UID, err), Attempts: 1}
		} else {
			t.plan = fp
			o = fp.run(ctx, fr.db, c)
		}
		t.end()
		fr.done <- fleetDone{t: t, outcome: o, start: began}
	}()
}

// plan returns the runner's copy of plan uid, loading it once: the tasks
// of a claim batch start together, and each loading the plan on its own
// would read every resource of it as many times.
func (fr *fleetRun) plan(uid string) (*fleetPlan, error) {
	for {
		fr.mu.Lock()
		if fp := fr.plans[uid]; fp != nil {
			fr.mu.Unlock()
			return fp, nil
		}
		if fr.loading == nil {
			fr.loading = map[string]chan struct{}{}
		}
		wait, busy := fr.loading[uid]
		if busy {
			fr.mu.Unlock()
			<-wait // then look again: a failed load is tried again
			continue
		}
		done := make(chan struct{})
		fr.loading[uid] = done
		fr.mu.Unlock()
		fp, err := loadPlan(fr.db, uid, fr.f)
		fr.mu.Lock()
		delete(fr.loading, uid)
		if err == nil {
			fr.plans[uid] = fp
		}
		fr.mu.Unlock()
		close(done)
		return fp, err
	}
}

// loadPlan is loadFleetPlan; tests count its calls.
var loadPlan = loadFleetPlan

// loadFleetPlan reads plan uid and prepares its tasks, as a run does.
func loadFleetPlan(db *store.DB, uid string, f *FleetRunner) (*fleetPlan, error) {
	r := f.Settings
	r.UID = uid
	r.transports, r.local = nil, nil
	fp := &fleetPlan{r: &r}
	err := db.View(func(tx *store.Tx) error {
		var err error
		if fp.rec, err = Load(tx, uid); err != nil {
			return err
		}
		if fp.infos, err = fp.r.prepare(tx, fp.rec); err != nil {
			return err
		}
		fp.graph = planGraph(fp.rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	led := newLedger(nil, uid, fp.infos, fp.r.Now, nil, true)
	led.actor, led.host = fp.r.Actor, fp.r.runHost()
	fp.led = led
	fp.att = &attemptRunner{r: fp.r, uid: uid, infos: fp.infos, led: led, locks: noLimits{}, runID: newToken()[:8], runner: f.Name}
	fp.att.rates, _ = db.Rates()
	return fp, nil
}

// close ends what the plan's runs opened on this machine.
func (fp *fleetPlan) close() {
	fp.r.settle()
	fp.r.closeTransports()
}

// run runs claim c's task: the attempts its claim has left, numbered
// after the attempts before it, with the outputs earlier tasks sent.
func (fp *fleetPlan) run(ctx context.Context, db *store.DB, c kv.Claim) walk.Outcome {
	info := fp.infos[c.Task]
	t := fp.graph.tasks[c.Task]
	if info == nil || t == nil {
		return walk.Outcome{Err: fmt.Errorf("plan %s has no task %s", c.UID, c.Task), Attempts: 1}
	}
	if info.pin != nil && len(info.pin.Later) > 0 {
		if err := fp.refreshSent(db, c.Task); err != nil {
			return walk.Outcome{Err: err, Attempts: 1}
		}
	}
	// Each claim before this one that did not end the task used a retry.
	retry := max(info.retry-(c.Claims-1), 0)
	bare := walk.Task{ID: t.ID}
	return fp.att.runTries(ctx, &bare, retry, c.Attempts, c.Fence)
}

// refreshSent reads the values earlier tasks of the plan sent to task
// id's inputs, wherever they ran (resumedOutputs).
func (fp *fleetPlan) refreshSent(db *store.DB, id string) error {
	return db.View(func(tx *store.Tx) error {
		states := map[string]State{}
		info := fp.infos[id]
		for _, from := range info.pin.Later {
			st, err := TaskState(tx, fp.rec.UID, from)
			if err != nil {
				return err
			}
			states[from] = st
		}
		sent, err := resumedOutputs(tx, states, map[string]*taskInfo{id: info})
		if err != nil {
			return err
		}
		for src, v := range sent {
			fp.led.mu.Lock()
			if fp.led.sent == nil {
				fp.led.sent = map[string]any{}
			}
			fp.led.sent[src] = v
			fp.led.mu.Unlock()
		}
		return nil
	})
}

// noLimits is the lock taker of a fleet's attempts: the claim reserved
// their slots, the resource's among them, store-wide.
type noLimits struct{}

func (noLimits) lock(context.Context, string, []walk.Limit) (func() error, error) {
	return func() error { return nil }, nil
}
func (noLimits) close() {}

// close ends what the runner's plans opened.
func (fr *fleetRun) close() {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	for uid, fp := range fr.plans {
		fp.close()
		delete(fr.plans, uid)
	}
}

// instanceSep joins a runner's name and its instance's token in the owner
// of its claims.
const instanceSep = "#"

// runnerOf is the runner's name in the owner of a claim.
func runnerOf(owner string) string {
	if i := strings.LastIndex(owner, instanceSep); i > 0 {
		return owner[:i]
	}
	return owner
}
