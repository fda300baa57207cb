package walk

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errBoom = errors.New("boom")

// Outcomes a test task's Run can be given.
var (
	changed = Outcome{Changed: true}
	noop    = Outcome{}
	failure = Outcome{Err: errBoom}
)

func walkTask(id string, in ...InEdge) Task  { return Task{ID: id, In: in} }
func reactTask(id string, in ...InEdge) Task { return Task{ID: id, Reactive: true, In: in} }
func afterEdge(from string) InEdge           { return InEdge{From: from} }
func onEdge(from string, on Trigger) InEdge  { return InEdge{From: from, On: on} }

// The react rules' events as orch gives them to the walker (its triggerOf,
// tested there against events.Event.Matches).
const (
	onChanged = OnSuccess
	onOK      = OnNoop
	onSuccess = OnSuccess | OnNoop
	onFailed  = OnError
	onAny     = OnSuccess | OnNoop | OnError
)

func nodeLimit(name string, count int) Limit { return Limit{Kind: LimitNode, Name: name, Count: count} }
func semaLimit(name string, count int) Limit { return Limit{Kind: LimitSema, Name: name, Count: count} }

// nodeOf is the name of t's node limit, "" if it has none.
func nodeOf(t *Task) string {
	for _, l := range t.Limits {
		if l.Kind == LimitNode {
			return l.Name
		}
	}
	return ""
}

type persistCall struct {
	id string
	st State
}

// walkHarness runs a walk with scripted outcomes and records what the
// walker did. It takes no lock around calls: the walker promises to call
// Persist and Progress from one goroutine at a time, and -race checks it.
type walkHarness struct {
	w        Walker
	outcomes map[string]Outcome // by task id; a task not listed changes something
	runs     map[string]*atomic.Int32
	calls    []persistCall
	progress []persistCall
	// failPersist, if set, makes Persist fail for the call it returns an
	// error for.
	failPersist func(id string, st State) error
}

func newWalkHarness(tasks []Task, outcomes map[string]Outcome) *walkHarness {
	h := &walkHarness{outcomes: outcomes, runs: make(map[string]*atomic.Int32, len(tasks))}
	for _, t := range tasks {
		h.runs[t.ID] = new(atomic.Int32)
	}
	h.w = Walker{
		Run: func(ctx context.Context, t *Task) Outcome {
			h.runs[t.ID].Add(1)
			if o, ok := h.outcomes[t.ID]; ok {
				return o
			}
			return changed
		},
		Persist: func(id string, st State) error {
			if h.failPersist != nil {
				if err := h.failPersist(id, st); err != nil {
					return err
				}
			}
			h.calls = append(h.calls, persistCall{id, st})
			return nil
		},
		Progress: func(id string, st State) {
			h.progress = append(h.progress, persistCall{id, st})
		},
	}
	return h
}

// wrapRun runs f inside the harness's Run, so runs are still counted.
func (h *walkHarness) wrapRun(f func(ctx context.Context, t *Task) Outcome) {
	inner := h.w.Run
	h.w.Run = func(ctx context.Context, t *Task) Outcome {
		if o := f(ctx, t); o != (Outcome{}) {
			h.runs[t.ID].Add(1)
			return o
		}
		return inner(ctx, t)
	}
}

func (h *walkHarness) ran(id string) int32 { return h.runs[id].Load() }

// walkWithin runs Walk and fails the test if it does not return in time,
// which is how a deadlock or a stalled scheduler shows.
func walkWithin(t *testing.T, w *Walker, ctx context.Context, tasks []Task, initial map[string]State, stop <-chan struct{}) (map[string]State, error) {
	t.Helper()
	type result struct {
		states map[string]State
		err    error
	}
	done := make(chan result, 1)
	go func() {
		states, err := w.Walk(ctx, tasks, initial, stop)
		done <- result{states, err}
	}()
	select {
	case r := <-done:
		return r.states, r.err
	case <-time.After(20 * time.Second):
		t.Fatal("Walk did not return within 20s: deadlock or stall")
		return nil, nil
	}
}

func (h *walkHarness) mustWalk(t *testing.T, tasks []Task, initial map[string]State) map[string]State {
	t.Helper()
	states, err := walkWithin(t, &h.w, context.Background(), tasks, initial, nil)
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return states
}

// meeting lets n tasks wait for each other: a task that arrives returns
// true once all n have arrived, false if that took too long. Tasks that
// meet were provably in Run at the same time.
type meeting struct {
	n       int
	arrived atomic.Int32
	all     chan struct{}
}

func newMeeting(n int) *meeting { return &meeting{n: n, all: make(chan struct{})} }

