package orch

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch/handler"
	sshx "github.com/solarops/solar/orch/handler/ssh"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// ErrRunning means another live process is running the plan.
var ErrRunning = errors.New("plan is already being run")

func stopKey(uid string) string { return "stop/" + uid }

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
//     terminal is seen at the next write.
type Runner struct {
	Path        string // the store file
	UID         string // a resolved plan uid
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

	transport *sshx.Transport // the run's SSH connections, if any node needs them
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
	// inputs are the resource's effective inputs when the run started;
	// the runner keeps them current as outputs flow (execution.effective).
	// nil for a noop task.
	inputs   map[string]any
	problem  string         // why the task cannot run at all
	reactOut []planner.Edge // the plan's own react edges from the task, copied
	// res is the task's resource as prepare decoded it, and resSum the
	// digest of its record then; nil for noop tasks (see keepResource).
	res    *resources.Resource
	resSum uint64
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
	defer handler.Settle()
	token := newToken()
	locks, err := store.OpenLocks(r.Path, store.LockOptions{TTL: r.LeaseTTL, Reserve: r.leaseReserve()})
	if err != nil {
		return nil, nil, err
	}
	if locks != nil {
		// A shared store: the plan's lease says, to every machine, that
		// this process runs it, for as long as it renews it.
		defer locks.Close()
		unlock, err := r.takePlan(ctx, stop, sdb, locks)
		if err != nil {
			return nil, nil, err
		}
		defer func() { _ = unlock() }()
	}

	var (
		rec      *Record
		initial  map[string]State
		infos    map[string]*taskInfo
		leftover map[string]groupRecord
		grouped  bool
		edits    uint64
	)
	err = sdb.Update(func(tx *store.Tx) error {
		var err error
		if rec, err = Load(tx, r.UID); err != nil {
			return err
		}
		if err := claim(tx, r.UID, r.Now(), token, locks != nil); err != nil {
			return err
		}
		if err := tx.Delete(store.Plans, stopKey(r.UID)); err != nil {
			return err
		}
		if initial, err = States(tx, rec); err != nil {
			return err
		}
		if r.Prepare != nil {
			if initial, err = r.Prepare(tx, rec, initial); err != nil {
				return err
			}
		}
		if leftover, err = orphanGroups(tx); err != nil {
			return err
		}
		if grouped, err = hasGroups(tx, r.UID); err != nil {
			return err
		}
		edits = editCount(tx, r.UID)
		infos, err = r.prepare(tx, rec)
		return err
	})
	if err != nil {
		// Nothing runs (the plan may be finished already: a runner was
		// killed after its last task), but what dead runners left in
		// their private directories, secrets and scripts, goes all the
		// same. Their records in the store wait for a run that claims.
		_ = r.sweep()
		return nil, nil, err
	}
	// What a run that died left behind goes before anything starts: its
	// scripts (which must never run beside their resumed copies) and its
	// private files (which hold secrets).
	sdb.fence = func(tx *store.Tx) error {
		// The records every write of the run reads: its claim (fence),
		// a stop request (checkStop) and the edit count (lookForEdits).
		if err := tx.Prefetch(store.Key{Bucket: store.Plans, Key: runnerKey(r.UID)}, store.Key{Bucket: store.Plans, Key: stopKey(r.UID)},
			store.Key{Bucket: store.Plans, Key: editKey(r.UID)}); err != nil {
			return err
		}
		return fence(tx, r.UID, token)
	}
	if err := r.killOrphans(sdb, leftover); err != nil {
		_ = sdb.Update(func(tx *store.Tx) error { return tx.Delete(store.Plans, runnerKey(r.UID)) })
		return nil, nil, err
	}
	if err := r.sweep(); err != nil {
		_ = sdb.Update(func(tx *store.Tx) error { return tx.Delete(store.Plans, runnerKey(r.UID)) })
		return nil, nil, err
	}
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	ex := &execution{r: r, sdb: sdb, rec: rec, infos: infos, outputs: map[string]map[string]any{}, ran: map[string]map[string]any{}, kill: kill,
		effective: map[string]map[string]any{}, userStop: stop, stopped: make(chan struct{}),
		edits: edits, external: map[string]string{}, locks: newResLocker(r.Path, locks), planGroups: grouped}
	defer ex.locks.close()
	if locks != nil {
		watching := make(chan struct{})
		defer close(watching)
		go ex.watchLease(locks, watching)
	}
	_, ex.opens, _ = sdb.acquireCounted()
	sdb.release()
	for _, info := range infos {
		if info.inputs != nil {
			ex.effective[info.node.Resource] = info.inputs
		}
	}
	// The idle timer armed by the first transaction may fire at any time.
	sdb.mu.Lock()
	sdb.beforeClose = ex.flushOnClose
	sdb.mu.Unlock()
	go ex.watchStop()
	streamDone := make(chan struct{})
	streamStopped := make(chan struct{})
	go ex.streamLogs(streamDone, streamStopped)
	if r.Started != nil {
		r.Started(rec, initial)
	}

	tasks := walkTasks(rec, infos)
	lastLoaded.forget(rec)
	rec.Plan.Edges = nil
	w := &Walker{Concurrency: r.Concurrency, PerNode: r.PerNode, Run: ex.run, Persist: ex.persist, PersistBatch: ex.persistBatch,
		Begin: ex.begin, Sync: ex.syncLast, Progress: r.Progress, Now: r.Now}
	states, walkErr := w.Walk(ctx, tasks, initial, ex.stopped)
	ex.closeStop()
	close(streamDone)
	<-streamStopped
	if err := ex.waitBehind(); err != nil && walkErr == nil {
		walkErr = err
	}
	// Finish: write what is buffered, release the plan, close it if done.
	err = sdb.Update(func(tx *store.Tx) error {
		if err := ex.drain(tx); err != nil {
			return err
		}
		if err := tx.Delete(store.Plans, runnerKey(r.UID)); err != nil {
			return err
		}
		if err := tx.Delete(store.Plans, stopKey(r.UID)); err != nil {
			return err
		}
		if states == nil {
			return nil
		}
		final, err := ex.finalStates(tx, states, walkErr)
		if err != nil {
			return err
		}
		return SetOpen(tx, r.UID, !Done(final))
	})
	if lost := ex.lostLease(); lost != nil {
		return rec, states, lost
	}
	if walkErr != nil {
		return rec, states, walkErr
	}
	return rec, states, err
}

