package walk

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Errors of the walker. The errors actually returned wrap one of these and
// name the offending task, so callers test them with errors.Is and print
// them as they are. Walk returns the first four for a task graph it refuses
// to run; then nothing has run and nothing has been persisted.
var (
	// ErrDuplicateTask means two tasks share an id.
	ErrDuplicateTask = errors.New("duplicate task")
	// ErrUnknownPredecessor means an edge comes from a task that is not in
	// the walk.
	ErrUnknownPredecessor = errors.New("unknown predecessor")
	// ErrTaskCycle means the edges form a cycle, so no task of it could
	// ever start. The message lists the tasks around one cycle.
	ErrTaskCycle = errors.New("task cycle")
	// ErrBadLimit means a task has a limit with a count below 1, or names
	// one limit (kind and name) twice.
	ErrBadLimit = errors.New("bad limit")
	// ErrTaskPanicked is recorded as the error of a task whose Run
	// panicked. The walk goes on: the panic is the task's failure, not the
	// walker's.
	ErrTaskPanicked = errors.New("task panicked")
)

// Status is where a task stands in a walk. It is persisted as text, so the
// values are the words the CLI prints.
type Status string

// The statuses of a task. A walk moves a task from PENDING to INPROGRESS to
// one of SUCCESS, NOOP or ERROR, or straight from PENDING to SKIPPED.
const (
	StatusPending    Status = "PENDING"
	StatusInProgress Status = "INPROGRESS"
	StatusSuccess    Status = "SUCCESS" // ran and changed something
	StatusNoop       Status = "NOOP"    // ran and changed nothing
	StatusSkipped    Status = "SKIPPED" // did not run; State.Reason says why
	StatusError      Status = "ERROR"   // ran and failed after all attempts
)

// Finished reports whether s is final: SUCCESS, NOOP, SKIPPED or ERROR.
// A finished task is never run again by a walk, including a resumed one.
func (s Status) Finished() bool {
	switch s {
	case StatusSuccess, StatusNoop, StatusSkipped, StatusError:
		return true
	}
	return false
}

// Reasons the walker records in State.Reason for a SKIPPED task. Callers
// may record reasons of their own for tasks they skip (Walker.Begin's).
const (
	ReasonNotTriggered = "not triggered" // reactive task whose incoming edges did not fire
	ReasonStopped      = "stopped"       // the walk was stopped before the task started
	// ReasonUpstreamFailed is followed by ": <task>", the task that ended
	// ERROR and caused the skip, however many skipped tasks lie between.
	ReasonUpstreamFailed = "upstream failed"
)

const upstreamPrefix = ReasonUpstreamFailed + ": "

// InEdge is one incoming edge of a task: From must finish before the task
// may start.
type InEdge struct {
	From string // predecessor task id
	// On is the edge's predicate: the final statuses of From (or of one
	// of its Earlier instances) that trigger the task. An empty On makes
	// an ordering-only edge; one holding OnError also lets a failure of
	// From through (see the package documentation's truth table).
	On Trigger
}

// Trigger is a set of final statuses, SUCCESS, NOOP and ERROR: the results
// of a predecessor on which an edge fires. SKIPPED is never in it: a task
// that did not run triggers nothing. The zero Trigger is empty.
//
// It is a predicate the caller builds once per edge (orch maps each react
// rule's event to one), so deciding a task costs a bit test per edge and
// no call.
type Trigger uint8

// The statuses a Trigger can hold.
const (
	OnSuccess Trigger = 1 << iota // the predecessor ran and changed something
	OnNoop                        // the predecessor ran and changed nothing
	OnError                       // the predecessor ended ERROR
)

// Has reports whether s is one of the statuses in t.
func (t Trigger) Has(s Status) bool {
	switch s {
	case StatusSuccess:
		return t&OnSuccess != 0
	case StatusNoop:
		return t&OnNoop != 0
	case StatusError:
		return t&OnError != 0
	}
	return false
}