func (m *meeting) arrive() bool {
	if int(m.arrived.Add(1)) == m.n {
		close(m.all)
	}
	select {
	case <-m.all:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// gauge tracks how many holders something has at once and the most seen.
type gauge struct{ cur, peak atomic.Int32 }

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.cur.Add(-1) }

// checkPersistOrder asserts the crash-safety contract on a recorded
// sequence of Persist calls: every task reaches exactly one final state,
// INPROGRESS (if any) comes before it, and for every edge u -> v the final
// state of u is persisted before v is started or finished.
func checkPersistOrder(t *testing.T, tasks []Task, calls []persistCall) {
	t.Helper()
	final := map[string]int{}
	started := map[string]int{}
	for i, c := range calls {
		switch {
		case c.st.Status == StatusInProgress:
			if _, dup := started[c.id]; dup {
				t.Errorf("task %s persisted INPROGRESS twice", c.id)
			}
			started[c.id] = i
		case c.st.Status.Finished():
			if _, dup := final[c.id]; dup {
				t.Errorf("task %s persisted a final state twice", c.id)
			}
			final[c.id] = i
		default:
			t.Errorf("task %s persisted with status %q", c.id, c.st.Status)
		}
	}
	for _, task := range tasks {
		f, ok := final[task.ID]
		if !ok {
			t.Errorf("task %s has no final state persisted", task.ID)
			continue
		}
		if s, ok := started[task.ID]; ok && s > f {
			t.Errorf("task %s: INPROGRESS persisted after its final state", task.ID)
		}
		for _, e := range task.In {
			uf, ok := final[e.From]
			if !ok {
				continue
			}
			if s, ok := started[task.ID]; ok && s < uf {
				t.Errorf("edge %s -> %s: %s started (call %d) before %s's final state was persisted (call %d)", e.From, task.ID, task.ID, s, e.From, uf)
			}
			if f < uf {
				t.Errorf("edge %s -> %s: %s's final state persisted before %s's", e.From, task.ID, task.ID, e.From)
			}
		}
	}
}

func TestWalkTruthTable(t *testing.T) {
	// Each way a predecessor P can end, and the tasks that make it end so.
	preds := []struct {
		name     string
		tasks    []Task
		outcomes map[string]Outcome
		status   Status
	}{
		{"SUCCESS", []Task{walkTask("P")}, map[string]Outcome{"P": changed}, StatusSuccess},
		{"NOOP", []Task{walkTask("P")}, map[string]Outcome{"P": noop}, StatusNoop},
		{"ERROR", []Task{walkTask("P")}, map[string]Outcome{"P": failure}, StatusError},
		{"SKIPPED-not-triggered", []Task{reactTask("P")}, nil, StatusSkipped},
		{"SKIPPED-upstream-failed", []Task{walkTask("R"), walkTask("P", afterEdge("R"))}, map[string]Outcome{"R": failure}, StatusSkipped},
	}
	const (
		run = "run"
		nt  = ReasonNotTriggered
		ufP = "upstream failed: P"
		ufR = "upstream failed: R" // the root, not the skipped P in between
	)
	// What happens to S, subscribed to P by one edge, in the order of preds.
	cells := []struct {
		reactive bool
		edge     InEdge
		want     [5]string
	}{
		{true, onEdge("P", onChanged), [5]string{run, nt, ufP, nt, ufR}},
		{true, onEdge("P", onOK), [5]string{nt, run, ufP, nt, ufR}},
		{true, onEdge("P", onSuccess), [5]string{run, run, ufP, nt, ufR}},
		{true, onEdge("P", onFailed), [5]string{nt, nt, run, nt, nt}},
		{true, onEdge("P", onAny), [5]string{run, run, run, nt, nt}},
		{true, afterEdge("P"), [5]string{nt, nt, ufP, nt, ufR}},
		{false, onEdge("P", onChanged), [5]string{run, run, ufP, run, ufR}},
		{false, onEdge("P", onOK), [5]string{run, run, ufP, run, ufR}},
		{false, onEdge("P", onSuccess), [5]string{run, run, ufP, run, ufR}},
		{false, onEdge("P", onFailed), [5]string{run, run, run, run, run}},
		{false, onEdge("P", onAny), [5]string{run, run, run, run, run}},
		{false, afterEdge("P"), [5]string{run, run, ufP, run, ufR}},
	}
	for _, c := range cells {
		kind, edge := "staged", "after"
		if c.reactive {
			kind = "reactive"
		}
		if c.edge.On != 0 {
			edge = "on-" + c.edge.On.String()
		}
		for i, p := range preds {
			t.Run(fmt.Sprintf("%s/%s/P=%s", kind, edge, p.name), func(t *testing.T) {
				s := Task{ID: "S", Reactive: c.reactive, In: []InEdge{c.edge}}
				tasks := append(slices.Clone(p.tasks), s)
				h := newWalkHarness(tasks, p.outcomes)
				states := h.mustWalk(t, tasks, nil)
				if got := states["P"].Status; got != p.status {
					t.Fatalf("setup: P ended %s, want %s", got, p.status)
				}
				got := states["S"]
				if c.want[i] == run {
					if got.Status != StatusSuccess || h.ran("S") != 1 {
						t.Errorf("S = %+v after %d runs, want it to run once", got, h.ran("S"))
					}
					return
				}
				if got.Status != StatusSkipped || got.Reason != c.want[i] || h.ran("S") != 0 {
					t.Errorf("S = %s %q after %d runs, want SKIPPED %q and no run", got.Status, got.Reason, h.ran("S"), c.want[i])
				}
			})
		}
	}
}

func TestWalkNotTriggeredIsFinishedNotFailed(t *testing.T) {
	tasks := []Task{
		walkTask("A"),
		reactTask("B", onEdge("A", onChanged)), // A changes nothing
		reactTask("C", onEdge("B", onAny)),     // B emits nothing
		walkTask("D", afterEdge("B")),          // only ordered after B
		reactTask("E", onEdge("D", onChanged)),
	}
	h := newWalkHarness(tasks, map[string]Outcome{"A": noop})
	states := h.mustWalk(t, tasks, nil)
	want := map[string]string{
		"A": "NOOP",
		"B": "SKIPPED not triggered",
		"C": "SKIPPED not triggered",
		"D": "SUCCESS",
		"E": "SUCCESS",
	}
	for id, w := range want {
		if got := strings.TrimSpace(string(states[id].Status) + " " + states[id].Reason); got != w {
			t.Errorf("%s = %q, want %q", id, got, w)
		}
	}
}

func TestWalkUpstreamFailure(t *testing.T) {
	tasks := []Task{
		walkTask("A"),
		walkTask("B", afterEdge("A")),
		walkTask("C", onEdge("B", onChanged)),
		reactTask("D", onEdge("C", onSuccess)),
		// A failed edge from the root itself reacts to the failure.
		walkTask("E", onEdge("A", onFailed)),
		reactTask("F", onEdge("A", onFailed)),
		// An any edge from a skipped task lets the failure through, but a
		// skipped task emits nothing: staged G runs, reactive G2 does not.
		walkTask("G", onEdge("C", onAny)),
		reactTask("G2", onEdge("C", onAny)),
		// Two edges from the same failed predecessor: the failed one is
		// there to react to the failure, so H runs.
		reactTask("H", onEdge("A", onChanged), onEdge("A", onFailed)),
		// A failed edge does not excuse a failure on another edge.
		walkTask("X"),
		walkTask("I", onEdge("A", onFailed), afterEdge("X")),
		reactTask("J", onEdge("A", onFailed), onEdge("X", onChanged)),
	}
	h := newWalkHarness(tasks, map[string]Outcome{"A": failure, "X": failure})
	for i := 0; i < 20; i++ {
		h.calls = nil
		for _, c := range h.runs {
			c.Store(0)
		}
		states := h.mustWalk(t, tasks, nil)
		want := map[string]string{
			"A":  "ERROR",
			"B":  "SKIPPED upstream failed: A",
			"C":  "SKIPPED upstream failed: A",
			"D":  "SKIPPED upstream failed: A",
			"E":  "SUCCESS",
			"F":  "SUCCESS",
			"G":  "SUCCESS",
			"G2": "SKIPPED not triggered",
			"H":  "SUCCESS",
			"X":  "ERROR",
			"I":  "SKIPPED upstream failed: X",
			"J":  "SKIPPED upstream failed: X",
		}
		for id, w := range want {
			if got := strings.TrimSpace(string(states[id].Status) + " " + states[id].Reason); got != w {
				t.Errorf("%s = %q, want %q", id, got, w)
			}
		}
		if got := states["A"].Err; got != "boom" {
			t.Errorf("A.Err = %q, want %q", got, "boom")
		}
		for _, id := range []string{"B", "C", "D", "I", "J"} {
			if n := h.ran(id); n != 0 {
				t.Errorf("%s ran %d times, want 0", id, n)
			}
		}
		checkPersistOrder(t, tasks, h.calls)
	}
}

func TestWalkSeveralMatchedEventsRunOnce(t *testing.T) {
	tasks := []Task{
		walkTask("A"),
		walkTask("B"),
		reactTask("S", onEdge("A", onChanged), onEdge("A", onSuccess), onEdge("A", onAny), onEdge("B", onChanged)),
		walkTask("T", onEdge("A", onChanged), onEdge("B", onAny)),
	}
	for i := 0; i < 20; i++ {
		h := newWalkHarness(tasks, nil)
		states := h.mustWalk(t, tasks, nil)
		for _, id := range []string{"S", "T"} {
			if n := h.ran(id); n != 1 || states[id].Status != StatusSuccess {
				t.Fatalf("%s ran %d times and ended %s, want once and SUCCESS", id, n, states[id].Status)
			}
		}
	}
}

func TestWalkConcurrencyLimit(t *testing.T) {
	for _, limit := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("concurrency=%d", limit), func(t *testing.T) {
			for i := 0; i < 20; i++ {
				var tasks []Task
				for j := 0; j < 20; j++ {
					tasks = append(tasks, walkTask(fmt.Sprintf("t%02d", j)))
				}
				h := newWalkHarness(tasks, nil)
				h.w.Concurrency = limit
				var inRun gauge
				// The first `limit` tasks (by id) start together; meeting
				// proves the walker uses the whole limit.
				m := newMeeting(limit)
				h.wrapRun(func(ctx context.Context, task *Task) Outcome {
					inRun.enter()
					defer inRun.leave()
					if task.ID < fmt.Sprintf("t%02d", limit) && !m.arrive() {
						t.Errorf("%s: the first %d tasks did not run together", task.ID, limit)
					}
					time.Sleep(100 * time.Microsecond)
					return Outcome{}
				})
				h.mustWalk(t, tasks, nil)
				if p := int(inRun.peak.Load()); p != limit {
					t.Fatalf("at most %d tasks in Run at once, want exactly %d", p, limit)
				}
			}
		})
	}
}

