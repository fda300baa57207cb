package walk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchLog records the RunBatch calls of a walk: the ids of each batch's
// members, in the order the walker gave them.
type batchLog struct {
	mu    sync.Mutex
	calls [][]string
}

func (l *batchLog) add(tasks []*Task) {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	l.mu.Lock()
	l.calls = append(l.calls, ids)
	l.mu.Unlock()
}

// sizes is the number of members of each batch, smallest first.
func (l *batchLog) sizes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []int
	for _, c := range l.calls {
		s = append(s, len(c))
	}
	slices.Sort(s)
	return s
}

// batches makes the harness's walker batch: each member of a batch gets
// its scripted outcome, as Run would give it, and every call is logged.
func (h *walkHarness) batches() *batchLog {
	l := new(batchLog)
	h.w.RunBatch = func(_ context.Context, tasks []*Task) []Outcome {
		l.add(tasks)
		outs := make([]Outcome, len(tasks))
		for i, t := range tasks {
			outs[i] = changed
			if o, ok := h.outcomes[t.ID]; ok {
				outs[i] = o
			}
		}
		return outs
	}
	return l
}

// groupTasks is n ready tasks of group g with GroupMax max, as a plan's
// like tasks of one base, action and node are.
func groupTasks(prefix, g string, n, max int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("%s%02d", prefix, i), Group: g, GroupMax: max}
	}
	return tasks
}

// 20 like tasks ready at once become ⌈20/8⌉ batches of at most 8 members,
// heaviest first; without RunBatch each goes to Run. With the node's limit
// at 1, the tasks parked on it join the next batch rather than running
// alone.
func TestWalkBatchBoundedByGroupMax(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits []Limit
	}{
		{"free", nil},
		{"one node slot", []Limit{nodeLimit("n1", 1)}},
		{"two node slots", []Limit{nodeLimit("n1", 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := groupTasks("pkg", "base/run/n1", 20, 8)
			for i := range tasks {
				tasks[i].Limits = tc.limits
			}
			h := newWalkHarness(tasks, nil)
			log := h.batches()
			states := h.mustWalk(t, tasks, nil)
			if got := log.sizes(); !slices.Equal(got, []int{4, 8, 8}) {
				t.Fatalf("batch sizes %v, want 8, 8 and 4", got)
			}
			heaviest := []string{"pkg00", "pkg01", "pkg02", "pkg03", "pkg04", "pkg05", "pkg06", "pkg07"}
			if tc.limits == nil && !slices.ContainsFunc(log.calls, func(c []string) bool { return slices.Equal(c, heaviest) }) {
				t.Errorf("batches %v, want one of the heaviest 8 in order", log.calls)
			}
			for _, task := range tasks {
				if st := states[task.ID]; st.Status != StatusSuccess || h.ran(task.ID) != 0 {
					t.Errorf("%s ended %s after %d Runs, want SUCCESS from its batch", task.ID, st.Status, h.ran(task.ID))
				}
			}
			checkPersistOrder(t, tasks, h.calls)
		})
	}
	t.Run("no RunBatch", func(t *testing.T) {
		tasks := groupTasks("pkg", "base/run/n1", 20, 8)
		h := newWalkHarness(tasks, nil)
		h.mustWalk(t, tasks, nil)
		for _, task := range tasks {
			if h.ran(task.ID) != 1 {
				t.Errorf("%s ran %d times through Run, want 1", task.ID, h.ran(task.ID))
			}
		}
	})
	t.Run("smallest GroupMax", func(t *testing.T) {
		tasks := groupTasks("pkg", "g", 6, 0)
		tasks[1].GroupMax = 3
		h := newWalkHarness(tasks, nil)
		log := h.batches()
		h.mustWalk(t, tasks, nil)
		if got := log.sizes(); !slices.Equal(got, []int{3, 3}) {
			t.Fatalf("batch sizes %v, want two of 3: a member's GroupMax bounds its batch", got)
		}
	})
}