// String lists the statuses in t, "SUCCESS|NOOP" for instance, or "none".
func (t Trigger) String() string {
	var parts []string
	for _, b := range []struct {
		bit Trigger
		s   Status
	}{{OnSuccess, StatusSuccess}, {OnNoop, StatusNoop}, {OnError, StatusError}} {
		if t&b.bit != 0 {
			parts = append(parts, string(b.s))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Task is one unit of work of a walk.
type Task struct {
	ID string
	// Limits are the limits the task holds one unit of while it runs, at
	// most one of each kind and name.
	Limits []Limit
	Weight int // critical-path weight; among ready tasks the heaviest starts first
	// Reactive is true for a task that runs only if one of its incoming
	// edges fires (in solar, a task that only react rules put in the
	// plan, not staged).
	Reactive bool
	In       []InEdge
	// Earlier names earlier instances of the same work, which all precede
	// this one. An edge from this task fires on their final statuses too:
	// an action that ran twice in a plan changed something if either run
	// did, and its subscribers hang after its last instance.
	Earlier []string
	// Inline runs the task on the scheduler's goroutine rather than on
	// one of its own: for a Run that returns at once (a noop handler, a
	// task that cannot run), where a goroutine and the wake-ups to hand
	// its outcome back cost more than the run. (A task that starts when
	// no other runs or waits to start runs there too, whatever it is:
	// the scheduler has nothing else to do until it ends.) An Inline task
	// never batches.
	Inline bool
	// Group names the tasks that may run together, as one batch, by
	// Walker.RunBatch: tasks of one non-empty Group ready at the same
	// moment. "" never batches. (solar: base digest, action and node.)
	Group string
	// GroupMax bounds a batch's members; 0 is no bound. A batch takes the
	// smallest GroupMax of its members.
	GroupMax int
}

// Limit bounds how many tasks run at once: a task runs only while it
// holds one unit of each of its limits. Limits are told apart by kind and
// name, and one admits as many holders as the smallest Count any task of
// the walk gives it.
type Limit struct {
	Kind  LimitKind
	Name  string
	Count int // at least 1
}

// LimitKind says what a Limit bounds. The walker treats every kind alike:
// kinds keep names apart (node "db" and semaphore "db" are two limits) and
// tell the caller, who may share limits beyond one walk, what each is.
type LimitKind uint8

// The kinds of limits.
const (
	LimitNode     LimitKind = iota + 1 // the tasks that run on one machine
	LimitResource                      // the tasks that act on one thing, usually one at a time
	LimitSema                          // a named counting semaphore
)

// String is "node", "resource" or "sema".
func (k LimitKind) String() string {
	switch k {
	case LimitNode:
		return "node"
	case LimitResource:
		return "resource"
	case LimitSema:
		return "sema"
	}
	return "LimitKind(" + strconv.Itoa(int(k)) + ")"
}

// String is the limit's kind and name, "sema/db" for instance; its count
// is left out, since tasks may give one limit different counts.
func (l Limit) String() string { return l.Kind.String() + "/" + l.Name }

// compare orders limits by kind, then name: the order a task's limits are
// taken in.
func (l Limit) compare(m Limit) int {
	if l.Kind != m.Kind {
		return int(l.Kind) - int(m.Kind)
	}
	return strings.Compare(l.Name, m.Name)
}

// State is what is recorded about a task.
type State struct {
	Status     Status
	Reason     string // why a SKIPPED task did not run (see the Reason constants), or a NOOP one Begin ended
	Err        string // why an ERROR task failed
	Attempts   int
	Changed    bool // the task ran and changed something (SUCCESS)
	Start, End time.Time
}

// FailedRoot reports whether a task in state st counts as failed for its
// successors, and which task is the root cause: id itself when it ended
// ERROR, or the task named in its "upstream failed" reason.
func (st State) FailedRoot(id string) (root string, failed bool) {
	switch {
	case st.Status == StatusError:
		return id, true
	case st.Status == StatusSkipped && strings.HasPrefix(st.Reason, ReasonUpstreamFailed):
		if root := strings.TrimPrefix(st.Reason, upstreamPrefix); root != st.Reason && root != "" {
			return root, true
		}
		return id, true // a reason without a root: the best we know is this task
	}
	return "", false
}

// Outcome is what running a task produced. Retries and timeouts happen
// inside Walker.Run, so an Outcome is final.
type Outcome struct {
	Changed  bool
	Err      error // non-nil: the task ends ERROR
	Attempts int   // recorded as at least 1
}

// Walker runs a set of tasks in dependency order, with the guarantees
// stated in the package documentation. A Walker holds no state between
// walks; one value may run walks one after another.
type Walker struct {
	Concurrency int // maximum number of tasks in Run, and batches in RunBatch, at once; 0 means 10

	// Run executes one task and must not modify it. It runs on a
	// goroutine of its own, or on the scheduler's when the task is
	// Inline or alone (no other task runs or is ready to start), so it
	// must not wait for the scheduler. It must return soon after ctx is
	// cancelled (hard cancellation), reporting ctx's error if it gave up.
	// It must not be nil.
	Run func(ctx context.Context, t *Task) Outcome
	// RunBatch runs tasks (2 or more, one Group) as one batch and returns
	// one Outcome per task, in their order. nil never batches: each task
	// goes to Run.
	RunBatch func(ctx context.Context, tasks []*Task) []Outcome
	// Persist records a state change: INPROGRESS before Run is called, and
	// every final state. It is called from one goroutine at a time. An error
	// aborts the walk: running tasks are cancelled and waited for, and Walk
	// returns the error. Nil means nothing is recorded.
	Persist func(id string, st State) error
	// PersistBatch, if not nil, is called in place of Persist for the final
	// states of tasks whose Run has returned: all those that returned
	// while the scheduler was busy, at once, so that they can be made
	// durable in one write. The order of ids is the order they are
	// recorded in; successors start only after it returned.
	PersistBatch func(ids []string, states []State) error
	// Begin, if not nil, is called in place of Persist for the INPROGRESS
	// state of a task about to start, from the same goroutine. It records
	// that state and returns the zero State, or returns the final state
	// the task ends in instead, without running (another process skipped
	// it, or marked it NOOP, meanwhile): a SKIPPED one with its Reason, or
	// a NOOP one, which its successors' edges see as a NOOP like any other
	// (Trigger.Has). That state is persisted, its End set by the walker.
	// Any other status, or an error, aborts the walk as a failing Persist
	// does.
	Begin func(id string, st State) (end State, err error)
	// Sync, if not nil, makes the last write durable (the runner syncs
	// it); the walker calls it from Persist's goroutine. It does so when
	// it has started what it could and is about to wait for a task to
	// end, and just before it starts a task that depends on others: that
	// task's Run waits for the sync before its work begins (the runner's
	// gate), and a sync done first costs a task on a goroutine of its own
	// two hand-offs between goroutines fewer than one it waits for.
	Sync func()
	// Progress, if not nil, is told of each change after it was persisted,
	// from the same goroutine as Persist.
	Progress func(id string, st State)
	// Now tells the time for State.Start and State.End; nil means time.Now.
	Now func() time.Time
}

// Walk runs tasks and returns the final state of every task, by id.
//
// initial holds states recorded by an earlier walk of the same tasks
// (resume): a task whose recorded status is finished is not run and counts
// as finished with that state; any other task runs as if new. Tasks absent
// from initial are PENDING.
//
// Closing stop stops the walk softly: no task starts any more, running
// tasks finish and are persisted, and every task that did not start ends
// SKIPPED "stopped" (persisted). Cancelling ctx stops it hard: the same,
// except that the running tasks' ctx is cancelled too; they end with what
// Run reports, normally ERROR with ctx's error.
//
// The error is non-nil only when the graph is invalid (see the Err
// variables; then nothing ran) or when Persist failed; then the returned
// states are the walker's last view, which may be ahead of what was
// persisted, and tasks never reached are PENDING.
func (w *Walker) Walk(ctx context.Context, tasks []Task, initial map[string]State, stop <-chan struct{}) (map[string]State, error) {
	if w.Run == nil {
		panic("walk: Walker.Run is nil")
	}
	wk, err := newWalk(w, tasks, initial)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wk.runCtx = runCtx
	wk.yielded = time.Now()
	if err := wk.loop(ctx, stop); err != nil {
		cancel()
		wk.waitRunning()
		return wk.result(), err
	}
	return wk.result(), nil
}

// walk is the state of one Walk, owned by the scheduler goroutine. Tasks
// are numbered by priority (rank): rank 0 is the heaviest task, ties broken
// by id, so the ready queues compare plain integers.
type walk struct {
	w           *Walker
	now         func() time.Time
	concurrency int

	tasks   []*Task   // by rank
	states  []State   // by rank
	inFrom  []int32   // rank of each incoming edge's predecessor, task by task, in Task.In order
	inOff   []int32   // task k's edges are inFrom[inOff[k]:inOff[k+1]]
	passes  []bool    // per incoming edge: a failure of its predecessor does not skip the task; nil if none does
	succ    []int32   // successors' ranks, one per edge
	sucOff  []int32   // task k's successors are succ[sucOff[k]:sucOff[k+1]]
	limOf   []int32   // the limits each task takes, in kind and name order
	limOff  []int32   // task k's limits are limOf[limOff[k]:limOff[k+1]]
	limits  []limit   // every Limit of the walk, once
	earlier [][]int32 // per task: ranks of its Earlier instances; nil if none
	wait    []int32   // per task: edges whose predecessor has not finished and been persisted
	decide  []int32   // tasks whose predecessors have all finished, not yet decided
	ready   rankHeap  // tasks decided to run, not yet started

	// Batching (batch.go), all nil unless RunBatch is set and a Group
	// holds two tasks or more.
	groupOf  []int32    // per task: its group's index, -1 if it never batches
	groups   []rankHeap // per group: its tasks decided to run, some stale (gather)
	taken    []bool     // per task: taken for a batch; its entries in ready and parked heaps are stale
	limStamp []uint32   // per limit: the batch being formed holds it when equal to stamp
	stamp    uint32

	left     int // tasks not finished
	running  int
	stopping bool
	err      error // the Persist error that aborts the walk

	runCtx  context.Context
	done    chan ran
	inline  []ran     // outcomes of tasks run on the scheduler's goroutine, not yet completed
	yielded time.Time // when the scheduler last yielded (yield)
}

// ran is a finished Run, reported back to the scheduler, or a finished
// RunBatch: then b holds its members and their outcomes.
type ran struct {
	rank    int32
	outcome Outcome
	b       *batch
}

// limit is the walk's state of one Limit: at most capacity tasks hold it
// at once.
type limit struct {
	capacity, used int
	parked         rankHeap // tasks refused by this limit, waiting for a unit
}

func newWalk(w *Walker, tasks []Task, initial map[string]State) (*walk, error) {
	n := len(tasks)
	wk := &walk{
		w:           w,
		now:         w.Now,
		concurrency: w.Concurrency,
		tasks:       make([]*Task, n),
		states:      make([]State, n),
	}
	if wk.now == nil {
		wk.now = time.Now
	}
	if wk.concurrency <= 0 {
		wk.concurrency = 10
	}
	// One slot per possible runner: a finishing Run never waits for the
	// scheduler, even while it is aborting.
	wk.done = make(chan ran, wk.concurrency)

	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ta, tb := &tasks[a], &tasks[b]
		if ta.Weight != tb.Weight {
			if ta.Weight > tb.Weight {
				return -1
			}
			return 1
		}
		return strings.Compare(ta.ID, tb.ID)
	})
	rank := make(map[string]int32, n)
	for k, i := range order {
		t := &tasks[i]
		if _, dup := rank[t.ID]; dup {
			return nil, fmt.Errorf("%w: two tasks are named %q", ErrDuplicateTask, t.ID)
		}
		rank[t.ID] = int32(k)
		wk.tasks[k] = t
	}

	if err := wk.link(rank); err != nil {
		return nil, err
	}
	for k, t := range wk.tasks {
		for _, id := range t.Earlier {
			r, ok := rank[id]
			if !ok {
				return nil, fmt.Errorf("%w: task %q names earlier instance %q", ErrUnknownPredecessor, t.ID, id)
			}
			if wk.earlier == nil {
				wk.earlier = make([][]int32, len(wk.tasks))
			}
			wk.earlier[k] = append(wk.earlier[k], r)
		}
	}
	if err := wk.checkAcyclic(); err != nil {
		return nil, err
	}
	if err := wk.buildLimits(); err != nil {
		return nil, err
	}
	wk.buildGroups()
	wk.restore(initial)
	return wk, nil
}

// link resolves the edges into rank-indexed incoming and successor lists,
// counts the predecessors each task waits for, and marks the edges that a
// failure passes (see passes).
func (wk *walk) link(rank map[string]int32) error {
	n := len(wk.tasks)
	wk.inOff = make([]int32, n+1)
	edges := 0
	for k, t := range wk.tasks {
		edges += len(t.In)
		wk.inOff[k+1] = int32(edges)
	}
	wk.inFrom = make([]int32, edges)
	wk.wait = make([]int32, n)
	outdeg := make([]int32, n+1)
	tolerant := false
	for k, t := range wk.tasks {
		for j, e := range t.In {
			p, ok := rank[e.From]
			if !ok {
				return fmt.Errorf("%w: task %q comes after %q, which is not in the walk", ErrUnknownPredecessor, t.ID, e.From)
			}
			wk.inFrom[int(wk.inOff[k])+j] = p
			outdeg[p+1]++
			if e.On&OnError != 0 {
				tolerant = true
			}
		}
		wk.wait[k] = int32(len(t.In))
	}

	// Successors, grouped by predecessor (counting sort on the ranks).
	wk.sucOff = outdeg
	for k := 1; k <= n; k++ {
		wk.sucOff[k] += wk.sucOff[k-1]
	}
	wk.succ = make([]int32, edges)
	fill := slices.Clone(wk.sucOff[:n])
	for k := range wk.tasks {
		for _, p := range wk.inFrom[wk.inOff[k]:wk.inOff[k+1]] {
			wk.succ[fill[p]] = int32(k)
			fill[p]++
		}
	}

	if !tolerant {
		return nil
	}
	// A failure is let through per predecessor, not per edge: when edges
	// join a predecessor to a task with both OnSuccess and OnError, the
	// OnError edge is there to react to its failure. stamp[p] == k+1
	// marks p as such a predecessor of task k, so the marking stays linear
	// in the number of edges even for a sink with thousands of them.
	wk.passes = make([]bool, edges)
	stamp := make([]int32, n)
	for k, t := range wk.tasks {
		off := int(wk.inOff[k])
		marked := false
		for j, e := range t.In {
			if e.On&OnError != 0 {
				stamp[wk.inFrom[off+j]] = int32(k + 1)
				marked = true
			}
		}
		if !marked {
			continue
		}
		for j := range t.In {
			wk.passes[off+j] = stamp[wk.inFrom[off+j]] == int32(k+1)
		}
	}
	return nil
}

// checkAcyclic runs Kahn's algorithm on a copy of the wait counters; the
// tasks it never reaches lie on or behind a cycle, and one cycle among them
// is named in the error.
func (wk *walk) checkAcyclic() error {
	wait := slices.Clone(wk.wait)
	queue := make([]int32, 0, len(wk.tasks))
	for k, c := range wait {
		if c == 0 {
			queue = append(queue, int32(k))
		}
	}
	for i := 0; i < len(queue); i++ {
		for _, s := range wk.succ[wk.sucOff[queue[i]]:wk.sucOff[queue[i]+1]] {
			if wait[s]--; wait[s] == 0 {
				queue = append(queue, s)
			}
		}
	}
	if len(queue) == len(wk.tasks) {
		return nil
	}
	// Every unreached task has an unreached predecessor, so walking
	// backwards through unreached predecessors must come back to a task
	// already seen; the tasks from there on form a cycle.
	k := int32(-1)
	for i, c := range wait {
		if c > 0 {
			k = int32(i)
			break
		}
	}
	seen := map[int32]int{}
	var path []int32
	for {
		if at, ok := seen[k]; ok {
			path = path[at:]
			break
		}
		seen[k] = len(path)
		path = append(path, k)
		for _, p := range wk.inFrom[wk.inOff[k]:wk.inOff[k+1]] {
			if wait[p] > 0 {
				k = p
				break
			}
		}
	}
	// path runs against the edges; print it along them, closing the loop.
	names := make([]string, 0, len(path)+1)
	for i := len(path) - 1; i >= 0; i-- {
		names = append(names, wk.tasks[path[i]].ID)
	}
	names = append(names, names[0])
	return fmt.Errorf("%w: %s", ErrTaskCycle, strings.Join(names, " -> "))
}

// buildLimits gives every Limit of the walk its state, with the smallest
// count any task gives it, and lists each task's limits in kind and name
// order.
func (wk *walk) buildLimits() error {
	// By kind, then name: a map keyed by a string alone hashes faster.
	byKind := map[LimitKind]map[string]int32{}
	var sorted []Limit // one task's limits, reused: the tasks are not the walker's to modify
	wk.limOff = make([]int32, len(wk.tasks)+1)
	for k, t := range wk.tasks {
		sorted = append(sorted[:0], t.Limits...)
		slices.SortFunc(sorted, Limit.compare)
		for i, l := range sorted {
			if l.Count < 1 {
				return fmt.Errorf("%w: task %q has %s with a count of %d: want at least 1", ErrBadLimit, t.ID, l, l.Count)
			}
			if i > 0 && sorted[i-1].compare(l) == 0 {
				return fmt.Errorf("%w: task %q names %s twice", ErrBadLimit, t.ID, l)
			}
			byName := byKind[l.Kind]
			if byName == nil {
				byName = map[string]int32{}
				byKind[l.Kind] = byName
			}
			id, ok := byName[l.Name]
			if !ok {
				id = int32(len(wk.limits))
				wk.limits = append(wk.limits, limit{capacity: l.Count})
				byName[l.Name] = id
			}
			wk.limits[id].capacity = min(wk.limits[id].capacity, l.Count)
			wk.limOf = append(wk.limOf, id)
		}
		wk.limOff[k+1] = int32(len(wk.limOf))
	}
	return nil
}

// restore applies the recorded states: finished tasks count as finished
// (already persisted, so their successors need not wait), the others
// start over as PENDING. Then every task with nothing to wait for is queued
// for a decision.
func (wk *walk) restore(initial map[string]State) {
	wk.left = len(wk.tasks)
	for k, t := range wk.tasks {
		if st, ok := initial[t.ID]; ok && st.Status.Finished() {
			wk.states[k] = st
			wk.left--
		} else {
			wk.states[k].Status = StatusPending
		}
	}
	for k := range wk.tasks {
		if wk.states[k].Status.Finished() {
			for _, s := range wk.succ[wk.sucOff[k]:wk.sucOff[k+1]] {
				wk.wait[s]--
			}
		}
	}
	for k := range wk.tasks {
		if wk.wait[k] == 0 && !wk.states[k].Status.Finished() {
			wk.decide = append(wk.decide, int32(k))
		}
	}
}

// loop is the scheduler. It returns when every task is finished, or with
// the Persist error that aborted the walk.
func (wk *walk) loop(ctx context.Context, stop <-chan struct{}) error {
	ctxDone := ctx.Done()
	for {
		wk.settle()
		if wk.err != nil {
			return wk.err
		}
		if !wk.stopping {
			// A stop that came while the scheduler was busy must win over
			// starting more tasks.
			select {
			case <-stop:
				wk.halt()
			case <-ctxDone:
				wk.halt()
			default:
				wk.startReady()
			}
			if wk.err != nil {
				return wk.err
			}
			if wk.stopping || len(wk.decide) > 0 {
				continue // settle what halting, or a task skipped at its start, decided
			}
		}
		if len(wk.inline) > 0 {
			batch := wk.inline
			wk.inline = nil
			if ctx.Err() != nil {
				wk.halt() // as for a completion that comes with a kill, below
			}
			wk.completeMany(batch)
			continue
		}
		if wk.running == 0 {
			if wk.left == 0 {
				return nil
			}
			// Unreachable while the walker is correct: report rather than hang.
			return fmt.Errorf("walk: internal error: walk stalled with %d tasks unfinished and none running", wk.left)
		}
		if wk.w.Sync != nil {
			wk.w.Sync()
		}
		if wk.stopping {
			wk.complete(<-wk.done)
			continue
		}
		select {
		case r := <-wk.done:
			if ctx.Err() != nil {
				// The kill came with this completion (a task it ended):
				// halting first makes the task's successors SKIPPED
				// stopped, which resume runs, not "upstream failed".
				wk.halt()
			}
			wk.completeMany([]ran{r})
		case <-stop:
			wk.halt()
		case <-ctxDone:
			wk.halt()
		}
	}
}

// settle decides every queued task, and the tasks that decisions finish in
// turn, until none is left or Persist failed.
func (wk *walk) settle() {
	for len(wk.decide) > 0 && wk.err == nil {
		k := wk.decide[len(wk.decide)-1]
		wk.decide = wk.decide[:len(wk.decide)-1]
		wk.decideTask(k)
	}
}

// decideTask applies the truth table to task k, whose predecessors have all
// finished: it is skipped, or queued to run.
func (wk *walk) decideTask(k int32) {
	if wk.stopping {
		wk.finish(k, State{Status: StatusSkipped, Reason: ReasonStopped})
		return
	}
	t := wk.tasks[k]
	off := int(wk.inOff[k])
	triggered := false
	for j := range t.In {
		p := wk.inFrom[off+j]
		pst := &wk.states[p]
		if root, failed := pst.FailedRoot(wk.tasks[p].ID); failed && (wk.passes == nil || !wk.passes[off+j]) {
			wk.finish(k, State{Status: StatusSkipped, Reason: upstreamPrefix + root})
			return
		}
		if on := t.In[j].On; on != 0 && !triggered {
			triggered = wk.fires(p, on)
		}
	}
	if t.Reactive && !triggered {
		wk.finish(k, State{Status: StatusSkipped, Reason: ReasonNotTriggered})
		return
	}
	wk.ready.push(k)
	if wk.groupOf != nil {
		wk.queueGroup(k)
	}
}

// fires reports whether an edge from task p with predicate on triggers its
// task: on holds p's own final status or that of one of p's earlier
// instances.
func (wk *walk) fires(p int32, on Trigger) bool {
	if on.Has(wk.states[p].Status) {
		return true
	}
	if wk.earlier != nil {
		for _, q := range wk.earlier[p] {
			if on.Has(wk.states[q].Status) {
				return true
			}
		}
	}
	return false
}

// startReady starts ready tasks, heaviest first, while Concurrency allows.
// A task refused by a limit is parked on it, and lighter tasks get their
// turn.
func (wk *walk) startReady() {
	for wk.running < wk.concurrency && len(wk.ready) > 0 {
		k := wk.ready.pop()
		if wk.isTaken(k) {
			continue
		}
		lims := wk.limOf[wk.limOff[k]:wk.limOff[k+1]]
		if l := wk.refusing(lims); l >= 0 {
			wk.limits[l].parked.push(k)
			// Task k may have been woken by another of its limits that
			// still has a free unit; hand that wake-up on, or the tasks
			// parked there would wait for a release that already happened.
			for _, l := range lims {
				if lim := &wk.limits[l]; lim.used < lim.capacity {
					wk.wake(lim)
				}
			}
			continue
		}
		if wk.groupOf != nil && wk.groupOf[k] >= 0 {
			if !wk.startGroup(k) {
				return
			}
			continue
		}
		wk.states[k] = State{Status: StatusInProgress, Start: wk.now()}
		if end, ok := wk.begin(k); !ok {
			return
		} else if end.Status != "" {
			wk.finish(k, end)
			continue
		}
		for _, l := range lims {
			wk.limits[l].used++
		}
		wk.running++
		wk.launch(k)
	}
}

// refusing returns the first of lims with no free unit, or -1.
func (wk *walk) refusing(lims []int32) int32 {
	for _, l := range lims {
		if lim := &wk.limits[l]; lim.used >= lim.capacity {
			return l
		}
	}
	return -1
}

func (wk *walk) launch(k int32) {
	t, run, ctx, done := wk.tasks[k], wk.w.Run, wk.runCtx, wk.done
	if t.Inline {
		wk.inline = append(wk.inline, ran{rank: k, outcome: runTask(ctx, run, t)})
		return
	}
	if wk.w.Sync != nil && (len(t.In) > 0 || len(t.Earlier) > 0) {
		wk.w.Sync()
	}
	if wk.running == 1 && len(wk.ready) == 0 {
		// The task is alone: until it ends, no other can become ready
		// or start, and the scheduler would only wait for it. Running it
		// here spares a goroutine and the two wake-ups that hand its
		// outcome back, which on a chain are most of what solar spends
		// besides the script. A stop still reaches it through ctx.
		wk.inline = append(wk.inline, ran{rank: k, outcome: runTask(ctx, run, t)})
		wk.yield()
		return
	}
	go func() {
		done <- ran{rank: k, outcome: runTask(ctx, run, t)}
	}()
}

// yieldEvery bounds how long the scheduler runs lone tasks without
// passing through the Go scheduler. A goroutine that has not for 10 ms
// is preempted by the runtime's monitor thread with a signal, taking its
// processor from it if it is in a system call (waiting for a script), and
// each such preemption keeps that thread waking every 20 µs for the next
// millisecond or more. Yielding before that spares both.
const yieldEvery = 5 * time.Millisecond

// yield lets other goroutines run once yieldEvery has passed since the
// scheduler last did, or since the walk began.
func (wk *walk) yield() {
	if now := time.Now(); now.Sub(wk.yielded) >= yieldEvery {
		yieldNow()
		wk.yielded = now
	}
}

// yieldNow passes through Go's scheduler; tests count the calls.
var yieldNow = runtime.Gosched

// runTask calls run, turning a panic into the task's error so one broken
// handler cannot take the walk, and the state it has not persisted, down.
func runTask(ctx context.Context, run func(context.Context, *Task) Outcome, t *Task) (o Outcome) {
	defer func() {
		if v := recover(); v != nil {
			o = Outcome{Err: fmt.Errorf("%w: %s: %v", ErrTaskPanicked, t.ID, v), Attempts: 1}
		}
	}()
	return run(ctx, t)
}

// completeMany completes batch and every other Run that has finished by
// now, persisting their final states together when PersistBatch is set:
// one durable write for all the completions that arrived while the
// scheduler was busy (group commit). Their successors are released only
// after it.
func (wk *walk) completeMany(batch []ran) {
	if wk.w.PersistBatch == nil {
		for i, r := range batch {
			if wk.err != nil {
				// Persist failed: the rest are waited for as running.
				wk.inline = append(wk.inline, batch[i:]...)
				return
			}
			wk.complete(r)
		}
		return
	}
	for more := true; more; {
		select {
		case r := <-wk.done:
			batch = append(batch, r)
		default:
			more = false
		}
	}
	ids := make([]string, 0, len(batch))
	states := make([]State, 0, len(batch))
	ranks := make([]int32, 0, len(batch))
	now := wk.now()
	end := func(k int32, o Outcome) {
		st := FinalState(wk.states[k], o)
		st.End = now
		wk.states[k] = st
		ids, states, ranks = append(ids, wk.tasks[k].ID), append(states, st), append(ranks, k)
	}
	for _, r := range batch {
		if r.b == nil {
			wk.release(r.rank)
			end(r.rank, r.outcome)
			continue
		}
		wk.releaseBatch(r.b)
		for i, m := range r.b.members {
			end(m, r.b.outs[i])
		}
	}
	if err := wk.w.PersistBatch(ids, states); err != nil {
		wk.err = fmt.Errorf("persist the final states of %s: %w", strings.Join(ids, ", "), err)
		return
	}
	for i, k := range ranks {
		if wk.w.Progress != nil {
			wk.w.Progress(ids[i], states[i])
		}
		wk.markFinished(k)
	}
}

// release returns the limits of a task whose Run returned.
func (wk *walk) release(k int32) {
	wk.running--
	for _, l := range wk.limOf[wk.limOff[k]:wk.limOff[k+1]] {
		lim := &wk.limits[l]
		lim.used--
		wk.wake(lim)
	}
}

// markFinished counts task k, whose final state is persisted, as finished: its
// successors stop waiting for it.
func (wk *walk) markFinished(k int32) {
	wk.left--
	for _, s := range wk.succ[wk.sucOff[k]:wk.sucOff[k+1]] {
		if wk.wait[s]--; wk.wait[s] == 0 && !wk.states[s].Status.Finished() {
			wk.decide = append(wk.decide, s)
		}
	}
}

// complete returns a finished task's limits and records its final state.
func (wk *walk) complete(r ran) {
	if r.b != nil {
		wk.completeBatch(r.b)
		return
	}
	wk.release(r.rank)
	wk.finish(r.rank, FinalState(wk.states[r.rank], r.outcome))
}

// FinalState is the state a task in st ends in once its Run returned o
// (the walk's rule, for schedulers that are not a Walker).
func FinalState(st State, o Outcome) State {
	st.Attempts = max(o.Attempts, 1)
	switch {
	case o.Err != nil:
		st.Status, st.Err = StatusError, o.Err.Error()
	case o.Changed:
		st.Status, st.Changed = StatusSuccess, true
	default:
		st.Status = StatusNoop
	}
	return st
}

// finish records task k's final state and, once it is persisted, lets its
// successors stop waiting for it.
func (wk *walk) finish(k int32, st State) {
	st.End = wk.now()
	wk.states[k] = st
	if !wk.record(k) {
		return
	}
	wk.markFinished(k)
}

// begin records that task k starts, through Begin when set; ok false
// means the walk is aborting, a non-zero end the final state the task
// ends in without running.
func (wk *walk) begin(k int32) (end State, ok bool) {
	if wk.w.Begin == nil {
		return State{}, wk.record(k)
	}
	id, st := wk.tasks[k].ID, wk.states[k]
	end, err := wk.w.Begin(id, st)
	switch {
	case err != nil:
		wk.err = fmt.Errorf("persist %s of task %q: %w", st.Status, id, err)
		return State{}, false
	case end.Status != "" && end.Status != StatusSkipped && end.Status != StatusNoop:
		// SUCCESS or ERROR without a run would be a lie to the task's
		// successors and to the report.
		wk.err = fmt.Errorf("begin of task %q ended it %s: only SKIPPED or NOOP end a task that does not run", id, end.Status)
		return State{}, false
	}
	if end.Status == "" && wk.w.Progress != nil {
		wk.w.Progress(id, st)
	}
	return end, true
}

// record persists task k's current state and reports it; false means
// Persist failed and the walk is aborting.
func (wk *walk) record(k int32) bool {
	id, st := wk.tasks[k].ID, wk.states[k]
	if wk.w.Persist != nil {
		if err := wk.w.Persist(id, st); err != nil {
			wk.err = fmt.Errorf("persist %s of task %q: %w", st.Status, id, err)
			return false
		}
	}
	if wk.w.Progress != nil {
		wk.w.Progress(id, st)
	}
	return true
}

// halt stops the walk softly: every task waiting for a start or a limit is
// skipped, and from now on every decision is a skip (decideTask).
func (wk *walk) halt() {
	wk.stopping = true
	stopped := State{Status: StatusSkipped, Reason: ReasonStopped}
	for len(wk.ready) > 0 && wk.err == nil {
		if k := wk.ready.pop(); !wk.isTaken(k) {
			wk.finish(k, stopped)
		}
	}
	for l := range wk.limits {
		for len(wk.limits[l].parked) > 0 && wk.err == nil {
			if k := wk.limits[l].parked.pop(); !wk.isTaken(k) {
				wk.finish(k, stopped)
			}
		}
	}
}

// waitRunning waits for the tasks still in Run after an abort, keeping
// their outcomes in memory only: Persist has already failed.
func (wk *walk) waitRunning() {
	for _, r := range wk.inline {
		wk.endInMemory(r)
		wk.running--
	}
	wk.inline = nil
	for ; wk.running > 0; wk.running-- {
		wk.endInMemory(<-wk.done)
	}
}

func (wk *walk) result() map[string]State {
	out := make(map[string]State, len(wk.tasks))
	for k, t := range wk.tasks {
		out[t.ID] = wk.states[k]
	}
	return out
}

// rankHeap is a min-heap of task ranks: the heaviest task on top.
type rankHeap []int32

func (h *rankHeap) push(k int32) {
	*h = append(*h, k)
	a := *h
	i := len(a) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if a[parent] <= a[i] {
			break
		}
		a[parent], a[i] = a[i], a[parent]
		i = parent
	}
}

func (h *rankHeap) pop() int32 {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(a) {
			break
		}
		if c+1 < len(a) && a[c+1] < a[c] {
			c++
		}
		if a[i] <= a[c] {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}