func TestWalkPerNodeLimit(t *testing.T) {
	for _, perNode := range []int{1, 2} {
		t.Run(fmt.Sprintf("per-node=%d", perNode), func(t *testing.T) {
			for i := 0; i < 20; i++ {
				var tasks []Task
				for _, node := range []string{"n1", "n2"} {
					for _, c := range "abcde" {
						tasks = append(tasks, Task{ID: node + "-" + string(c), Limits: []Limit{nodeLimit(node, perNode)}})
					}
				}
				// Local tasks have no per-node limit.
				tasks = append(tasks, walkTask("local-1"), walkTask("local-2"), walkTask("local-3"))

				h := newWalkHarness(tasks, nil)
				type span struct {
					node       string
					start, end time.Time
				}
				var mu sync.Mutex
				var spans []span
				firsts := "ab"[:perNode]
				nodes := newMeeting(2 * perNode)
				locals := newMeeting(3)
				h.wrapRun(func(ctx context.Context, task *Task) Outcome {
					start := time.Now()
					switch {
					case nodeOf(task) == "":
						if !locals.arrive() {
							t.Errorf("%s: local tasks did not run in parallel", task.ID)
						}
					case strings.ContainsAny(task.ID[len(task.ID)-1:], firsts):
						if !nodes.arrive() {
							t.Errorf("%s: the first %d tasks of each node did not run together", task.ID, perNode)
						}
					}
					time.Sleep(200 * time.Microsecond)
					mu.Lock()
					spans = append(spans, span{nodeOf(task), start, time.Now()})
					mu.Unlock()
					return Outcome{}
				})
				h.mustWalk(t, tasks, nil)

				// At any instant at most perNode spans of a node are open.
				for _, node := range []string{"n1", "n2"} {
					type mark struct {
						at    time.Time
						delta int
					}
					var marks []mark
					for _, s := range spans {
						if s.node == node {
							marks = append(marks, mark{s.start, +1}, mark{s.end, -1})
						}
					}
					slices.SortFunc(marks, func(a, b mark) int {
						if c := a.at.Compare(b.at); c != 0 {
							return c
						}
						return a.delta - b.delta // an end before a start at the same instant
					})
					open := 0
					for _, m := range marks {
						if open += m.delta; open > perNode {
							t.Fatalf("node %s had %d tasks in Run at once, limit %d", node, open, perNode)
						}
					}
				}
			}
		})
	}
}

func TestWalkSemaphores(t *testing.T) {
	tests := []struct {
		name   string
		counts []int // one task per entry, named s0, s1..., holding semaphore "db" of that count
		limit  int   // the most holders of semaphore "db" allowed
	}{
		{"db:1 serializes", []int{1, 1, 1, 1}, 1},
		{"db:2 admits two", []int{2, 2, 2, 2, 2}, 2},
		{"smallest count wins", []int{3, 1, 3, 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				var tasks []Task
				for j, n := range tt.counts {
					tasks = append(tasks, Task{ID: fmt.Sprintf("s%d", j), Limits: []Limit{semaLimit("db", n)}})
				}
				// Tasks without the semaphore run beside its holders.
				others := []string{"x0", "x1", "x2"}
				for _, id := range others {
					tasks = append(tasks, walkTask(id))
				}
				h := newWalkHarness(tasks, nil)
				var db gauge
				m := newMeeting(1 + len(others)) // s0 and all the others
				h.wrapRun(func(ctx context.Context, task *Task) Outcome {
					if len(task.Limits) > 0 {
						db.enter()
						defer db.leave()
					}
					if task.ID == "s0" || task.ID[0] == 'x' {
						if !m.arrive() {
							t.Errorf("%s: tasks without the semaphore did not run beside its holder", task.ID)
						}
					}
					time.Sleep(200 * time.Microsecond)
					return Outcome{}
				})
				h.mustWalk(t, tasks, nil)
				if p := int(db.peak.Load()); p > tt.limit {
					t.Fatalf("%d tasks held db at once, limit %d", p, tt.limit)
				}
			}
		})
	}
}

func TestWalkSemaphoresInAnyOrderDoNotDeadlock(t *testing.T) {
	a1, b1, c2 := semaLimit("a", 1), semaLimit("b", 1), semaLimit("c", 2)
	orders := [][]Limit{{a1, b1}, {b1, a1}, {a1}, {b1}, {b1, a1, c2}}
	for i := 0; i < 50; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 0))
		var tasks []Task
		for j := 0; j < 40; j++ {
			tasks = append(tasks, Task{
				ID:     fmt.Sprintf("t%02d", j),
				Limits: orders[rng.IntN(len(orders))],
				Weight: rng.IntN(3),
			})
		}
		h := newWalkHarness(tasks, nil)
		var a, b gauge
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			for _, l := range task.Limits {
				switch l.Name {
				case "a":
					a.enter()
					defer a.leave()
				case "b":
					b.enter()
					defer b.leave()
				}
			}
			time.Sleep(time.Duration(rng2(task.ID)) * time.Microsecond)
			return Outcome{}
		})
		states := h.mustWalk(t, tasks, nil)
		for id, st := range states {
			if st.Status != StatusSuccess {
				t.Fatalf("%s ended %s", id, st.Status)
			}
		}
		if a.peak.Load() > 1 || b.peak.Load() > 1 {
			t.Fatalf("semaphore over its limit: a held by %d, b by %d", a.peak.Load(), b.peak.Load())
		}
	}
}

// rng2 spreads task run times without sharing a random source between
// goroutines.
func rng2(id string) int {
	n := 0
	for _, c := range id {
		n = n*31 + int(c)
	}
	return n % 50
}

func TestWalkNoHeadOfLineBlocking(t *testing.T) {
	for i := 0; i < 20; i++ {
		tasks := []Task{
			{ID: "heavy-1", Limits: []Limit{nodeLimit("n1", 1), semaLimit("s", 1)}, Weight: 3},
			{ID: "heavy-2", Limits: []Limit{nodeLimit("n1", 1)}, Weight: 2}, // waits for node n1
			{ID: "heavy-3", Limits: []Limit{semaLimit("s", 1)}, Weight: 2},
			{ID: "light", Limits: []Limit{nodeLimit("n2", 1)}, Weight: 1}, // must not wait behind them
		}
		h := newWalkHarness(tasks, nil)
		m := newMeeting(2)
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			if task.ID == "heavy-1" || task.ID == "light" {
				if !m.arrive() {
					t.Errorf("%s: light did not start while heavy-1 held n1 and s", task.ID)
				}
			}
			return Outcome{}
		})
		h.mustWalk(t, tasks, nil)
	}
}

// TestWalkFreedLimitIsNotLost covers a freed unit whose first claimant
// cannot use it: when A leaves node n1, T (heavier) is woken but still
// waits for semaphore s, which S holds; U, also parked on n1, must get n1
// now rather than after S and T.
func TestWalkFreedLimitIsNotLost(t *testing.T) {
	for i := 0; i < 20; i++ {
		tasks := []Task{
			{ID: "S", Weight: 20, Limits: []Limit{semaLimit("s", 1)}},
			{ID: "A", Weight: 10, Limits: []Limit{nodeLimit("n1", 1)}},
			{ID: "T", Weight: 9, Limits: []Limit{nodeLimit("n1", 1), semaLimit("s", 1)}},
			{ID: "U", Weight: 1, Limits: []Limit{nodeLimit("n1", 1)}},
		}
		h := newWalkHarness(tasks, nil)
		m := newMeeting(2)
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			if task.ID == "S" || task.ID == "U" {
				if !m.arrive() {
					t.Errorf("%s: U did not get node n1 while S held s", task.ID)
				}
			}
			return Outcome{}
		})
		h.mustWalk(t, tasks, nil)
	}
}