// Tasks with a path between them are never ready together, so never in
// one batch; nor do inline tasks or tasks of different groups batch.
func TestWalkBatchKeepsOrder(t *testing.T) {
	chain := []Task{
		{ID: "a", Group: "g"},
		{ID: "b", Group: "g", In: []InEdge{afterEdge("a")}},
		{ID: "c", Group: "g", In: []InEdge{afterEdge("b")}},
	}
	inline := []Task{{ID: "a", Group: "g", Inline: true}, {ID: "b", Group: "g", Inline: true}}
	groups := []Task{{ID: "a", Group: "g1"}, {ID: "b", Group: "g2"}, {ID: "c"}, {ID: "d"}}
	for name, tasks := range map[string][]Task{"chain": chain, "inline": inline, "groups": groups} {
		t.Run(name, func(t *testing.T) {
			h := newWalkHarness(tasks, nil)
			log := h.batches()
			h.mustWalk(t, tasks, nil)
			if len(log.calls) != 0 {
				t.Fatalf("RunBatch called with %v, want no batch", log.calls)
			}
			for _, task := range tasks {
				if h.ran(task.ID) != 1 {
					t.Errorf("%s ran %d times through Run, want 1", task.ID, h.ran(task.ID))
				}
			}
			checkPersistOrder(t, tasks, h.calls)
		})
	}
}

// A batch holds the union of its members' limits: while it runs, a task
// needing the semaphore of any member waits. A member whose own limit is
// busy (its resource's lock) stays out of the batch and runs alone later.
func TestWalkBatchHoldsUnionOfLimits(t *testing.T) {
	res := Limit{Kind: LimitResource, Name: "r1", Count: 1}
	tasks := []Task{
		{ID: "hold-r1", Weight: 9, Limits: []Limit{res}},
		{ID: "m1", Weight: 5, Group: "g", Limits: []Limit{semaLimit("s1", 1)}},
		{ID: "m2", Weight: 5, Group: "g", Limits: []Limit{semaLimit("s2", 1)}},
		{ID: "m3", Weight: 5, Group: "g", Limits: []Limit{res}},
		{ID: "o1", Limits: []Limit{semaLimit("s1", 1)}},
		{ID: "o2", Limits: []Limit{semaLimit("s2", 1)}},
	}
	h := newWalkHarness(tasks, nil)
	log := h.batches()
	var inBatch, overlap atomic.Bool
	batchStarted, releaseR1 := make(chan struct{}), make(chan struct{})
	batch := h.w.RunBatch
	h.w.RunBatch = func(ctx context.Context, ts []*Task) []Outcome {
		inBatch.Store(true)
		close(batchStarted)
		time.Sleep(50 * time.Millisecond) // time for o1 or o2 to run, were they let
		inBatch.Store(false)
		close(releaseR1)
		return batch(ctx, ts)
	}
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		switch task.ID {
		case "hold-r1":
			<-releaseR1
		case "o1", "o2":
			<-batchStarted // the batch runs before them, or with them if its limits leak
			if inBatch.Load() {
				overlap.Store(true)
			}
		}
		return Outcome{}
	})
	states := h.mustWalk(t, tasks, nil)
	if overlap.Load() {
		t.Error("o1 or o2 ran while the batch held s1 and s2")
	}
	if len(log.calls) != 1 || !slices.Equal(log.calls[0], []string{"m1", "m2"}) {
		t.Fatalf("batches %v, want one of m1 and m2 (m3's resource was busy)", log.calls)
	}
	if h.ran("m3") != 1 || states["m3"].Status != StatusSuccess {
		t.Fatalf("m3 ran %d times through Run and ended %s, want once and SUCCESS", h.ran("m3"), states["m3"].Status)
	}
	checkPersistOrder(t, tasks, h.calls)
}