// finalStates returns the task states as stored once the walk has ended
// with states (its view) and walkErr. The store, not the walker's view,
// decides: a task another command skipped stays skipped with its reason.
// When the walk ended well and no command has skipped tasks since the
// runner last looked, the store holds the walker's states and the skips it
// saw, and is not read back (a third of a second at 100,000 tasks).
func (ex *execution) finalStates(tx *store.Tx, states map[string]State, walkErr error) (map[string]State, error) {
	if walkErr != nil || editCount(tx, ex.rec.UID) != ex.edits {
		return States(tx, ex.rec)
	}
	if len(ex.external) == 0 {
		return states, nil
	}
	final := maps.Clone(states)
	for id, reason := range ex.external {
		final[id] = State{Status: StatusSkipped, Reason: reason}
	}
	return final, nil
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
	sdb = &sharedDB{path: r.Path, lockWait: 10 * time.Minute, idle: r.Idle, yield: 200 * time.Millisecond}
	return sdb, func() {
		sdb.Close()
		if r.transport != nil {
			r.transport.Close()
			r.transport = nil
		}
	}
}

// walkTasks turns a plan's nodes into the walker's tasks.
func walkTasks(rec *Record, infos map[string]*taskInfo) []Task {
	tasks := make([]Task, 0, len(rec.Plan.Nodes))
	// Every task's incoming edges share one array, cut to size, rather
	// than lists grown one edge at a time.
	counts := make(map[string]int, len(rec.Plan.Nodes))
	for _, e := range rec.Plan.Edges {
		counts[e.To]++
	}
	all := make([]InEdge, len(rec.Plan.Edges))
	in := make(map[string][]InEdge, len(counts))
	for id, k := range counts {
		in[id], all = all[:0:k], all[k:]
	}
	for _, e := range rec.Plan.Edges {
		in[e.To] = append(in[e.To], InEdge{From: e.From, React: e.Kind == planner.EdgeReact, Event: e.Event})
	}
	for _, n := range rec.Plan.Nodes {
		info := infos[n.ID]
		// Two actions of one resource never overlap: a resource is one
		// thing on one machine, and its scripts assume they run alone.
		sema := []string{"resource/" + n.Resource + ":1"}
		if info.problem == "" {
			sema = append(sema, info.semaList...)
		}
		var earlier []string
		for i := 0; i < n.Instance; i++ {
			earlier = append(earlier, fmt.Sprintf("%s.%s#%d", n.Resource, n.Action, i))
		}
		tasks = append(tasks, Task{ID: n.ID, Node: info.location, Sema: sema, Weight: n.Weight, Reactive: !n.Staged, In: in[n.ID], Earlier: earlier,
			Inline: info.noop || info.problem != ""})
	}
	return tasks
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

// prepareChunk is how many tasks share one catalog while the runner
// prepares: a catalog keeps every resource it decoded, base and all, and
// at 100,000 tasks those would all be in memory at once.
const prepareChunk = 1024

// prepare looks up every task's resource, base and metaparameters.
func (r *Runner) prepare(tx *store.Tx, rec *Record) (map[string]*taskInfo, error) {
	shell := &handler.Shell{}
	if r.Shell != nil {
		cp := *r.Shell
		shell = &cp
	}
	ansible := &handler.Ansible{TempDir: shell.TempDir, KillGrace: shell.KillGrace, Program: r.AnsiblePlaybook}
	out := make(map[string]*taskInfo, len(rec.Plan.Nodes))
	var defs inputDefsCache
	var locations []string
	seen := map[string]bool{}
	var cat *resources.Catalog
	for i, n := range rec.Plan.Nodes {
		if i%prepareChunk == 0 {
			cat = resources.NewCatalog(tx)
		}
		info := &taskInfo{node: &rec.Plan.Nodes[i]}
		out[n.ID] = info
		res, err := cat.Get(n.Resource)
		if err != nil {
			info.problem = fmt.Sprintf("resource %s no longer exists", n.Resource)
			continue
		}
		// Every location decides which nodes the run connects to, even
		// that of a task which cannot run.
		eff, effErr := cat.Effective(n.Resource)
		loc, _ := eff[resources.LocationInput].(string)
		if effErr == nil && loc != "" && !seen[loc] {
			seen[loc] = true
			locations = append(locations, loc)
		}
		script, ok := res.Base.Actions[n.Action]
		if !ok {
			info.problem = fmt.Sprintf("base %s has no action %q", res.Base.Name, n.Action)
			continue
		}
		// The handlers are completed below, once every location is known:
		// they are pointers, shared by every task.
		h, err := handler.ByName(res.Base.Handler, shell, ansible)
		if err != nil {
			info.problem = err.Error()
			continue
		}
		if effErr != nil {
			return nil, effErr
		}
		info.location = loc
		info.handler, info.noop = h, res.Base.Handler == "noop"
		info.checks = res.Base.Checks(n.Action)
		info.baseDir, info.script = res.Base.Dir, script
		m := res.EffectiveMeta()
		if m.Retry != nil {
			info.retry = *m.Retry
		}
		if m.Delay != nil {
			info.delay = time.Duration(*m.Delay)
		}
		if m.Timeout != nil {
			info.timeout = time.Duration(*m.Timeout)
		}
		info.semaList = m.Sema
		info.inputDefs = defs.of(&res.Base)
		// Sensitivity follows the value: an input fed by a sensitive one
		// is masked in logs and errors too.
		if info.sensitive, err = cat.SensitiveInputs(n.Resource); err != nil {
			return nil, err
		}
		if len(info.sensitive) == 0 {
			info.sensitive = nil
		}
		if !info.noop {
			// A noop task never reads them: its commit finds what they are
			// then (a noop resource's record is 300 bytes of heap a task).
			info.inputs = eff
			// Kept for the commit after the task ran, which then need not
			// decode the record again while it is unchanged (keepResource).
			raw, err := tx.Peek(store.Resources, n.Resource)
			if err != nil {
				return nil, err
			}
			info.res, info.resSum = res, maphash.Bytes(resSeed, raw)
		}
	}
	cat = resources.NewCatalog(tx)
	remote, err := sshNodes(cat, locations)
	if err != nil {
		return nil, err
	}
	if len(remote) > 0 {
		r.transport = sshx.New(remote, shell.Transport, r.SSH)
		shell.Transport = r.transport
	}
	if targets := ansibleTargets(cat, locations); len(targets) > 0 {
		ansible.Target = func(loc string) (handler.AnsibleTarget, error) {
			if t, ok := targets[loc]; ok {
				return t, nil
			}
			return handler.AnsibleTarget{Name: "localhost", Local: true}, nil
		}
	}
	// Every task's react edges share one array, cut to size: grown one
	// task at a time, copies of them took 30 MB at 100,000 tasks.
	counts := map[*taskInfo]int{}
	n := 0
	for i := range rec.Plan.Edges {
		if e := &rec.Plan.Edges[i]; e.Kind == planner.EdgeReact {
			counts[out[e.From]]++
			n++
		}
	}
	all := make([]planner.Edge, n)
	for info, k := range counts {
		info.reactOut, all = all[:0:k], all[k:]
	}
	for i := range rec.Plan.Edges {
		if e := &rec.Plan.Edges[i]; e.Kind == planner.EdgeReact {
			out[e.From].reactOut = append(out[e.From].reactOut, *e)
		}
	}
	return out, nil
}

// inputDefsCache shares the by-name index of a base's inputs between the
// tasks whose resources have the same base: every resource carries its own
// copy of its base, and an index per task cost a map per task.
type inputDefsCache struct {
	byName  map[string][]map[string]*resources.InputDef // by base name, directory and version
	byFirst map[*resources.InputDef]map[string]*resources.InputDef
}

func (c *inputDefsCache) of(b *resources.Base) map[string]*resources.InputDef {
	// Resources decoded from records carrying the same base share its
	// decoded inputs (resources.decodeResource): then the index is the
	// one made for the first of them.
	if len(b.Inputs) > 0 {
		if defs, ok := c.byFirst[&b.Inputs[0]]; ok && len(defs) == len(b.Inputs) {
			return defs
		}
	}
	key := b.Name + "\x00" + b.Dir + "\x00" + b.Version
	for _, defs := range c.byName[key] {
		if sameInputs(defs, b.Inputs) {
			return defs
		}
	}
	defs := make(map[string]*resources.InputDef, len(b.Inputs))
	for i := range b.Inputs {
		d := &b.Inputs[i]
		defs[d.Name] = d
	}
	if c.byName == nil {
		c.byName = map[string][]map[string]*resources.InputDef{}
		c.byFirst = map[*resources.InputDef]map[string]*resources.InputDef{}
	}
	c.byName[key] = append(c.byName[key], defs)
	if len(b.Inputs) > 0 {
		c.byFirst[&b.Inputs[0]] = defs
	}
	return defs
}

// sameInputs reports whether defs indexes exactly the inputs of list.
func sameInputs(defs map[string]*resources.InputDef, list []resources.InputDef) bool {
	if len(defs) != len(list) {
		return false
	}
	for i := range list {
		d, ok := defs[list[i].Name]
		if !ok || !reflect.DeepEqual(*d, list[i]) {
			return false
		}
	}
	return true
}

// resSeed seeds the digests of resource records that tell the runner
// whether a resource it decoded is still what the store holds.
var resSeed = maphash.MakeSeed()

// keepResource lets cat reuse the resource that prepare decoded for a task,
// if its record has not changed since (another command may have changed it
// while the store was closed, and the run's own outputs change it): the
// staging commit then need not decode it again. The task's copy is
// dropped either way; each task commits once.
func (ex *execution) keepResource(cat *resources.Catalog, tx *store.Tx, info *taskInfo) {
	res := info.res
	if res == nil {
		return
	}
	info.res = nil
	raw, err := tx.Peek(store.Resources, res.Name)
	if err == nil && maphash.Bytes(resSeed, raw) == info.resSum {
		cat.Keep(res)
	}
}

// sshNodes returns the nodes with transport ssh among locations, by name.
// Locations that name no node, or a local one, run here.
func sshNodes(cat *resources.Catalog, locations []string) (map[string]*sshx.Node, error) {
	out := map[string]*sshx.Node{}
	for _, loc := range locations {
		n, err := nodes.Get(cat, loc)
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, nodes.ErrNotNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !n.SSH() {
			continue
		}
		out[loc] = SSHNode(n)
	}
	return out, nil
}

// ansibleTargets returns, by location, how ansible-playbook reaches the
// SSH nodes among locations; any other location is this machine.
func ansibleTargets(cat *resources.Catalog, locations []string) map[string]handler.AnsibleTarget {
	out := map[string]handler.AnsibleTarget{}
	for _, loc := range locations {
		n, err := nodes.Get(cat, loc)
		if err != nil || !n.SSH() {
			continue
		}
		t := handler.AnsibleTarget{Name: n.Name, Host: n.IP, Port: n.Port, User: n.User, KeyPath: n.Key}
		if n.Trusted != nil {
			t.HostKey = n.Trusted.Key
		}
		out[loc] = t
	}
	return out
}

// SSHNode is the SSH transport's view of a node.
func SSHNode(n *nodes.Node) *sshx.Node {
	sn := &sshx.Node{Name: n.Name, Host: n.IP, Port: n.Port, User: n.User, KeyPath: n.Key}
	if n.Trusted != nil {
		// A damaged key reads as no key: the task says to trust again.
		sn.HostKey, _ = sshx.ParseKey(n.Trusted.Key)
	}
	return sn
}

// execution is the state of one Run.
type execution struct {
	r     *Runner
	sdb   *sharedDB
	rec   *Record
	infos map[string]*taskInfo

	mu      sync.Mutex
	outputs map[string]map[string]any // task id -> outputs of its successful run
	ran     map[string]map[string]any // task id -> inputs it ran with
	// effective holds each resource's effective inputs, read once when the
	// run starts (one catalog, so a long chain costs linear time) and
	// refreshed for the receivers of a task's outputs. Changes made by
	// other commands during the run are seen by the next run.
	effective map[string]map[string]any

	// buf holds the changes not written yet (see persist), started the
	// place in buf of each task's buffered INPROGRESS state, and spare an
	// emptied buffer to reuse. groups holds the tasks whose attempts this
	// run recorded (recordGroup); planGroups says whether the store held
	// records of attempts of the plan when the run started. A task
	// outside both has no record to remove when it finishes.
	bufMu   sync.Mutex
	buf     []pendingWrite
	started map[string]int
	spare   []pendingWrite
	// behind is closed when the write behind in flight ends (nil when
	// none is); behindFailed is the error of the first that failed.
	behind       chan struct{}
	behindFailed error
	// durable waits until the last eager write (flush) is on disk.
	durable    func() error
	groups     map[string]bool
	planGroups bool

	userStop <-chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once

	logs  liveLogs
	locks resLocker

	// Seen only by the walker's goroutine (begin): how many times the
	// store had been opened, and the plan's edit count, when the runner
	// last looked; and the tasks other commands skipped, with the reason.
	opens  uint64
	looked time.Time // when flush last looked for edits (shared stores)

	// stopLooked is when an idle flush last looked for a stop request
	// (unix nanoseconds).
	stopLooked atomic.Int64
	kill       context.CancelFunc // kills running tasks: orch stop --kill
	killing    atomic.Bool
	leaseLost  atomic.Pointer[error] // why the run lost its leases (claim.go)
	edits      uint64
	external   map[string]string
}

func (ex *execution) closeStop() { ex.stopOnce.Do(func() { close(ex.stopped) }) }

// watchStop turns the caller's stop channel into the walker's.
func (ex *execution) watchStop() {
	if ex.userStop == nil {
		return
	}
	select {
	case <-ex.userStop:
		ex.closeStop()
		// "orch stop" signals after writing its request: whether it
		// asks for running tasks to be killed is in the store.
		_ = ex.sdb.View(ex.checkStop)
	case <-ex.stopped:
	}
}

// limits are the limits task t is under besides its resource: its node's
// (--per-node) and its semaphores.
func (ex *execution) limits(t *Task) []sharedLimit {
	var out []sharedLimit
	if t.Node != "" {
		out = append(out, sharedLimit{name: "node/" + t.Node, n: max(ex.r.PerNode, 1)})
	}
	for _, s := range t.Sema {
		name, count, ok := strings.Cut(s, ":")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 1 || strings.HasPrefix(name, "resource/") {
			continue
		}
		out = append(out, sharedLimit{name: "sema/" + name, n: n})
	}
	return out
}

// run executes one task with its retries, delay and timeout.
func (ex *execution) run(ctx context.Context, t *Task) Outcome {
	info := ex.infos[t.ID]
	if info.problem != "" {
		return Outcome{Err: errors.New(info.problem), Attempts: 1}
	}
	if !info.noop {
		unlock, err := ex.locks.lock(ctx, info.node.Resource, ex.limits(t))
		if err != nil {
			return Outcome{Err: err, Attempts: 1}
		}
		defer unlock()
	}
	gate := ex.gateOf(t)
	var last error
	attempts := 0
	for attempt := 0; attempt <= info.retry; attempt++ {
		if attempt > 0 && info.delay > 0 {
			select {
			case <-ctx.Done():
				return Outcome{Err: ctx.Err(), Attempts: attempts}
			case <-time.After(info.delay):
			}
		}
		attempts++
		var inputs map[string]any
		if !info.noop {
			ex.mu.Lock()
			inputs = info.inputsFrom(ex.effective[info.node.Resource])
			ex.mu.Unlock()
		}
		ex.logs.begin(t.ID, attempts)
		res, err := info.handler.Run(ctx, handler.Request{
			Gate:     gate,
			Resource: info.node.Resource, Action: info.node.Action, Task: t.ID,
			BaseDir: info.baseDir, Script: info.script, Inputs: inputs, Sensitive: info.sensitive,
			Location: info.location, Timeout: info.timeout,
			Started: func(g handler.Group) { ex.recordGroup(t.ID, g) },
			Output:  func(l handler.Line) { ex.output(t.ID, l) },
		})
		ex.logs.end(t.ID)
		if !info.noop {
			ex.keepLog(t.ID, attempts, res.Log)
		}
		if err == nil {
			err = info.checkOutputs(res.Outputs)
		}
		if err == nil && !info.noop {
			ex.mu.Lock()
			ex.outputs[t.ID] = res.Outputs
			ex.ran[t.ID] = inputs
			ex.mu.Unlock()
		}
		if err == nil {
			return Outcome{Changed: res.Changed, Attempts: attempts}
		}
		last = err
		if errors.Is(err, handler.ErrNeedsOperator) {
			break // another attempt would fail the same way
		}
		if ctx.Err() != nil {
			// The operator killed the run (Ctrl-C twice): not the
			// script's failure, and resume runs the task again.
			last = errors.New(killed)
			break
		}
		if attempt < info.retry && ex.r.Note != nil {
			msg := fmt.Sprintf("%s attempt %d failed: %s; retrying", t.ID, attempts, oneLine(err.Error()))
			if info.delay > 0 {
				msg += " in " + info.delay.String()
			}
			ex.r.Note(msg)
		}
	}
	return Outcome{Err: last, Attempts: attempts}
}

// inputsFrom returns the task's inputs, as its action runs with them, out
// of its resource's effective values: each input of its base, nil when
// unset (a script sees "").
func (ti *taskInfo) inputsFrom(eff map[string]any) map[string]any {
	inputs := make(map[string]any, len(ti.inputDefs))
	for name := range ti.inputDefs {
		inputs[name] = eff[name]
	}
	return inputs
}

// oneLine joins a multi-line error (a stderr tail) into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
}