func TestWalkPriority(t *testing.T) {
	tasks := []Task{
		{ID: "root", Weight: 100},
		{ID: "a", Weight: 1, In: []InEdge{afterEdge("root")}},
		{ID: "b", Weight: 5, In: []InEdge{afterEdge("root")}},
		{ID: "c", Weight: 3, In: []InEdge{afterEdge("root")}},
		{ID: "d", Weight: 5, In: []InEdge{afterEdge("root")}},
		{ID: "e", Weight: 0},
		{ID: "f", Weight: 4, In: []InEdge{afterEdge("b")}},
	}
	// root first (heaviest ready); then b and d (ties by id), and f, which b
	// made ready, before the lighter c; e is ready from the start but
	// lightest.
	want := []string{"root", "b", "d", "f", "c", "a", "e"}
	for i := 0; i < 20; i++ {
		h := newWalkHarness(tasks, nil)
		h.w.Concurrency = 1
		var mu sync.Mutex
		var order []string
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			mu.Lock()
			order = append(order, task.ID)
			mu.Unlock()
			return Outcome{}
		})
		h.mustWalk(t, tasks, nil)
		if !slices.Equal(order, want) {
			t.Fatalf("start order %v, want %v", order, want)
		}
	}
}

func TestWalkResume(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tasks := []Task{
		walkTask("A"),
		walkTask("B", afterEdge("A")),
		walkTask("C", afterEdge("B")),
		reactTask("S", onEdge("A", onChanged)), // triggered by A's recorded result
		walkTask("D", afterEdge("C")),          // finished before, although C was not
		walkTask("F"),
		walkTask("G", afterEdge("F")),
		walkTask("Y", afterEdge("X")),
		walkTask("X"),
	}
	initial := map[string]State{
		"A":       {Status: StatusSuccess, Changed: true, Attempts: 2, Start: t0, End: t0.Add(time.Second)},
		"B":       {Status: StatusInProgress, Start: t0},
		"C":       {Status: StatusPending},
		"D":       {Status: StatusNoop, Attempts: 1},
		"F":       {Status: StatusError, Err: "boom", Attempts: 3},
		"X":       {Status: StatusSkipped, Reason: "upstream failed: Z"},
		"unknown": {Status: StatusSuccess}, // no such task: ignored
	}
	h := newWalkHarness(tasks, nil)
	states := h.mustWalk(t, tasks, initial)

	for _, id := range []string{"A", "D", "F", "X"} {
		if n := h.ran(id); n != 0 {
			t.Errorf("finished task %s ran again (%d times)", id, n)
		}
		if states[id] != initial[id] {
			t.Errorf("%s = %+v, want the recorded %+v", id, states[id], initial[id])
		}
	}
	for _, c := range h.calls {
		if _, done := initial[c.id]; done && initial[c.id].Status.Finished() {
			t.Errorf("finished task %s persisted again as %s", c.id, c.st.Status)
		}
	}
	for _, id := range []string{"B", "C", "S"} {
		if n := h.ran(id); n != 1 || states[id].Status != StatusSuccess {
			t.Errorf("%s ran %d times and ended %s, want once and SUCCESS", id, n, states[id].Status)
		}
	}
	if got := states["G"].Reason; got != "upstream failed: F" {
		t.Errorf("G reason %q, want upstream failed: F", got)
	}
	if got := states["Y"].Reason; got != "upstream failed: Z" {
		t.Errorf("Y reason %q, want the recorded root: upstream failed: Z", got)
	}
	if _, ok := states["unknown"]; ok {
		t.Errorf("states hold a task that is not in the walk")
	}
}

func TestWalkPersistOrder(t *testing.T) {
	for i := 0; i < 20; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		tasks := randomDAG(rng, 12, 8)
		outcomes := map[string]Outcome{}
		for _, task := range tasks {
			switch rng.IntN(10) {
			case 0:
				outcomes[task.ID] = failure
			case 1, 2, 3:
				outcomes[task.ID] = noop
			}
		}
		h := newWalkHarness(tasks, outcomes)
		h.w.Concurrency = 1 + rng.IntN(6)
		h.mustWalk(t, tasks, nil)
		checkPersistOrder(t, tasks, h.calls)
		if !slices.Equal(h.calls, h.progress) {
			t.Fatalf("Progress was told %d changes, Persist %d, or in another order", len(h.progress), len(h.calls))
		}
	}
}

// randomDAG builds layers of tasks, each depending on up to three tasks of
// the layer before, with a random mix of edges and reactive tasks.
func randomDAG(rng *rand.Rand, layers, width int) []Task {
	evs := []Trigger{onChanged, onOK, onSuccess, onFailed, onAny}
	var tasks []Task
	for l := 0; l < layers; l++ {
		for i := 0; i < width; i++ {
			task := Task{ID: fmt.Sprintf("L%02d-%02d", l, i), Weight: rng.IntN(5)}
			if l > 0 {
				task.Reactive = rng.IntN(3) == 0
				for d := 0; d < 1+rng.IntN(3); d++ {
					from := fmt.Sprintf("L%02d-%02d", l-1, rng.IntN(width))
					if rng.IntN(2) == 0 {
						task.In = append(task.In, afterEdge(from))
					} else {
						task.In = append(task.In, onEdge(from, evs[rng.IntN(len(evs))]))
					}
				}
			}
			tasks = append(tasks, task)
		}
	}
	return tasks
}

// TestWalkRandomLimits mixes nodes, semaphores and dependencies at random
// and checks that every limit holds, the persisted order is safe, and the
// walk completes (a lost wake-up would stall it).
func TestWalkRandomLimits(t *testing.T) {
	a1, b2, c1 := semaLimit("a", 1), semaLimit("b", 2), semaLimit("c", 1)
	semas := [][]Limit{nil, {a1}, {b2}, {a1, b2}, {c1, a1}}
	nodes := []string{"", "n1", "n2", "n3"}
	for i := 0; i < 30; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 2))
		tasks := randomDAG(rng, 10, 10)
		perNode := 1 + rng.IntN(2)
		for j := range tasks {
			tasks[j].Reactive = false
			node := nodes[rng.IntN(len(nodes))]
			tasks[j].Limits = slices.Clone(semas[rng.IntN(len(semas))])
			if node != "" {
				tasks[j].Limits = append(tasks[j].Limits, nodeLimit(node, perNode))
			}
		}
		h := newWalkHarness(tasks, nil)
		h.w.Concurrency = 1 + rng.IntN(8)
		gauges := map[string]*gauge{}
		for _, k := range []string{"a", "b", "c", "n1", "n2", "n3"} {
			gauges[k] = new(gauge)
		}
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			for _, l := range task.Limits {
				g := gauges[l.Name]
				g.enter()
				defer g.leave()
			}
			time.Sleep(time.Duration(rng2(task.ID)) * time.Microsecond)
			return Outcome{}
		})
		states := h.mustWalk(t, tasks, nil)
		for id, st := range states {
			if st.Status != StatusSuccess {
				t.Fatalf("%s ended %s", id, st.Status)
			}
		}
		limits := map[string]int{"a": 1, "b": 2, "c": 1, "n1": perNode, "n2": perNode, "n3": perNode}
		for k, g := range gauges {
			if int(g.peak.Load()) > limits[k] {
				t.Fatalf("%s held by %d tasks at once, limit %d", k, g.peak.Load(), limits[k])
			}
		}
		checkPersistOrder(t, tasks, h.calls)
	}
}