// A batch counts as one task against Concurrency, whatever its size.
func TestWalkBatchCountsOnceAgainstConcurrency(t *testing.T) {
	tasks := append(groupTasks("pkg", "g", 5, 0), Task{ID: "z"}, Task{ID: "y"})
	for i := range 5 {
		tasks[i].Weight = 1
	}
	h := newWalkHarness(tasks, nil)
	h.w.Concurrency = 2
	log := h.batches()
	meet := newMeeting(2)
	var units gauge
	var met atomic.Bool
	batch := h.w.RunBatch
	h.w.RunBatch = func(ctx context.Context, ts []*Task) []Outcome {
		units.enter()
		defer units.leave()
		met.Store(meet.arrive())
		return batch(ctx, ts)
	}
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		units.enter()
		defer units.leave()
		meet.arrive()
		return Outcome{}
	})
	h.mustWalk(t, tasks, nil)
	if got := log.sizes(); !slices.Equal(got, []int{5}) {
		t.Fatalf("batch sizes %v, want one of 5", got)
	}
	if !met.Load() {
		t.Fatal("the batch of 5 and another task did not run at once with Concurrency 2")
	}
	if p := units.peak.Load(); p > 2 {
		t.Fatalf("%d units ran at once, Concurrency is 2", p)
	}
}

// A batch formed of tasks that limits' releases woke passes on the wake-up
// of a unit it did not use: here two units of n free at once and wake g1
// and g2, the batch of both takes one, and p, parked on n too, must get
// the other while the batch runs.
func TestWalkBatchHandsOnWakeUps(t *testing.T) {
	n := nodeLimit("n", 3)
	tasks := []Task{
		{ID: "h1", Weight: 10, Limits: []Limit{n}},
		{ID: "h2", Weight: 9, Limits: []Limit{n}},
		{ID: "h3", Weight: 8, Limits: []Limit{n}},
		{ID: "g1", Weight: 5, Group: "g", Limits: []Limit{n}},
		{ID: "g2", Weight: 5, Group: "g", Limits: []Limit{n}},
		{ID: "p", Limits: []Limit{n}},
	}
	h := newWalkHarness(tasks, nil)
	log := h.batches()
	h.w.PersistBatch = func(ids []string, states []State) error { return nil }
	pRan, go23 := make(chan struct{}), make(chan struct{})
	var returned atomic.Int32
	var once sync.Once
	h.w.Sync = func() {
		// Let h2 and h3 end together while the scheduler is busy, so
		// that one completion frees two units and wakes g1 and g2.
		once.Do(func() {
			close(go23)
			for returned.Load() < 2 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
		})
	}
	var pDuringBatch atomic.Bool
	batch := h.w.RunBatch
	h.w.RunBatch = func(ctx context.Context, ts []*Task) []Outcome {
		select {
		case <-pRan:
			pDuringBatch.Store(true)
		case <-time.After(2 * time.Second): // then p runs after the batch, releasing h1
		}
		return batch(ctx, ts)
	}
	h.wrapRun(func(ctx context.Context, task *Task) Outcome {
		switch task.ID {
		case "h1":
			<-pRan // holds its unit of n until p ran
		case "h2", "h3":
			<-go23
			defer returned.Add(1)
		case "p":
			close(pRan)
		}
		return Outcome{}
	})
	h.mustWalk(t, tasks, nil)
	if got := log.sizes(); !slices.Equal(got, []int{2}) {
		t.Fatalf("batch sizes %v, want one of g1 and g2", got)
	}
	if !pDuringBatch.Load() {
		t.Fatal("p did not run while the batch held one unit of n's three: a wake-up was lost")
	}
}