// output passes one line of a running task on: to the log stream, and to
// Runner.Output.
func (ex *execution) output(task string, l handler.Line) {
	ex.logs.line(task, l)
	if ex.r.Output != nil {
		ex.r.Output(task, l)
	}
}

// keepLog buffers the final log of an attempt, written with the task's
// next state change.
func (ex *execution) keepLog(task string, attempt int, lines []handler.Line) {
	uid := ex.rec.UID
	ex.bufMu.Lock()
	ex.buf = append(ex.buf, pendingWrite{write: func(tx *store.Tx) error {
		// Even an attempt that printed nothing is on record (its end).
		return finalLog(tx, uid, task, attempt, lines)
	}})
	ex.bufMu.Unlock()
}

// logEvery is how often the lines of running attempts reach the store.
const logEvery = 500 * time.Millisecond

// streamLogs writes the lines of running attempts to the store every
// logEvery until done is closed.
func (ex *execution) streamLogs(done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(logEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if ex.logs.any() {
				_ = ex.sdb.Update(func(tx *store.Tx) error { return ex.logs.stream(tx, ex.rec.UID) })
			}
		}
	}
}

// checkOutputs refuses outputs that do not fit the inputs they would set:
// the attempt fails, rather than the run.
func (ti *taskInfo) checkOutputs(outs map[string]any) error {
	for k, v := range outs {
		if d, ok := ti.inputDefs[k]; ok {
			if _, err := d.Schema.Check(v); err != nil {
				return fmt.Errorf("output %q does not fit input %s (%s)", k, k, d.Schema)
			}
		}
	}
	return nil
}