func TestWalkPersistErrorAborts(t *testing.T) {
	errDisk := errors.New("disk full")
	tests := []struct {
		name   string
		failOn persistCall
	}{
		{"final state", persistCall{"A", State{Status: StatusSuccess}}},
		{"in progress", persistCall{"A", State{Status: StatusInProgress}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				tasks := []Task{
					{ID: "A", Weight: 1},
					walkTask("B"),
					walkTask("C", afterEdge("A")),
				}
				h := newWalkHarness(tasks, nil)
				failed := false
				h.failPersist = func(id string, st State) error {
					if failed {
						t.Errorf("Persist(%s, %s) called after Persist failed", id, st.Status)
					}
					if id == tt.failOn.id && st.Status == tt.failOn.st.Status {
						failed = true
						return errDisk
					}
					return nil
				}
				bCancelled := make(chan bool, 1)
				h.wrapRun(func(ctx context.Context, task *Task) Outcome {
					if task.ID != "B" {
						return Outcome{}
					}
					// B runs until the walk is aborted (or A never failed).
					select {
					case <-ctx.Done():
						bCancelled <- true
						return Outcome{Err: ctx.Err()}
					case <-time.After(time.Second):
						bCancelled <- false
						return Outcome{Changed: true}
					}
				})
				_, err := walkWithin(t, &h.w, context.Background(), tasks, nil, nil)
				if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), `"A"`) {
					t.Fatalf("Walk error = %v, want it to wrap the Persist error and name task A", err)
				}
				if n := h.ran("C"); n != 0 {
					t.Fatalf("C ran after Persist failed")
				}
				if tt.failOn.st.Status == StatusInProgress && h.ran("A") != 0 {
					t.Fatalf("A ran although persisting its start failed")
				}
				select {
				case c := <-bCancelled:
					if !c {
						t.Fatalf("running task B was not cancelled by the abort")
					}
				default:
					// B never started: A's start failed before B was reached.
					if tt.failOn.st.Status != StatusInProgress {
						t.Fatalf("B never ran")
					}
				}
			}
		})
	}
}

func TestWalkSoftStop(t *testing.T) {
	for i := 0; i < 20; i++ {
		tasks := []Task{
			{ID: "A", Weight: 2},
			walkTask("B", afterEdge("A")),
			{ID: "C", Weight: 1},
			reactTask("D", onEdge("C", onAny)),
		}
		h := newWalkHarness(tasks, nil)
		h.w.Concurrency = 1
		stop := make(chan struct{})
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			if task.ID == "A" {
				close(stop)
				time.Sleep(time.Millisecond) // let the walker see the stop while A runs
				if ctx.Err() != nil {
					t.Errorf("a soft stop cancelled the running task")
				}
			}
			return Outcome{}
		})
		states, err := walkWithin(t, &h.w, context.Background(), tasks, nil, stop)
		if err != nil {
			t.Fatal(err)
		}
		if states["A"].Status != StatusSuccess {
			t.Fatalf("running task A ended %s, want it to finish with SUCCESS", states["A"].Status)
		}
		for _, id := range []string{"B", "C", "D"} {
			if st := states[id]; st.Status != StatusSkipped || st.Reason != ReasonStopped || h.ran(id) != 0 {
				t.Fatalf("%s = %s %q after %d runs, want SKIPPED stopped", id, st.Status, st.Reason, h.ran(id))
			}
		}
		checkPersistOrder(t, tasks, h.calls)
	}
}

func TestWalkStoppedBeforeStart(t *testing.T) {
	tasks := []Task{walkTask("A"), walkTask("B", afterEdge("A")), reactTask("C", onEdge("A", onAny))}
	h := newWalkHarness(tasks, nil)
	stop := make(chan struct{})
	close(stop)
	states, err := walkWithin(t, &h.w, context.Background(), tasks, nil, stop)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if st := states[task.ID]; st.Status != StatusSkipped || st.Reason != ReasonStopped || h.ran(task.ID) != 0 {
			t.Errorf("%s = %s %q after %d runs, want SKIPPED stopped", task.ID, st.Status, st.Reason, h.ran(task.ID))
		}
	}
	checkPersistOrder(t, tasks, h.calls)
}

func TestWalkHardCancel(t *testing.T) {
	tests := []struct {
		name    string
		outcome func(ctx context.Context) Outcome // what A's Run reports once cancelled
		want    Status
	}{
		{"run reports the cancellation", func(ctx context.Context) Outcome { return Outcome{Err: ctx.Err()} }, StatusError},
		{"run reports success anyway", func(context.Context) Outcome { return Outcome{Changed: true} }, StatusSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				tasks := []Task{
					{ID: "A", Weight: 2},
					walkTask("B", afterEdge("A")),
					{ID: "C", Weight: 1},
				}
				h := newWalkHarness(tasks, nil)
				h.w.Concurrency = 1
				ctx, cancel := context.WithCancel(context.Background())
				h.wrapRun(func(rctx context.Context, task *Task) Outcome {
					cancel()
					select {
					case <-rctx.Done():
						return tt.outcome(rctx)
					case <-time.After(5 * time.Second):
						t.Errorf("Run's ctx was not cancelled")
						return Outcome{Changed: true}
					}
				})
				states, err := walkWithin(t, &h.w, ctx, tasks, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := states["A"]; got.Status != tt.want || (tt.want == StatusError && got.Err != context.Canceled.Error()) {
					t.Fatalf("A = %s %q, want %s", got.Status, got.Err, tt.want)
				}
				for _, id := range []string{"B", "C"} {
					if st := states[id]; st.Status != StatusSkipped || st.Reason != ReasonStopped {
						t.Fatalf("%s = %s %q, want SKIPPED stopped", id, st.Status, st.Reason)
					}
				}
				checkPersistOrder(t, tasks, h.calls)
			}
		})
	}
}

func TestWalkRunPanicIsTaskError(t *testing.T) {
	tasks := []Task{walkTask("A"), walkTask("B", afterEdge("A")), walkTask("C")}
	h := newWalkHarness(tasks, nil)
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		if task.ID == "A" {
			panic("nil map")
		}
		return Outcome{}
	})
	states := h.mustWalk(t, tasks, nil)
	if st := states["A"]; st.Status != StatusError || !strings.Contains(st.Err, ErrTaskPanicked.Error()) || !strings.Contains(st.Err, "nil map") {
		t.Errorf("A = %s %q, want ERROR naming the panic", st.Status, st.Err)
	}
	if st := states["B"]; st.Reason != "upstream failed: A" {
		t.Errorf("B = %s %q, want SKIPPED upstream failed: A", st.Status, st.Reason)
	}
	if st := states["C"]; st.Status != StatusSuccess {
		t.Errorf("C = %s, want SUCCESS: a panic fails its task, not the walk", st.Status)
	}
}

func TestWalkRecordsStates(t *testing.T) {
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tasks := []Task{walkTask("A"), walkTask("B", afterEdge("A"))}
	h := newWalkHarness(tasks, map[string]Outcome{"A": {Changed: true, Attempts: 3}, "B": {Err: errBoom}})
	h.w.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	h.w.Concurrency = 1
	states := h.mustWalk(t, tasks, nil)
	second := func(n int) time.Time { return time.Date(2025, 1, 1, 0, 0, n, 0, time.UTC) }
	want := []persistCall{
		{"A", State{Status: StatusInProgress, Start: second(1)}},
		{"A", State{Status: StatusSuccess, Changed: true, Attempts: 3, Start: second(1), End: second(2)}},
		{"B", State{Status: StatusInProgress, Start: second(3)}},
		{"B", State{Status: StatusError, Err: "boom", Attempts: 1, Start: second(3), End: second(4)}},
	}
	if !slices.Equal(h.calls, want) {
		t.Fatalf("Persist calls\n got %+v\nwant %+v", h.calls, want)
	}
	if states["A"] != want[1].st || states["B"] != want[3].st {
		t.Fatalf("returned states differ from the persisted ones: %+v", states)
	}
}