// Each member's outcome is its own: its final state, and through it its
// successors' truth table, exactly as if it had run alone, with group
// commit or without.
func TestWalkBatchPerMemberOutcomes(t *testing.T) {
	tasks := []Task{
		{ID: "fails", Group: "g"},
		{ID: "changes", Group: "g"},
		{ID: "keeps", Group: "g"},
		walkTask("after-fails", afterEdge("fails")),
		reactTask("on-fails-failed", onEdge("fails", onFailed)),
		reactTask("on-changes-changed", onEdge("changes", onChanged)),
		walkTask("after-changes", afterEdge("changes")),
		reactTask("on-keeps-changed", onEdge("keeps", onChanged)),
		reactTask("on-keeps-ok", onEdge("keeps", onOK)),
	}
	want := map[string]string{
		"fails":              "ERROR",
		"changes":            "SUCCESS",
		"keeps":              "NOOP",
		"after-fails":        "SKIPPED upstream failed: fails",
		"on-fails-failed":    "SUCCESS",
		"on-changes-changed": "SUCCESS",
		"after-changes":      "SUCCESS",
		"on-keeps-changed":   "SKIPPED not triggered",
		"on-keeps-ok":        "SUCCESS",
	}
	for _, groupCommit := range []bool{false, true} {
		t.Run(fmt.Sprintf("PersistBatch=%v", groupCommit), func(t *testing.T) {
			h := newWalkHarness(tasks, map[string]Outcome{"fails": failure, "keeps": noop})
			log := h.batches()
			if groupCommit {
				h.w.PersistBatch = func(ids []string, states []State) error {
					for i, id := range ids {
						h.calls = append(h.calls, persistCall{id, states[i]})
					}
					return nil
				}
			}
			states := h.mustWalk(t, tasks, nil)
			if got := log.sizes(); !slices.Equal(got, []int{3}) {
				t.Fatalf("batch sizes %v, want one of 3", got)
			}
			for id, w := range want {
				st := states[id]
				got := string(st.Status)
				if st.Reason != "" {
					got += " " + st.Reason
				}
				if got != w {
					t.Errorf("%s = %s, want %s", id, got, w)
				}
			}
			if st := states["fails"]; st.Err != errBoom.Error() || st.Attempts != 1 || st.End.IsZero() {
				t.Errorf("fails = %+v, want its own error, 1 attempt and an end", st)
			}
			checkPersistOrder(t, tasks, h.calls)
		})
	}
}

// Each member begins as any task: one that Begin ends NOOP or SKIPPED
// drops out of the batch, and a batch left with one member runs it
// through Run.
func TestWalkBatchBeginDropsMember(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ended   map[string]Status
		batches [][]string
		runs    []string
	}{
		{"one of three", map[string]Status{"b": StatusNoop}, [][]string{{"a", "c"}}, nil},
		{"two of three", map[string]Status{"a": StatusNoop, "c": StatusSkipped}, nil, []string{"b"}},
		{"all", map[string]Status{"a": StatusNoop, "b": StatusNoop, "c": StatusSkipped}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := []Task{{ID: "a", Group: "g"}, {ID: "b", Group: "g"}, {ID: "c", Group: "g"},
				reactTask("on-ok", onEdge("a", onOK), onEdge("b", onOK))}
			h := newWalkHarness(tasks, nil)
			log := h.batches()
			h.w.Begin = func(id string, st State) (State, error) {
				h.calls = append(h.calls, persistCall{id, st})
				if s, ok := tc.ended[id]; ok {
					return State{Status: s, Reason: "decided elsewhere"}, nil
				}
				return State{}, nil
			}
			states := h.mustWalk(t, tasks, nil)
			if !slices.EqualFunc(log.calls, tc.batches, slices.Equal) {
				t.Fatalf("batches %v, want %v", log.calls, tc.batches)
			}
			var runs []string
			for _, id := range []string{"a", "b", "c"} {
				if h.ran(id) > 0 {
					runs = append(runs, id)
				}
				if s, ok := tc.ended[id]; ok && states[id].Status != s {
					t.Errorf("%s = %s, want %s as Begin ended it", id, states[id].Status, s)
				}
			}
			if !slices.Equal(runs, tc.runs) {
				t.Errorf("ran %v through Run, want %v", runs, tc.runs)
			}
			if states["on-ok"].Status != StatusSuccess {
				t.Errorf("on-ok = %s, want SUCCESS after a member Begin ended NOOP", states["on-ok"].Status)
			}
		})
	}
}