// persist records a state change. Final states of tasks with side effects
// are written at once, with everything buffered before them; the rest is
// buffered.
func (ex *execution) persist(id string, st State) error {
	info := ex.infos[id]
	ex.bufMu.Lock()
	ex.bufferState(id, st)
	lazy := st.Status == StatusInProgress || info.noop || info.problem != "" || st.Status == StatusSkipped
	big, failed := len(ex.buf) >= lazyMax, ex.behindFailed
	ex.bufMu.Unlock()
	return ex.writeBuffered(!lazy, big, failed)
}

// writeBuffered writes what persist or persistBatch buffered: at once when
// a change must be durable now (eager), behind the walk when the buffer is
// full, else not yet. failed is the error of a write behind that failed,
// read with the buffer.
func (ex *execution) writeBuffered(eager, big bool, failed error) error {
	switch {
	case eager:
		return ex.flush()
	case big:
		return ex.flushBehind()
	}
	return failed
}

// lazyMax is how many changes the buffer holds before they are written
// even though none must be durable yet. Tests lower it.
var lazyMax = 4096

// lateHook, when set (by tests), wraps the durable of each eager write.
var lateHook func(durable func() error) func() error

// behindHook, when set (by tests), runs on a write behind's goroutine
// before it writes; an error fails the write.
var behindHook func() error