func TestWalkInvalidGraphs(t *testing.T) {
	tests := []struct {
		name  string
		tasks []Task
		err   error
		names []string // what the message must name
	}{
		{"unknown predecessor", []Task{walkTask("A"), walkTask("B", afterEdge("ghost"))}, ErrUnknownPredecessor, []string{`"B"`, `"ghost"`}},
		{"duplicate id", []Task{walkTask("A"), walkTask("B"), walkTask("A")}, ErrDuplicateTask, []string{`"A"`}},
		{"self edge", []Task{walkTask("A", afterEdge("A"))}, ErrTaskCycle, []string{"A -> A"}},
		{"cycle", []Task{walkTask("root"), walkTask("a", afterEdge("root"), afterEdge("c")), walkTask("b", onEdge("a", onChanged)), walkTask("c", afterEdge("b")), walkTask("d", afterEdge("c"))}, ErrTaskCycle, []string{"a -> b", "b -> c", "c -> a"}},
		{"limit count zero", []Task{{ID: "A", Limits: []Limit{semaLimit("db", 0)}}}, ErrBadLimit, []string{`"A"`, "sema/db", "0"}},
		{"limit count negative", []Task{{ID: "A", Limits: []Limit{nodeLimit("n1", -1)}}}, ErrBadLimit, []string{`"A"`, "node/n1", "-1"}},
		{"limit named twice", []Task{{ID: "A", Limits: []Limit{semaLimit("db", 1), nodeLimit("db", 1), semaLimit("db", 2)}}}, ErrBadLimit, []string{`"A"`, "sema/db twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newWalkHarness(tt.tasks, nil)
			states, err := h.w.Walk(context.Background(), tt.tasks, nil, nil)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Walk error = %v, want %v", err, tt.err)
			}
			for _, n := range tt.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("error %q does not name %s", err, n)
				}
			}
			if states != nil || len(h.calls) != 0 {
				t.Errorf("an invalid graph returned states or persisted %d changes", len(h.calls))
			}
			for id, c := range h.runs {
				if c.Load() != 0 {
					t.Errorf("task %s ran in an invalid graph", id)
				}
			}
		})
	}
}

func TestWalkEmpty(t *testing.T) {
	states, err := (&Walker{Run: func(context.Context, *Task) Outcome { return Outcome{} }}).Walk(context.Background(), nil, nil, nil)
	if err != nil || len(states) != 0 {
		t.Fatalf("Walk(no tasks) = %v, %v; want no states and no error", states, err)
	}
}

// Shapes of the performance target (SPEC section 10).
var walkShapes = []struct {
	name  string
	build func(n int) []Task
}{
	{"chain", chainShape},
	{"fanout", fanoutShape},
	{"layered", layeredShape},
}

func chainShape(n int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%05d", i), Weight: n - i}
		if i > 0 {
			tasks[i].In = []InEdge{{From: tasks[i-1].ID}}
		}
	}
	return tasks
}

// fanoutShape is one root, n-2 tasks after it, and one sink after those.
func fanoutShape(n int) []Task {
	tasks := make([]Task, n)
	tasks[0] = Task{ID: "root", Weight: 3}
	sink := Task{ID: "sink", Weight: 1}
	for i := 1; i < n-1; i++ {
		id := fmt.Sprintf("mid%05d", i)
		tasks[i] = Task{ID: id, Weight: 2, In: []InEdge{{From: "root", On: onChanged}}}
		sink.In = append(sink.In, InEdge{From: id})
	}
	tasks[n-1] = sink
	return tasks
}

// layeredShape is layers of 100 tasks, each after 3 tasks of the layer
// before.
func layeredShape(n int) []Task {
	const width = 100
	tasks := make([]Task, 0, n)
	id := func(l, i int) string { return fmt.Sprintf("L%03d-%03d", l, i%width) }
	for l := 0; l*width < n; l++ {
		for i := 0; i < width && l*width+i < n; i++ {
			t := Task{ID: id(l, i), Weight: n/width - l}
			if l > 0 {
				t.In = []InEdge{{From: id(l-1, i)}, {From: id(l-1, i+1)}, {From: id(l-1, i+2), On: onSuccess}}
			}
			tasks = append(tasks, t)
		}
	}
	return tasks
}

func TestWalkShapes(t *testing.T) {
	for _, s := range walkShapes {
		t.Run(s.name, func(t *testing.T) {
			tasks := s.build(1000)
			h := newWalkHarness(tasks, nil)
			states := h.mustWalk(t, tasks, nil)
			for id, st := range states {
				if st.Status != StatusSuccess || h.ran(id) != 1 {
					t.Fatalf("%s ended %s after %d runs", id, st.Status, h.ran(id))
				}
			}
			checkPersistOrder(t, tasks, h.calls)
		})
	}
}