// A panic in RunBatch, or a result of the wrong length, fails every member
// with a clear error; the walk goes on.
func TestWalkBatchFailuresFailEveryMember(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() []Outcome
		want string
	}{
		{"panic", func() []Outcome { panic("nil map") }, ErrTaskPanicked.Error() + ": batch of a, b, c: nil map"},
		{"short", func() []Outcome { return []Outcome{{}} }, "RunBatch returned 1 outcomes for the batch of 3 tasks a, b, c: want one per task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := []Task{{ID: "a", Group: "g"}, {ID: "b", Group: "g"}, {ID: "c", Group: "g"}, walkTask("after-a", afterEdge("a")), walkTask("d")}
			h := newWalkHarness(tasks, nil)
			h.w.RunBatch = func(context.Context, []*Task) []Outcome { return tc.run() }
			states := h.mustWalk(t, tasks, nil)
			for _, id := range []string{"a", "b", "c"} {
				if st := states[id]; st.Status != StatusError || !strings.Contains(st.Err, tc.want) {
					t.Errorf("%s = %s %q, want ERROR with %q", id, st.Status, st.Err, tc.want)
				}
			}
			if st := states["after-a"]; st.Reason != "upstream failed: a" {
				t.Errorf("after-a = %s %q, want SKIPPED upstream failed: a", st.Status, st.Reason)
			}
			if st := states["d"]; st.Status != StatusSuccess {
				t.Errorf("d = %s, want SUCCESS: a broken batch fails its members, not the walk", st.Status)
			}
		})
	}
}

// A batch is one running unit: a soft stop lets it finish, a hard one
// cancels its ctx, and the tasks that did not start end SKIPPED stopped.
func TestWalkBatchStopAndCancel(t *testing.T) {
	for _, hard := range []bool{false, true} {
		t.Run(fmt.Sprintf("hard=%v", hard), func(t *testing.T) {
			tasks := append(groupTasks("pkg", "g", 4, 0), walkTask("next", afterEdge("pkg00")))
			h := newWalkHarness(tasks, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := make(chan struct{})
			h.w.RunBatch = func(ctx context.Context, ts []*Task) []Outcome {
				outs := make([]Outcome, len(ts))
				if !hard {
					close(stop)
					return outs
				}
				cancel()
				<-ctx.Done()
				for i := range outs {
					outs[i] = Outcome{Err: ctx.Err()}
				}
				return outs
			}
			states, err := walkWithin(t, &h.w, ctx, tasks, nil, stop)
			if err != nil {
				t.Fatal(err)
			}
			want := StatusNoop
			if hard {
				want = StatusError
			}
			for _, task := range tasks[:4] {
				if st := states[task.ID]; st.Status != want {
					t.Errorf("%s = %s %q, want %s", task.ID, st.Status, st.Err, want)
				}
			}
			if st := states["next"]; st.Status != StatusSkipped || st.Reason != ReasonStopped {
				t.Errorf("next = %s %q, want SKIPPED stopped", st.Status, st.Reason)
			}
			checkPersistOrder(t, tasks, h.calls)
		})
	}
}

// TestWalkBatchRandom mixes groups, limits and dependencies at random and
// checks that every limit holds (a batch holding each of its distinct
// limits once), a batch counts once against Concurrency, batches hold one
// group within its GroupMax, the persisted order is safe, every task runs
// exactly once, and the walk completes (a lost wake-up would stall it).
func TestWalkBatchRandom(t *testing.T) {
	a1, b2 := semaLimit("a", 1), semaLimit("b", 2)
	semas := [][]Limit{nil, {a1}, {b2}, {a1, b2}}
	groups := []string{"", "g1", "g2", "g3"}
	for i := 0; i < 30; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 34))
		tasks := randomDAG(rng, 8, 12)
		perNode := 1 + rng.IntN(2)
		maxOf := map[string]int{"g1": rng.IntN(4), "g2": 2 + rng.IntN(3), "g3": 0}
		for j := range tasks {
			tasks[j].Reactive = false
			tasks[j].Group = groups[rng.IntN(len(groups))]
			tasks[j].GroupMax = maxOf[tasks[j].Group]
			tasks[j].Limits = slices.Clone(semas[rng.IntN(len(semas))])
			tasks[j].Limits = append(tasks[j].Limits, nodeLimit(fmt.Sprintf("n%d", rng.IntN(2)), perNode))
			if rng.IntN(4) == 0 {
				tasks[j].Limits = append(tasks[j].Limits, Limit{Kind: LimitResource, Name: "r", Count: 1})
			}
		}
		h := newWalkHarness(tasks, nil)
		h.w.Concurrency = 1 + rng.IntN(4)
		gauges := map[string]*gauge{}
		for _, k := range []string{"a", "b", "n0", "n1", "r"} {
			gauges[k] = new(gauge)
		}
		var units gauge
		var mu sync.Mutex
		batched := map[string]int{}
		hold := func(ts []*Task) func() {
			units.enter()
			var held []*gauge
			seen := map[string]bool{}
			for _, t := range ts {
				for _, l := range t.Limits {
					if !seen[l.Name] {
						seen[l.Name] = true
						g := gauges[l.Name]
						g.enter()
						held = append(held, g)
					}
				}
			}
			return func() {
				for _, g := range held {
					g.leave()
				}
				units.leave()
			}
		}
		h.w.RunBatch = func(_ context.Context, ts []*Task) []Outcome {
			defer hold(ts)()
			mu.Lock()
			for _, task := range ts {
				batched[task.ID]++
				if task.Group != ts[0].Group || task.Group == "" {
					t.Errorf("batch %s mixes groups", batchIDs(ts))
				}
				if task.GroupMax > 0 && len(ts) > task.GroupMax {
					t.Errorf("batch %s has %d members, %s's GroupMax is %d", batchIDs(ts), len(ts), task.ID, task.GroupMax)
				}
			}
			mu.Unlock()
			time.Sleep(time.Duration(rng2(ts[0].ID)) * time.Microsecond)
			outs := make([]Outcome, len(ts))
			for i := range outs {
				outs[i] = changed
			}
			return outs
		}
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			defer hold([]*Task{task})()
			time.Sleep(time.Duration(rng2(task.ID)) * time.Microsecond)
			return Outcome{}
		})
		states := h.mustWalk(t, tasks, nil)
		for _, task := range tasks {
			if st := states[task.ID]; st.Status != StatusSuccess || int(h.ran(task.ID))+batched[task.ID] != 1 {
				t.Fatalf("seed %d: %s ended %s after %d Runs and %d batches", i, task.ID, st.Status, h.ran(task.ID), batched[task.ID])
			}
		}
		limits := map[string]int{"a": 1, "b": 2, "n0": perNode, "n1": perNode, "r": 1}
		for k, g := range gauges {
			if int(g.peak.Load()) > limits[k] {
				t.Fatalf("seed %d: %s held %d times at once, limit %d", i, k, g.peak.Load(), limits[k])
			}
		}
		if p := int(units.peak.Load()); p > h.w.Concurrency {
			t.Fatalf("seed %d: %d units ran at once, Concurrency %d", i, p, h.w.Concurrency)
		}
		checkPersistOrder(t, tasks, h.calls)
	}
}