// persistBatch records the final states of tasks that finished together,
// in one transaction when any of them needs to be durable now (group
// commit).
func (ex *execution) persistBatch(ids []string, states []State) error {
	eager := false
	ex.bufMu.Lock()
	for i, id := range ids {
		st := states[i]
		ex.bufferState(id, st)
		info := ex.infos[id]
		if !(info.noop || info.problem != "" || st.Status == StatusSkipped) {
			eager = true
		}
	}
	big, failed := len(ex.buf) >= lazyMax, ex.behindFailed
	ex.bufMu.Unlock()
	return ex.writeBuffered(eager, big, failed)
}

// flushBehind writes the buffered changes, none of which must be durable
// before the walk goes on, in a transaction of their own on another
// goroutine: the walker keeps scheduling (a chain of 100,000 noop tasks
// spends most of its time in these writes). One such write is in flight
// at most; writes stay in the order their changes were buffered, since
// every other write waits for it first (waitBehind). A failed write fails
// the walk at the runner's next write. Only the walker's goroutine calls
// it, as it does flush.
func (ex *execution) flushBehind() error {
	if err := ex.waitBehind(); err != nil {
		return err
	}
	ex.bufMu.Lock()
	batch := ex.buf
	ex.buf = nil
	clear(ex.started)
	done := make(chan struct{})
	ex.behind = done
	ex.bufMu.Unlock()
	if len(batch) == 0 {
		ex.endBehind(done, nil)
		return nil
	}
	go func() {
		var err error
		if behindHook != nil {
			err = behindHook()
		}
		if err != nil {
			ex.endBehind(done, err)
			return
		}
		err = ex.sdb.Update(func(tx *store.Tx) error {
			if err := ex.write(tx, batch); err != nil {
				return err
			}
			return ex.checkStop(tx)
		})
		if err == nil {
			ex.written(batch)
			ex.recycle(batch)
		}
		ex.endBehind(done, err)
	}()
	return nil
}