func BenchmarkWalk(b *testing.B) {
	w := &Walker{
		Run:     func(context.Context, *Task) Outcome { return Outcome{} },
		Persist: func(string, State) error { return nil },
	}
	for _, s := range walkShapes {
		for _, n := range []int{10000} {
			tasks := s.build(n)
			b.Run(fmt.Sprintf("%s/n=%d", s.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := w.Walk(context.Background(), tasks, nil, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWalkLimits is the layered shape with limits as a run gives
// them: every task its resource's lock, half of them a node's slots and a
// tenth a semaphore.
func BenchmarkWalkLimits(b *testing.B) {
	w := &Walker{
		Concurrency: 10,
		Run:         func(context.Context, *Task) Outcome { return Outcome{} },
		Persist:     func(string, State) error { return nil },
	}
	for _, n := range []int{10000} {
		tasks := layeredShape(n)
		for i := range tasks {
			l := []Limit{{Kind: LimitResource, Name: fmt.Sprintf("r%05d", i), Count: 1}}
			if i%2 == 0 {
				l = append(l, nodeLimit(fmt.Sprintf("n%d", i%16), 4))
			}
			if i%10 == 0 {
				l = append(l, semaLimit("db", 2))
			}
			tasks[i].Limits = l
		}
		b.Run(fmt.Sprintf("layered/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Walk(context.Background(), tasks, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A subscriber hangs after an action's last instance; it must still be
// triggered when an earlier instance changed something and the last one did
// not (haproxy.run#0 changed, haproxy.run#1 ok: haproxy.reload must run).
func TestWalkEarlierInstancesTrigger(t *testing.T) {
	cases := []struct {
		name      string
		first     Outcome
		last      Outcome
		wantRuns  int32
		wantState Status
	}{
		{"earlier changed, last ok", changed, noop, 1, StatusSuccess},
		{"earlier ok, last changed", noop, changed, 1, StatusSuccess},
		{"both ok", noop, noop, 0, StatusSkipped},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tasks := []Task{
				walkTask("ha#0"),
				walkTask("gc#0", onEdge("ha#0", onChanged)),
				{ID: "ha#1", Reactive: true, In: []InEdge{onEdge("gc#0", onAny)}, Earlier: []string{"ha#0"}},
				reactTask("reload#0", onEdge("ha#1", onChanged)),
			}
			h := newWalkHarness(tasks, map[string]Outcome{"ha#0": c.first, "ha#1": c.last})
			states := h.mustWalk(t, tasks, nil)
			if n := h.ran("reload#0"); n != c.wantRuns || states["reload#0"].Status != c.wantState {
				t.Fatalf("reload ran %d times and ended %s, want %d and %s", n, states["reload#0"].Status, c.wantRuns, c.wantState)
			}
		})
	}
	bad := []Task{{ID: "a", Earlier: []string{"ghost"}}}
	if _, err := (&Walker{Run: func(context.Context, *Task) Outcome { return noop }}).Walk(context.Background(), bad, nil, nil); !errors.Is(err, ErrUnknownPredecessor) {
		t.Fatalf("unknown earlier instance: err = %v", err)
	}
}

// A task that Begin refuses (another process skipped it) ends SKIPPED with
// Begin's reason, does not run, and its successors still run: the walk
// neither stalls nor runs it.
func TestWalkBeginSkipsTask(t *testing.T) {
	var ran []string
	var mu sync.Mutex
	var persisted []string
	w := &Walker{
		Run: func(_ context.Context, task *Task) Outcome {
			mu.Lock()
			ran = append(ran, task.ID)
			mu.Unlock()
			return Outcome{Changed: true}
		},
		Persist: func(id string, st State) error {
			persisted = append(persisted, id+" "+string(st.Status)+" "+st.Reason)
			return nil
		},
		Begin: func(id string, st State) (State, error) {
			if id == "b" {
				return State{Status: StatusSkipped, Reason: "discarded"}, nil
			}
			persisted = append(persisted, id+" "+string(st.Status)+" ")
			return State{}, nil
		},
	}
	tasks := []Task{walkTask("a"), walkTask("b", afterEdge("a")), walkTask("c", afterEdge("b"))}
	states, err := w.Walk(context.Background(), tasks, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := states["b"]; got.Status != StatusSkipped || got.Reason != "discarded" {
		t.Fatalf("b = %+v, want SKIPPED discarded", got)
	}
	if states["c"].Status != StatusSuccess {
		t.Fatalf("c = %+v, want SUCCESS after a skipped predecessor", states["c"])
	}
	if strings.Join(ran, ",") != "a,c" {
		t.Fatalf("ran %v, want a and c only", ran)
	}
	want := "a INPROGRESS ,a SUCCESS ,b SKIPPED discarded,c INPROGRESS ,c SUCCESS "
	if got := strings.Join(persisted, ","); got != want {
		t.Fatalf("persisted %q\nwant      %q", got, want)
	}
}

// A task that Begin ends NOOP (an operator marked it) does not run, is
// persisted NOOP with Begin's reason, and its successors see a NOOP: an
// ordering edge lets the next task run, a react edge on NOOP fires, one on
// SUCCESS only does not (its task is SKIPPED "not triggered"). Begin ending
// a task with any other status aborts the walk before anything else runs.
func TestWalkBeginEndsTaskNoop(t *testing.T) {
	var mu sync.Mutex
	var ran, persisted []string
	w := &Walker{
		Run: func(_ context.Context, task *Task) Outcome {
			mu.Lock()
			ran = append(ran, task.ID)
			mu.Unlock()
			return Outcome{Changed: true}
		},
		Persist: func(id string, st State) error {
			persisted = append(persisted, id+" "+string(st.Status)+" "+st.Reason)
			return nil
		},
		Begin: func(id string, st State) (State, error) {
			if id == "b" {
				return State{Status: StatusNoop, Reason: "marked noop"}, nil
			}
			return State{}, nil
		},
	}
	tasks := []Task{
		walkTask("a"),
		walkTask("b", afterEdge("a")),
		walkTask("next", afterEdge("b")),
		{ID: "on-ok", Reactive: true, In: []InEdge{{From: "b", On: OnSuccess | OnNoop}}},
		{ID: "on-changed", Reactive: true, In: []InEdge{{From: "b", On: OnSuccess}}},
	}
	states, err := w.Walk(context.Background(), tasks, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := states["b"]; got.Status != StatusNoop || got.Reason != "marked noop" || got.End.IsZero() {
		t.Fatalf("b = %+v, want NOOP marked noop with an end", got)
	}
	for id, want := range map[string]Status{"next": StatusSuccess, "on-ok": StatusSuccess, "on-changed": StatusSkipped} {
		if got := states[id].Status; got != want {
			t.Errorf("%s = %s %q, want %s after a NOOP predecessor", id, got, states[id].Reason, want)
		}
	}
	if states["on-changed"].Reason != ReasonNotTriggered {
		t.Errorf("on-changed reason = %q, want %q", states["on-changed"].Reason, ReasonNotTriggered)
	}
	slices.Sort(ran)
	if strings.Join(ran, ",") != "a,next,on-ok" {
		t.Fatalf("ran %v, want a, next and on-ok only", ran)
	}
	if !slices.Contains(persisted, "b NOOP marked noop") {
		t.Fatalf("persisted %q, want b NOOP marked noop", persisted)
	}

	for _, bad := range []Status{StatusSuccess, StatusError, StatusInProgress, StatusPending} {
		t.Run(string(bad), func(t *testing.T) {
			ran = nil
			w.Begin = func(id string, st State) (State, error) {
				if id == "a" {
					return State{Status: bad}, nil
				}
				return State{}, nil
			}
			_, err := w.Walk(context.Background(), tasks, nil, nil)
			if err == nil || !strings.Contains(err.Error(), `task "a" ended it `+string(bad)) {
				t.Fatalf("err = %v, want the walk aborted naming a and %s", err, bad)
			}
			if len(ran) != 0 {
				t.Fatalf("ran %v after an aborted begin", ran)
			}
		})
	}
}

// Completions that arrive while a batch is being persisted are persisted
// together in the next one (group commit), and a task after them starts
// only once all its predecessors' batch is persisted.
func TestWalkPersistBatchGroupsCompletions(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]string
	persisted := map[string]bool{}
	w := &Walker{
		Concurrency: 10,
		Run: func(_ context.Context, task *Task) Outcome {
			if task.ID != "sink" {
				<-release
			}
			if task.ID == "sink" {
				mu.Lock()
				defer mu.Unlock()
				for _, id := range []string{"a", "b", "c", "d", "e"} {
					if !persisted[id] {
						t.Errorf("sink started before %s was persisted", id)
					}
				}
			}
			return Outcome{Changed: true}
		},
		PersistBatch: func(ids []string, _ []State) error {
			time.Sleep(30 * time.Millisecond) // a slow commit: the others arrive meanwhile
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, append([]string(nil), ids...))
			for _, id := range ids {
				persisted[id] = true
			}
			return nil
		},
	}
	var tasks []Task
	var in []InEdge
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		tasks = append(tasks, walkTask(id))
		in = append(in, afterEdge(id))
	}
	tasks = append(tasks, walkTask("sink", in...))
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(release)
	}()
	states, err := w.Walk(context.Background(), tasks, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if states["sink"].Status != StatusSuccess {
		t.Fatalf("sink = %+v", states["sink"])
	}
	grouped := false
	n := 0
	for _, b := range batches {
		n += len(b)
		grouped = grouped || len(b) > 1
	}
	if n != 6 || !grouped {
		t.Fatalf("batches %v: want 6 tasks persisted, some together", batches)
	}
}

// goid is the id of the calling goroutine, from its stack's header.
func goid() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	return f[1] // "goroutine N [running]:"
}

// TestWalkInline checks tasks run on the scheduler's goroutine: they end
// as the same tasks run on goroutines of their own do, whatever the mix,
// the events and the failures; their Run is called from the goroutine
// that calls Persist and Progress; and a walk aborted by a failed Persist
// while inline outcomes wait still returns.
func TestWalkInline(t *testing.T) {
	for i := range 30 {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		tasks := randomDAG(rng, 8, 8)
		outcomes := map[string]Outcome{}
		for _, task := range tasks {
			outcomes[task.ID] = []Outcome{changed, noop, failure}[rng.IntN(3)]
		}
		plain := newWalkHarness(tasks, outcomes)
		plain.w.Concurrency = 1 + rng.IntN(6)
		want := plain.mustWalk(t, tasks, nil)

		mixed := slices.Clone(tasks)
		for j := range mixed {
			mixed[j].Inline = rng.IntN(2) == 0
		}
		h := newWalkHarness(mixed, outcomes)
		h.w.Concurrency = plain.w.Concurrency
		var scheduler, wrong atomic.Value
		h.w.Progress = func(id string, st State) {
			scheduler.Store(goid())
			h.progress = append(h.progress, persistCall{id, st})
		}
		if i%2 == 0 {
			h.w.PersistBatch = func(ids []string, states []State) error {
				for k, id := range ids {
					h.calls = append(h.calls, persistCall{id, states[k]})
				}
				return nil
			}
		}
		inline := map[string]bool{}
		for _, task := range mixed {
			inline[task.ID] = task.Inline
		}
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			if g, ok := scheduler.Load().(string); ok && inline[task.ID] && g != goid() {
				wrong.Store(task.ID)
			}
			return Outcome{}
		})
		got := h.mustWalk(t, mixed, nil)
		for id, st := range want {
			if got[id].Status != st.Status || got[id].Reason != st.Reason {
				t.Fatalf("seed %d: %s ended %s %q with inline tasks, %s %q without", i, id, got[id].Status, got[id].Reason, st.Status, st.Reason)
			}
		}
		if id := wrong.Load(); id != nil {
			t.Fatalf("seed %d: inline task %s ran on a goroutine other than the scheduler's", i, id)
		}
		checkPersistOrder(t, mixed, h.calls)
	}

	// A failed Persist while inline outcomes wait: the walk ends.
	errDisk := errors.New("disk full")
	tasks := []Task{{ID: "a", Inline: true}, {ID: "b", Inline: true}, {ID: "c", Inline: true, In: []InEdge{afterEdge("a")}}}
	h := newWalkHarness(tasks, nil)
	h.w.Concurrency = 3
	h.w.PersistBatch = func([]string, []State) error { return errDisk }
	if _, err := walkWithin(t, &h.w, context.Background(), tasks, nil, nil); !errors.Is(err, errDisk) {
		t.Fatalf("Walk = %v, want the PersistBatch error", err)
	}
	if h.ran("c") != 0 {
		t.Fatal("c ran after the final state of a failed to persist")
	}
}

// TestWalkInlinePersistFails checks a Persist failure among inline
// outcomes completed one by one: Persist is not called again, and the walk
// ends.
func TestWalkInlinePersistFails(t *testing.T) {
	errDisk := errors.New("disk full")
	tasks := []Task{{ID: "a", Inline: true}, {ID: "b", Inline: true}, {ID: "c", Inline: true}}
	h := newWalkHarness(tasks, nil)
	h.w.Concurrency = 3
	failed := false
	h.failPersist = func(id string, st State) error {
		if failed {
			t.Errorf("Persist(%s, %s) called after Persist failed", id, st.Status)
		}
		if st.Status.Finished() {
			failed = true
			return errDisk
		}
		return nil
	}
	if _, err := walkWithin(t, &h.w, context.Background(), tasks, nil, nil); !errors.Is(err, errDisk) {
		t.Fatalf("Walk = %v, want the Persist error", err)
	}
}

// A task that depends on others starts only once the walker has synced
// the write that holds their final states (Walker.Sync), so that its Run
// never waits for a sync still going on; a task that depends on nothing
// needs none first.
// eventLog records what happened, in order, from any goroutine.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) note(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func TestWalkSyncsBeforeStartingADependent(t *testing.T) {
	// x runs beside the chain until c has run, so that no task of the
	// chain is alone: each starts on a goroutine of its own.
	tasks := []Task{walkTask("a"), walkTask("b", afterEdge("a")), walkTask("c", afterEdge("b")), walkTask("x")}
	h := newWalkHarness(tasks, nil)
	var events eventLog
	note := events.note
	cRan := make(chan struct{})
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		if task.ID == "x" {
			select {
			case <-cRan:
			case <-time.After(5 * time.Second):
				t.Errorf("c never ran beside x")
			}
			return Outcome{}
		}
		note("run " + task.ID)
		if task.ID == "c" {
			close(cRan)
		}
		return Outcome{}
	})
	h.w.Persist = nil
	h.w.PersistBatch = func(ids []string, states []State) error {
		note("persist " + strings.Join(ids, ","))
		return nil
	}
	h.w.Sync = func() {
		// A slow sync: a Run started beside it would be logged first.
		time.Sleep(30 * time.Millisecond)
		note("synced")
	}
	h.mustWalk(t, tasks, nil)
	log := events.all()
	for _, id := range []string{"b", "c"} {
		run := slices.Index(log, "run "+id)
		prev := slices.Index(log, "persist "+string(rune(id[0]-1)))
		if run < 0 || prev < 0 || !slices.Contains(log[prev:run], "synced") {
			t.Errorf("log %q: want a sync between the predecessor's persist and run %s", log, id)
		}
	}
	if len(log) == 0 || log[0] != "run a" {
		t.Errorf("log %q: a depends on nothing and should start without a sync", log)
	}
}

// goroutineID is the id of the calling goroutine, from the header of its
// stack trace ("goroutine 7 [running]:").
func goroutineID() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:n]), "goroutine "), " ")
	return id
}