// BenchmarkWalkBatch is 100 ready tasks of one group batched whole by a
// RunBatch that returns at once: what grouping costs the walker per
// member (ns/member), against the same tasks through Run one by one.
func BenchmarkWalkBatch(b *testing.B) {
	const n = 100
	tasks := groupTasks("pkg", "base/run/n1", n, n)
	for i := range tasks {
		tasks[i].Limits = []Limit{nodeLimit("n1", 10), {Kind: LimitResource, Name: tasks[i].ID, Count: 1}}
	}
	var calls atomic.Int64
	for _, batched := range []bool{true, false} {
		w := &Walker{
			Run:     func(context.Context, *Task) Outcome { return Outcome{} },
			Persist: func(string, State) error { return nil },
		}
		name := "unbatched"
		if batched {
			name = "batched"
			w.RunBatch = func(_ context.Context, ts []*Task) []Outcome {
				calls.Add(1)
				return make([]Outcome, len(ts))
			}
		}
		b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
			b.ReportAllocs()
			calls.Store(0)
			for b.Loop() {
				if _, err := w.Walk(context.Background(), tasks, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			if batched && calls.Load() != int64(b.N) {
				b.Fatalf("%d RunBatch calls in %d walks, want one per walk", calls.Load(), b.N)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
		})
	}
}