// endBehind records how the write behind that done stands for ended.
func (ex *execution) endBehind(done chan struct{}, err error) {
	ex.bufMu.Lock()
	if err != nil && ex.behindFailed == nil {
		ex.behindFailed = err
	}
	ex.behind = nil
	ex.bufMu.Unlock()
	close(done)
}

// waitBehind waits for the write behind in flight, if any, and returns the
// error of any that failed.
func (ex *execution) waitBehind() error {
	ex.bufMu.Lock()
	done := ex.behind
	ex.bufMu.Unlock()
	if done != nil {
		<-done
	}
	return ex.behindErr()
}

// behindErr returns the error of a write behind that failed, if any.
func (ex *execution) behindErr() error {
	ex.bufMu.Lock()
	defer ex.bufMu.Unlock()
	return ex.behindFailed
}

// pendingWrite is one buffered change: task id's state st, or write.
type pendingWrite struct {
	id    string
	st    State
	write func(*store.Tx) error
}

// bufferState buffers task id's state st; the caller holds bufMu. A final
// state replaces the task's INPROGRESS one if that is still buffered: both
// would be written in one transaction, where the first is never seen.
func (ex *execution) bufferState(id string, st State) {
	if ex.buf == nil {
		ex.buf, ex.spare = ex.spare, nil
	}
	if st.Status == StatusInProgress {
		if ex.started == nil {
			ex.started = map[string]int{}
		}
		ex.started[id] = len(ex.buf)
	} else if i, ok := ex.started[id]; ok {
		ex.buf[i] = pendingWrite{}
		delete(ex.started, id)
	}
	ex.buf = append(ex.buf, pendingWrite{id: id, st: st})
}

// take empties the buffer and returns what it held, in order.
func (ex *execution) take() []pendingWrite {
	ex.bufMu.Lock()
	defer ex.bufMu.Unlock()
	batch := ex.buf
	ex.buf = nil
	clear(ex.started)
	return batch
}