func TestWalkRunsALoneTaskOnTheSchedulersGoroutine(t *testing.T) {
	// A chain: each task is alone when it starts. Begin is called on the
	// scheduler's goroutine.
	tasks := []Task{walkTask("a"), walkTask("b", afterEdge("a")), walkTask("c", afterEdge("b"))}
	h := newWalkHarness(tasks, nil)
	var scheduler string
	h.w.Begin = func(id string, st State) (State, error) {
		scheduler = goroutineID()
		return State{}, nil
	}
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		if g := goroutineID(); g != scheduler {
			t.Errorf("%s ran on goroutine %s, want the scheduler's (%s): it was alone", task.ID, g, scheduler)
		}
		return Outcome{}
	})
	h.mustWalk(t, tasks, nil)

	// Two independent tasks start together, each on a goroutine of its
	// own: run on the scheduler's, the first would keep the second from
	// starting and they would never meet.
	tasks = []Task{walkTask("p"), walkTask("q")}
	h = newWalkHarness(tasks, nil)
	h.w.Concurrency = 2
	m := newMeeting(2)
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		if !m.arrive() {
			t.Errorf("%s: the two tasks never ran at the same time", task.ID)
		}
		return Outcome{}
	})
	h.mustWalk(t, tasks, nil)
}

func TestWalkYieldsBetweenLoneTasks(t *testing.T) {
	var yields atomic.Int32
	defer func(f func()) { yieldNow = f }(yieldNow)
	yieldNow = func() { yields.Add(1) }
	chain := func(n int) []Task {
		tasks := []Task{walkTask("t0")}
		for i := 1; i < n; i++ {
			tasks = append(tasks, walkTask(fmt.Sprintf("t%d", i), afterEdge(fmt.Sprintf("t%d", i-1))))
		}
		return tasks
	}

	// Tasks that each keep the scheduler's goroutine longer than
	// yieldEvery: it yields after each.
	tasks := chain(3)
	h := newWalkHarness(tasks, nil)
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		time.Sleep(yieldEvery + time.Millisecond)
		return Outcome{}
	})
	h.mustWalk(t, tasks, nil)
	if got := yields.Load(); got != 3 {
		t.Errorf("%d yields after 3 lone tasks of %v each, want 3", got, yieldEvery+time.Millisecond)
	}

	// Quick tasks: no yield before yieldEvery has passed.
	yields.Store(0)
	tasks = chain(20)
	h = newWalkHarness(tasks, nil)
	start := time.Now()
	h.mustWalk(t, tasks, nil)
	if got, took := yields.Load(), time.Since(start); took < yieldEvery && got != 0 {
		t.Errorf("%d yields in a walk of %v, want none before %v", got, took, yieldEvery)
	}
}