// write writes batch, a buffer take returned, in tx.
func (ex *execution) write(tx *store.Tx, batch []pendingWrite) error {
	// One catalog for the batch, emptied for each task (apply): a batch
	// of noop tasks is thousands.
	cat := resources.NewCatalog(tx)
	for _, w := range batch {
		var err error
		switch {
		case w.write != nil:
			err = w.write(tx)
		case w.id != "":
			err = ex.apply(tx, cat, w.id, w.st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recycle keeps batch, written, for the buffer to reuse.
func (ex *execution) recycle(batch []pendingWrite) {
	clear(batch)
	ex.bufMu.Lock()
	ex.spare = batch[:0]
	ex.bufMu.Unlock()
}

// flush writes every buffered change in one transaction, which may become
// durable after flush returns: the walker syncs it (syncLast) before it
// starts a task that depends on others, or once it has started the tasks
// it can; the tasks that depend on it also wait for that just before
// their scripts start (gateOf).
func (ex *execution) flush() error {
	if err := ex.waitBehind(); err != nil {
		return err
	}
	batch := ex.take()
	if len(batch) == 0 {
		return nil
	}
	defer ex.recycle(batch)
	durable, err := ex.sdb.UpdateLate(func(tx *store.Tx) error {
		if err := ex.write(tx, batch); err != nil {
			return err
		}
		if ex.sdb.shared() {
			// On a shared store others write beside the run: look for
			// their edits here, which spares begin a transaction of its
			// own for the tasks that start next.
			if err := ex.lookForEdits(tx); err != nil {
				return err
			}
			ex.looked = time.Now()
		}
		return ex.checkStop(tx)
	})
	if err == nil {
		ex.written(batch)
		if lateHook != nil {
			durable = lateHook(durable)
		}
		ex.bufMu.Lock()
		ex.durable = durable
		ex.bufMu.Unlock()
	}
	return err
}

// syncLast makes the last eager write durable, on the walker's goroutine
// (Walker.Sync): before it starts a task that waits for it in its gate,
// and when it is about to wait for tasks to end. A failed sync is
// reported by the gates and by the next write.
func (ex *execution) syncLast() {
	ex.bufMu.Lock()
	durable := ex.durable
	ex.bufMu.Unlock()
	if durable != nil {
		_ = durable()
	}
}

// gateOf returns what task t's scripts wait for before they start: the
// sync of the last transaction written, which holds the final states and
// commits of every task t depends on (they finished before it started, and
// syncs happen in order). A task that depends on none starts at once.
func (ex *execution) gateOf(t *Task) func() error {
	if len(t.In) == 0 && len(t.Earlier) == 0 {
		return nil
	}
	ex.bufMu.Lock()
	defer ex.bufMu.Unlock()
	return ex.durable
}

// written forgets the outputs and inputs of the tasks whose final states
// batch held, now written: only their commit read them, and a run of
// 100,000 tasks kept them all until it ended. (A transaction retried
// calls apply again: they are kept until it is written.)
func (ex *execution) written(batch []pendingWrite) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	for _, w := range batch {
		if w.id != "" && w.st.Status.Finished() {
			delete(ex.outputs, w.id)
			delete(ex.ran, w.id)
		}
	}
}

// stopLook is how often an idle runner looks for a stop request.
const stopLook = 250 * time.Millisecond

// lookFresh is how long a look for edits made while writing stands in for
// the look begin would make on a shared store.
const lookFresh = 20 * time.Millisecond

// flushOnClose writes buffered changes before the store closes for idling,
// so that other commands see the run as it is.
func (ex *execution) flushOnClose(db *store.DB, closing bool) {
	// Changes buffered after a write behind still in flight wait for it:
	// they must not reach the store before the older ones.
	var batch []pendingWrite
	ex.bufMu.Lock()
	if ex.behind == nil {
		batch = ex.buf
		ex.buf = nil
		clear(ex.started)
	}
	ex.bufMu.Unlock()
	// Idle checks come every few milliseconds: with nothing to write they
	// only look for a stop request, and not that often (a shared store
	// would see a transaction per check).
	now := time.Now().UnixNano()
	if !closing && len(batch) == 0 && now-ex.stopLooked.Load() < int64(stopLook) {
		return
	}
	ex.stopLooked.Store(now)
	err := db.Update(func(tx *store.Tx) error {
		// Called with the shared store held: its fence, by hand.
		if ex.sdb.fence != nil {
			if err := ex.sdb.fence(tx); err != nil {
				return err
			}
		}
		if err := ex.write(tx, batch); err != nil {
			return err
		}
		return ex.checkStop(tx)
	})
	if err == nil {
		ex.written(batch)
	}
}

// drain writes what is still buffered, inside tx; nothing if a write
// behind failed, since what it held would then be missing before it.
func (ex *execution) drain(tx *store.Tx) error {
	batch := ex.take()
	if ex.behindErr() != nil {
		return nil
	}
	return ex.write(tx, batch)
}

func (ex *execution) checkStop(tx *store.Tx) error {
	v, err := tx.Get(store.Plans, stopKey(ex.rec.UID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	ex.closeStop()
	if string(v) == stopKill && !ex.killing.Swap(true) {
		if ex.r.Note != nil {
			ex.r.Note("orch stop --kill: killing running tasks")
		}
		ex.kill() // as a second Ctrl-C does
	}
	return nil
}

// begin records that task id starts, unless another command skipped it
// since the runner last looked (see edit.go): then it returns the reason.
// The store stays acquired from the look to the buffering of INPROGRESS,
// so no other process can write in between.
func (ex *execution) begin(id string, st State) (string, error) {
	db, opens, err := ex.sdb.acquireCounted()
	if err != nil {
		return "", err
	}
	defer ex.sdb.release()
	if opens != ex.opens {
		ex.opens = opens
		if !ex.sdb.shared() || time.Since(ex.looked) > lookFresh {
			if err := db.View(ex.lookForEdits); err != nil {
				return "", err
			}
		}
	}
	if reason, ok := ex.external[id]; ok {
		return reason, nil
	}
	return "", ex.persist(id, st)
}

// lookForEdits reads the tasks other commands skipped, when the plan's
// edit count moved.
func (ex *execution) lookForEdits(tx *store.Tx) error {
	n := editCount(tx, ex.rec.UID)
	if n == ex.edits {
		return nil
	}
	ex.edits = n
	states, err := States(tx, ex.rec)
	if err != nil {
		return err
	}
	for id, st := range states {
		if st.Status == StatusSkipped {
			ex.external[id] = st.Reason
		}
	}
	return nil
}

// apply writes one state change and, for a task that succeeded, its
// consequences: outputs sent to the resource (and on to its receivers),
// the commit of its staged entry, and refreshes for the react subscribers
// its change triggers.
func (ex *execution) apply(tx *store.Tx, cat *resources.Catalog, id string, st State) error {
	if st.Status == StatusSkipped {
		// Another command's skip (discarded, filtered) outranks the
		// walker's (stopped, upstream failed): resume must not run it.
		if raw, err := tx.Peek(store.Plans, taskKey(ex.rec.UID, id)); err == nil {
			if old, err := decodeState(raw); err == nil && old.Status == StatusSkipped {
				return nil
			}
		}
	}
	if err := PutState(tx, ex.rec.UID, id, st); err != nil {
		return err
	}
	if st.Status.Finished() && ex.mayHaveGroup(id) {
		if err := tx.Delete(store.Plans, groupKey(ex.rec.UID, id)); err != nil {
			return err
		}
	}
	if st.Status != StatusSuccess && st.Status != StatusNoop {
		return nil
	}
	info := ex.infos[id]
	n := info.node
	// What the commit below reads, at once where reads cost a round trip.
	if err := tx.Prefetch(resources.CommitKeys(n.Resource, staging.Key(n.Resource, n.Action))...); err != nil {
		return err
	}
	cat.Reset()
	ex.keepResource(cat, tx, info)
	stg := staging.New(cat, ex.r.Now)
	stg.Plan = ex.rec.UID
	ex.mu.Lock()
	outs, ran := ex.outputs[id], ex.ran[id]
	ex.mu.Unlock()
	if len(outs) > 0 && cat.Exists(n.Resource) {
		changed, err := ex.sendOutputs(cat, info, outs, ran)
		if err != nil {
			return fmt.Errorf("task %s outputs: %w", id, err)
		}
		if changed {
			down, err := cat.Downstream(n.Resource)
			if err != nil {
				return err
			}
			if _, err := stg.Touch("outputs of "+id, down...); err != nil {
				return err
			}
			for _, name := range append([]string{n.Resource}, down...) {
				eff, err := cat.Effective(name)
				if err != nil {
					return err
				}
				ex.mu.Lock()
				ex.effective[name] = eff
				ex.mu.Unlock()
			}
		}
	}
	// The action ran with the resource's current inputs, so whatever is
	// staged for it (its own entry, a refresh left earlier, or an entry
	// outside the selection that a rule pulled in) is done.
	// Nothing staged (ErrNoEntry, before it writes anything) is fine.
	key := staging.Key(n.Resource, n.Action)
	if info.noop && cat.Exists(n.Resource) {
		// A noop task ran with what its inputs are now: they were not
		// kept in memory for it (prepare).
		eff, err := cat.Effective(n.Resource)
		if err != nil {
			return err
		}
		ran = info.inputsFrom(eff)
	}
	if _, err := stg.CommitRan(key, ex.rec.UID, id, ran, info.sensitive); err != nil && !errors.Is(err, staging.ErrNoEntry) {
		return fmt.Errorf("commit %s: %w", key, err)
	}
	if st.Status == StatusSuccess {
		return ex.leaveRefreshes(tx, stg, info)
	}
	return nil
}

const refreshCause = "refresh"

// leaveRefreshes stages, for every react subscriber this change triggers,
// a refresh entry. It is committed when the subscriber succeeds; if the
// subscriber never runs (failure upstream, stop, crash), it stays staged and
// is in the next plan: nothing is forgotten.
func (ex *execution) leaveRefreshes(tx *store.Tx, stg *staging.Stager, info *taskInfo) error {
	// Subscribers hang after the action's last instance, so the edges of
	// every instance of this action count.
	var out []planner.Edge
	for i := 0; ; i++ {
		other, ok := ex.infos[fmt.Sprintf("%s.%s#%d", info.node.Resource, info.node.Action, i)]
		if !ok {
			break
		}
		out = append(out, other.reactOut...)
	}
	for _, e := range out {
		if !e.Event.Matches(events.ResultChanged) {
			continue
		}
		to := ex.infos[e.To]
		if to.node.Staged || to.problem != "" {
			continue
		}
		if _, err := stg.StageRefresh(to.node.Resource, to.node.Action, refreshCause+": "+info.node.ID+" changed"); err != nil {
			return err
		}
	}
	return nil
}

// sendOutputs writes a task's outputs into its resource's inputs of those
// names. It reports whether any effective value changed.
func (ex *execution) sendOutputs(cat *resources.Catalog, info *taskInfo, outs, ran map[string]any) (bool, error) {
	res, err := cat.Get(info.node.Resource)
	if err != nil {
		return false, err
	}
	cp := *res
	cp.Inputs = make(map[string]any, len(res.Inputs))
	for k, v := range res.Inputs {
		cp.Inputs[k] = v
	}
	changed := false
	for k, v := range outs {
		d, ok := info.inputDefs[k]
		if !ok {
			continue // not an input: nothing to send
		}
		cv, err := d.Schema.Check(v)
		if err != nil {
			return false, fmt.Errorf("output %q does not fit input %s (%s)", k, k, d.Schema)
		}
		if old, ok := cp.Inputs[k]; !ok || !schema.Equal(old, cv) {
			changed = true
		}
		cp.Inputs[k] = cv
		if ran != nil {
			ran[k] = cv
		}
	}
	if !changed {
		return false, nil
	}
	return true, cat.Put(&cp)
}
