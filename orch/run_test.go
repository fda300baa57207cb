package orch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// noopStack makes a store with one noop resource per name, each with its
// run staged, and the rules; it saves a plan of every staged entry and
// returns the store's path and the plan's uid. The store is closed.
func noopStack(t *testing.T, names []string, rules ...string) (path, uid string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "resources", "noop"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	path = testStorePath(t)
	update(t, path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		stg := staging.New(cat, time.Now)
		for _, n := range names {
			if _, err := cat.Create(resources.CreateSpec{Name: n, Base: base}, false); err != nil {
				return err
			}
			if _, err := stg.Touch("create", n); err != nil {
				return err
			}
		}
		parsed := make([]events.Rule, 0, len(rules))
		for _, text := range rules {
			r, err := events.Parse(text)
			if err != nil {
				return err
			}
			parsed = append(parsed, r)
		}
		if _, err := events.Add(tx, cat, parsed...); err != nil {
			return err
		}
		ents, err := staging.List(tx)
		if err != nil {
			return err
		}
		in := planner.Input{Rules: parsed}
		for _, e := range ents {
			in.Entries = append(in.Entries, planner.Entry{Key: e.Key, Resource: e.Resource, Action: e.Action})
		}
		p, err := planner.Build(in)
		if err != nil {
			return err
		}
		if uid, err = NewUID(tx, time.Now()); err != nil {
			return err
		}
		return Save(tx, &Record{UID: uid, CreatedAt: time.Now().UTC(), Selection: []string{}, Plan: p})
	})
	return path, uid
}

// chain4 is four noop resources run one after the other.
func chain4(t *testing.T) (path, uid string) {
	return noopStack(t, []string{"n1", "n2", "n3", "n4"}, "after n1.run n2.run", "after n2.run n3.run", "after n3.run n4.run")
}

var chain4IDs = []string{"n1.run#0", "n2.run#0", "n3.run#0", "n4.run#0"}

// transitions records what a Runner's Progress was told.
type transitions struct {
	mu   sync.Mutex
	seen map[string][]Status
	// pause, if set, is how long Progress sleeps after a final state: it
	// stretches the run so another process can look at the store.
	pause time.Duration
}

func (tr *transitions) progress(id string, st State) {
	tr.mu.Lock()
	if tr.seen == nil {
		tr.seen = map[string][]Status{}
	}
	tr.seen[id] = append(tr.seen[id], st.Status)
	tr.mu.Unlock()
	if tr.pause > 0 && st.Status.Finished() {
		time.Sleep(tr.pause)
	}
}

func (tr *transitions) started(id string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, s := range tr.seen[id] {
		if s == StatusInProgress {
			return true
		}
	}
	return false
}

// commitState is what the store says about one staged task: its status,
// whether its entry is still staged, and how many history entries its run
// committed.
type commitState struct {
	Status    Status
	Staged    bool
	Committed int
}

func commitStates(tx *store.Tx, uid string) (map[string]commitState, error) {
	rec, err := Load(tx, uid)
	if err != nil {
		return nil, err
	}
	states, err := States(tx, rec)
	if err != nil {
		return nil, err
	}
	hist, err := staging.History(tx, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]commitState{}
	for _, n := range rec.Plan.Nodes {
		if !n.Staged {
			continue
		}
		cs := commitState{Status: states[n.ID].Status, Staged: tx.Has(store.Staged, n.StagedKey)}
		for _, h := range hist {
			if h.Plan == uid && h.Task == n.ID {
				cs.Committed++
			}
		}
		out[n.ID] = cs
	}
	return out, nil
}

// mustCommitStates is commitStates for the test's own goroutine.
func mustCommitStates(t *testing.T, tx *store.Tx, uid string) map[string]commitState {
	t.Helper()
	out, err := commitStates(tx, uid)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func succeeded(s Status) bool { return s == StatusSuccess || s == StatusNoop }

// TestRunnerCommitsWithTheTaskState looks at the store from outside, as
// another solar command would, again and again while a plan runs: at every
// moment a task has succeeded exactly when its staged entry has moved to
// history, once. Both are written in one transaction, so no snapshot can
// show one without the other.
func TestRunnerCommitsWithTheTaskState(t *testing.T) {
	path, uid := chain4(t)
	tr := &transitions{pause: 80 * time.Millisecond}
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1, Idle: time.Millisecond, Progress: tr.progress}

	done := make(chan struct{})
	var (
		wg                 sync.WaitGroup
		snapshots, partial int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			db, err := store.Open(path, store.Options{LockWait: 5 * time.Second})
			if err != nil {
				t.Errorf("observer: %v", err)
				return
			}
			err = db.View(func(tx *store.Tx) error {
				css, err := commitStates(tx, uid)
				if err != nil {
					return err
				}
				n := 0
				for id, cs := range css {
					want := commitState{Status: cs.Status, Staged: true}
					if succeeded(cs.Status) {
						want.Staged, want.Committed = false, 1
						n++
					}
					if cs != want {
						t.Errorf("snapshot %d: %s is %s but its entry is staged=%v, committed %d times", snapshots, id, cs.Status, cs.Staged, cs.Committed)
					}
				}
				snapshots++
				if n > 0 && n < len(chain4IDs) {
					partial++
				}
				return nil
			})
			db.Close()
			if err != nil {
				t.Errorf("observer: %v", err)
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	_, states, err := r.Run(context.Background(), nil)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, id := range chain4IDs {
		if !succeeded(states[id].Status) {
			t.Errorf("%s ended %s, want NOOP or SUCCESS", id, states[id].Status)
		}
	}
	if partial == 0 {
		t.Errorf("the observer took %d snapshots, none in the middle of the run: the test saw nothing", snapshots)
	}
	view(t, path, func(tx *store.Tx) error {
		for id, cs := range mustCommitStates(t, tx, uid) {
			if want := (commitState{Status: StatusNoop, Staged: false, Committed: 1}); cs != want {
				t.Errorf("after the run %s: %+v, want %+v", id, cs, want)
			}
		}
		if Open(tx, uid) {
			t.Error("the plan is still open after every task finished")
		}
		if tx.Has(store.Plans, runnerKey(uid)) {
			t.Error("the runner record is left behind after the run")
		}
		return nil
	})
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func putRunner(t *testing.T, tx *store.Tx, uid string, pid int) {
	t.Helper()
	raw, err := json.Marshal(runnerRecord{PID: pid, Started: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put(store.Plans, runnerKey(uid), raw); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerResumesAfterCrash sets the store as a kill -9 leaves it: the
// first task finished and committed, the second recorded INPROGRESS, the
// rest PENDING, and a runner record naming a process that is gone. A new
// Runner must take over, run the interrupted task and those after it, and
// leave the finished one alone.
func TestRunnerResumesAfterCrash(t *testing.T) {
	path, uid := chain4(t)
	crashed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	finished := State{Status: StatusNoop, Attempts: 1, Start: crashed, End: crashed.Add(time.Millisecond)}
	update(t, path, func(tx *store.Tx) error {
		if err := PutState(tx, uid, "n1.run#0", finished); err != nil {
			return err
		}
		if _, err := staging.New(resources.NewCatalog(tx), func() time.Time { return crashed }).Commit("n1.run", uid, "n1.run#0", nil); err != nil {
			return err
		}
		if err := PutState(tx, uid, "n2.run#0", State{Status: StatusInProgress, Start: crashed}); err != nil {
			return err
		}
		putRunner(t, tx, uid, deadPID(t))
		return nil
	})

	tr := &transitions{}
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1, Progress: tr.progress}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("Run after a crash: %v", err)
	}
	if tr.started("n1.run#0") {
		t.Error("n1.run#0 had finished before the crash but ran again")
	}
	if diff := cmp.Diff(finished, states["n1.run#0"]); diff != "" {
		t.Errorf("n1.run#0's recorded state changed (-before +after):\n%s", diff)
	}
	for _, id := range chain4IDs[1:] {
		if !tr.started(id) {
			t.Errorf("%s did not run", id)
		}
		if st := states[id]; !succeeded(st.Status) || st.Attempts != 1 || !st.Start.After(crashed) {
			t.Errorf("%s: %+v, want a fresh NOOP or SUCCESS after one attempt", id, st)
		}
	}
	view(t, path, func(tx *store.Tx) error {
		for id, cs := range mustCommitStates(t, tx, uid) {
			if !succeeded(cs.Status) || cs.Staged || cs.Committed != 1 {
				t.Errorf("%s: %+v, want succeeded, not staged, committed once", id, cs)
			}
		}
		if Open(tx, uid) {
			t.Error("the resumed plan is still open")
		}
		return nil
	})
}

// procState returns the state letter of pid from /proc ("R", "S", "Z"...).
func procState(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// TestRunnerClaim checks that only one live process runs a plan. The other
// runner is a child process (sleep) whose pid is written as the plan's
// runner, since a Runner ignores a record naming its own process.
func TestRunnerClaim(t *testing.T) {
	tests := []struct {
		name string
		// end brings the recorded runner to the state under test.
		end         func(t *testing.T, cmd *exec.Cmd)
		wantRunning bool
	}{
		{name: "alive", end: func(*testing.T, *exec.Cmd) {}, wantRunning: true},
		{name: "exited", end: func(t *testing.T, cmd *exec.Cmd) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}},
		{name: "zombie", end: func(t *testing.T, cmd *exec.Cmd) {
			// Killed but not reaped: kill(pid, 0) still succeeds, as it
			// does where pid 1 does not reap orphans.
			_ = cmd.Process.Kill()
			deadline := time.Now().Add(5 * time.Second)
			for procState(cmd.Process.Pid) != "Z" {
				if time.Now().After(deadline) {
					t.Skip("cannot observe a zombie through /proc here")
				}
				time.Sleep(5 * time.Millisecond)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, uid := chain4(t)
			other := exec.Command("sleep", "30")
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			reap := func() {
				once.Do(func() {
					_ = other.Process.Kill()
					_ = other.Wait()
				})
			}
			t.Cleanup(reap)
			update(t, path, func(tx *store.Tx) error {
				putRunner(t, tx, uid, other.Process.Pid)
				return nil
			})
			tt.end(t, other)

			tr := &transitions{}
			r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1, Progress: tr.progress}
			_, _, err := r.Run(context.Background(), nil)
			if !tt.wantRunning {
				if err != nil {
					t.Fatalf("Run with a dead runner recorded: %v, want the claim ignored", err)
				}
				view(t, path, func(tx *store.Tx) error {
					for id, cs := range mustCommitStates(t, tx, uid) {
						if !succeeded(cs.Status) {
							t.Errorf("%s ended %s", id, cs.Status)
						}
					}
					return nil
				})
				return
			}
			if !errors.Is(err, ErrRunning) {
				t.Fatalf("Run while pid %d runs the plan: %v, want ErrRunning", other.Process.Pid, err)
			}
			if want := "being run by pid " + strconv.Itoa(other.Process.Pid); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			for _, id := range chain4IDs {
				if tr.started(id) {
					t.Errorf("%s ran although the plan belongs to another process", id)
				}
			}
			view(t, path, func(tx *store.Tx) error {
				for id, cs := range mustCommitStates(t, tx, uid) {
					if want := (commitState{Status: StatusPending, Staged: true}); cs != want {
						t.Errorf("%s after the refusal: %+v, want %+v", id, cs, want)
					}
				}
				var rr runnerRecord
				raw, err := tx.Get(store.Plans, runnerKey(uid))
				if err != nil || json.Unmarshal(raw, &rr) != nil || rr.PID != other.Process.Pid {
					t.Errorf("the refused Run changed the runner record: %s, %v", raw, err)
				}
				return nil
			})
			// Once the other process is gone the plan can be run.
			reap()
			if _, _, err := r.Run(context.Background(), nil); err != nil {
				t.Fatalf("Run after the other runner died: %v", err)
			}
		})
	}
}

// TestBufferedStartReplaced checks that a task's final state replaces its
// INPROGRESS state while both wait in the buffer (they would be written
// in one transaction, where the first is never seen), that other buffered
// writes keep their order, and that a final state after a flush is
// buffered alone.
func TestBufferedStartReplaced(t *testing.T) {
	l := &ledger{}
	start := State{Status: StatusInProgress, Start: time.Unix(1, 0)}
	end := State{Status: StatusNoop, Start: time.Unix(1, 0), End: time.Unix(2, 0)}
	logged := 0
	l.bufMu.Lock()
	l.bufferState("a", start)
	l.bufferState("b", start)
	l.buf = append(l.buf, pendingWrite{write: func(*store.Tx) error { logged++; return nil }})
	l.bufferState("a", end)
	l.bufMu.Unlock()
	type w struct {
		id     string
		status Status
		write  bool
	}
	view := func(batch []pendingWrite) []w {
		var out []w
		for _, p := range batch {
			if p.id != "" || p.write != nil {
				out = append(out, w{p.id, p.st.Status, p.write != nil})
			}
		}
		return out
	}
	got := view(l.take())
	want := []w{{"b", StatusInProgress, false}, {"", "", true}, {"a", StatusNoop, false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("buffered %v, want %v", got, want)
	}
	l.bufMu.Lock()
	l.bufferState("b", end)
	l.bufMu.Unlock()
	if got, want := view(l.take()), []w{{"b", StatusNoop, false}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a flush, buffered %v, want %v", got, want)
	}
}

// TestRunnerRemovesAttemptRecords checks that a finished task leaves no
// record of its attempt: one left by a runner of another machine (which
// this runner does not kill) is removed with the task's final state, in a
// run whose noop tasks record none of their own.
func TestRunnerRemovesAttemptRecords(t *testing.T) {
	path, uid := chain4(t)
	update(t, path, func(tx *store.Tx) error {
		raw, err := json.Marshal(procsRecord{Runner: 1, Host: "elsewhere.invalid"})
		if err != nil {
			return err
		}
		return tx.Put(store.Plans, procsKey(uid, "n2.run#0"), raw)
	})
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 2, PerNode: 1}
	if _, _, err := r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	view(t, path, func(tx *store.Tx) error {
		return tx.ForEach(store.Plans, procsPrefix(uid), func(k string, _ []byte) error {
			t.Errorf("record %s left after its task finished", k)
			return nil
		})
	})
}

// TestInputDefsShared checks that tasks of resources decoded with one
// shared base share one index of its inputs, and that a base with the same
// name, directory and version but other inputs gets its own.
func TestInputDefsShared(t *testing.T) {
	b := resources.Base{Name: "b", Inputs: []resources.InputDef{{Name: "x"}, {Name: "y"}}}
	copied := b // a resource's copy of a shared decoded base
	other := resources.Base{Name: "b", Inputs: []resources.InputDef{{Name: "z"}}}
	var c inputDefsCache
	first := c.of(&b)
	if got := c.of(&copied); reflect.ValueOf(got).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Error("two copies of one decoded base got two indexes")
	}
	got := c.of(&other)
	if _, ok := got["z"]; !ok || len(got) != 1 {
		t.Errorf("a base with other inputs got the index %v", got)
	}
	if _, ok := first["x"]; !ok || len(first) != 2 {
		t.Errorf("index of the first base is %v", first)
	}
}

// TestWrittenForgetsRanInputs checks that once a task's final state is
// written, the runner no longer holds the outputs and inputs it ran with
// (a run of 100,000 tasks held them all), and that it holds those of a
// task whose final state is not written yet.
func TestWrittenForgetsRanInputs(t *testing.T) {
	l := &ledger{
		outputs: map[string]map[string]any{"a": {"o": 1}, "b": {"o": 2}},
		ran:     map[string]map[string]any{"a": {"i": 1}, "b": {"i": 2}},
	}
	l.written([]pendingWrite{{id: "a", st: State{Status: StatusSuccess}}, {id: "b", st: State{Status: StatusInProgress}}, {}})
	if _, ok := l.ran["a"]; ok || l.outputs["a"] != nil {
		t.Error("a's inputs and outputs kept after its final state was written")
	}
	if l.ran["b"] == nil || l.outputs["b"] == nil {
		t.Error("b's inputs and outputs dropped before its final state was written")
	}
}

// TestPrepareReactEdges checks that each task knows the plan's react edges
// from it, as copies (the plan's are dropped once the walk is built), in
// plan order, each list allocated at its size.
func TestPrepareReactEdges(t *testing.T) {
	withPrepared(t, func(rec *Record, infos map[string]*taskInfo) {
		want := map[string][]planner.Edge{}
		for _, e := range rec.Plan.Edges {
			if e.Kind == planner.EdgeReact {
				want[e.From] = append(want[e.From], e)
			}
		}
		if len(want["a.run#0"]) != 2 || len(want["b.run#0"]) != 1 {
			t.Fatalf("plan's react edges %v: want two from a, one from b", want)
		}
		for id, info := range infos {
			got := info.reactOut
			if len(got) != len(want[id]) || cap(got) != len(got) {
				t.Errorf("%s: %d react edges (room for %d), want %d", id, len(got), cap(got), len(want[id]))
				continue
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want[id][i]) {
					t.Errorf("%s: react edge %d is %+v, want the plan's %+v", id, i, got[i], want[id][i])
				}
			}
		}
	})
}

// TestWalkTasksInEdges checks that each task gets the plan's edges into it,
// in plan order, each list allocated at its size.
func TestWalkTasksInEdges(t *testing.T) {
	withPrepared(t, func(rec *Record, infos map[string]*taskInfo) {
		want := map[string][]walk.InEdge{}
		for i := range rec.Plan.Edges {
			e := &rec.Plan.Edges[i]
			want[e.To] = append(want[e.To], walk.InEdge{From: e.From, On: triggerOf(e)})
		}
		if len(want["c.run#0"]) < 2 {
			t.Fatalf("plan's edges into c: %v, want at least 2", want["c.run#0"])
		}
		tasks, err := walkTasks(rec, infos, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if !reflect.DeepEqual(task.In, want[task.ID]) || cap(task.In) != len(task.In) {
				t.Errorf("%s: in-edges %v (room for %d), want %v", task.ID, task.In, cap(task.In), want[task.ID])
			}
		}
	})
}

// withPrepared calls check with the plan of a small stack with react and
// after edges, and what prepare made of it.
func withPrepared(t *testing.T, check func(rec *Record, infos map[string]*taskInfo)) {
	t.Helper()
	path, uid := noopStack(t, []string{"a", "b", "c"}, "on a.run changed b.run", "on a.run success c.run", "on b.run changed c.run", "after b.run c.run")
	view(t, path, func(tx *store.Tx) error {
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		infos, err := (&Runner{}).prepare(tx, rec)
		if err != nil {
			return err
		}
		check(rec, infos)
		return nil
	})
}

// TestRunnerPrepare checks the command's preparation hook: it runs in the
// claiming transaction with the stored states, the states it returns are
// those the run starts from, and its error ends the run with nothing
// written, the claim included.
func TestRunnerPrepare(t *testing.T) {
	path, uid := noopStack(t, []string{"a", "b"})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A runner that died (after its last task, say) left its private
	// directory: it goes even though nothing runs.
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(tmp, fmt.Sprintf("solar-run-%d.1-7", dead.Process.Pid))
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "3-inputs.json"), []byte(`{"password":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("refused by the command")
	_, _, err = (&Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 1, Shell: &handler.Shell{TempDir: tmp},
		Prepare: func(tx *store.Tx, rec *Record, states map[string]State) (map[string]State, error) {
			if len(states) != 2 || rec.UID != uid {
				t.Errorf("Prepare got %d states of plan %s, want 2 of %s", len(states), rec.UID, uid)
			}
			return nil, refuse
		}}).Run(context.Background(), nil)
	if !errors.Is(err, refuse) {
		t.Fatalf("Run = %v, want the Prepare error", err)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dead runner's directory is still there after a run refused by Prepare (stat: %v)", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("a run refused by Prepare changed the store")
	}

	// The states Prepare returns are the run's starting point: a task it
	// reports finished does not run.
	var started []string
	_, states, err := (&Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 1,
		Prepare: func(tx *store.Tx, rec *Record, states map[string]State) (map[string]State, error) {
			states["a.run#0"] = State{Status: StatusSkipped, Reason: ReasonFiltered}
			return states, nil
		},
		Progress: func(id string, st State) {
			if st.Status == StatusInProgress {
				started = append(started, id)
			}
		}}).Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(started, []string{"b.run#0"}) || states["a.run#0"].Status != StatusSkipped {
		t.Fatalf("started %v, a.run#0 %v; want only b.run#0 started and a.run#0 as Prepare left it", started, states["a.run#0"])
	}
}

// TestFinalStates checks what decides whether a plan stays open after its
// walk: the walker's states with the skips the runner saw while no command
// skipped tasks since it looked, the stored states otherwise.
func TestFinalStates(t *testing.T) {
	path, uid := noopStack(t, []string{"a", "b", "c"})
	stopped := State{Status: StatusSkipped, Reason: ReasonStopped}
	walked := map[string]State{"a.run#0": {Status: StatusNoop}, "b.run#0": stopped, "c.run#0": stopped}
	update(t, path, func(tx *store.Tx) error {
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		// What the store holds: the runner wrote a and c; another command
		// filtered b out (the walker, stopped, saw it as stopped).
		if err := PutState(tx, uid, "a.run#0", walked["a.run#0"]); err != nil {
			return err
		}
		if err := PutState(tx, uid, "c.run#0", stopped); err != nil {
			return err
		}
		states, err := States(tx, rec)
		if err != nil {
			return err
		}
		if err := skipTasks(tx, uid, []string{"b.run#0"}, states, ReasonFiltered, time.Now()); err != nil {
			return err
		}
		edits := editCount(tx, uid)
		for _, tt := range []struct {
			name     string
			edits    uint64
			external map[string]State
			walkErr  error
			wantB    string // b's reason in the result
		}{
			{"the runner saw the skip", edits, map[string]State{"b.run#0": {Status: StatusSkipped, Reason: ReasonFiltered}}, nil, ReasonFiltered},
			{"a skip after the runner looked", edits - 1, map[string]State{}, nil, ReasonFiltered},
			{"a walk that failed", edits, map[string]State{}, errors.New("persist failed"), ReasonFiltered},
			{"no skip seen, none made since", edits, map[string]State{}, nil, ReasonStopped},
		} {
			ctl := &control{rec: rec, edits: tt.edits, external: tt.external}
			got, err := ctl.finalStates(tx, walked, tt.walkErr)
			if err != nil {
				return err
			}
			if got["b.run#0"].Reason != tt.wantB || got["a.run#0"].Status != StatusNoop || got["c.run#0"] != stopped {
				t.Errorf("%s: final states %v; want b %q", tt.name, got, tt.wantB)
			}
		}
		if walked["b.run#0"] != stopped {
			t.Error("finalStates changed the walker's map")
		}
		return nil
	})
}

// noopChain is n noop resources r0..r(n-1), each run after the one before.
func noopChain(t *testing.T, n int) (path, uid string, ids []string) {
	t.Helper()
	names := make([]string, n)
	var rules []string
	for i := range names {
		names[i] = "r" + strconv.Itoa(i)
		ids = append(ids, names[i]+".run#0")
		if i > 0 {
			rules = append(rules, "after "+names[i-1]+".run "+names[i]+".run")
		}
	}
	path, uid = noopStack(t, names, rules...)
	return path, uid, ids
}

// TestWriteBehind checks that buffered changes none of which must be
// durable yet are written on another goroutine while the walk goes on, in
// order, and that every task's state and commit reach the store.
func TestWriteBehind(t *testing.T) {
	defer func(n int) { lazyMax = n }(lazyMax)
	lazyMax = 40
	path, uid, ids := noopChain(t, 200)
	tr := &transitions{}
	var (
		mu     sync.Mutex
		writes int
		ahead  int // tasks finished past the first write's while it waited
	)
	finished := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		n := 0
		for _, seen := range tr.seen {
			if len(seen) > 0 && seen[len(seen)-1].Finished() {
				n++
			}
		}
		return n
	}
	defer func() { behindHook = nil }()
	behindHook = func() error {
		// Hold the first write back until the walker has finished three
		// tasks past those it holds: it could not, were it waiting for
		// this write. (A task takes two places in the buffer, its start
		// and its end: the first write holds 20 tasks, and the walker can
		// finish 19 more before the buffer is full again.)
		mu.Lock()
		writes++
		first := writes == 1
		mu.Unlock()
		if !first {
			return nil
		}
		want := lazyMax/2 + 3
		deadline := time.Now().Add(10 * time.Second)
		for finished() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		ahead = finished() - lazyMax/2
		mu.Unlock()
		return nil
	}
	_, states, err := (&Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, Progress: tr.progress}).Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if writes < 2 {
		t.Errorf("%d writes behind for 200 tasks with a buffer of %d; want several", writes, lazyMax)
	}
	if ahead < 3 {
		t.Errorf("while the first write behind waited, %d tasks finished; want 3 (the walker waited for it)", ahead)
	}
	view(t, path, func(tx *store.Tx) error {
		css := mustCommitStates(t, tx, uid)
		for _, id := range ids {
			if want := (commitState{Status: StatusNoop, Committed: 1}); css[id] != want {
				t.Errorf("%s: %+v, want %+v", id, css[id], want)
			}
			if states[id].Status != StatusNoop {
				t.Errorf("%s ended %s", id, states[id].Status)
			}
		}
		if Open(tx, uid) {
			t.Error("the plan is still open after every task finished")
		}
		return nil
	})
}

// TestWriteBehindFails checks that a write behind that fails fails the
// run, and that nothing buffered after it reaches the store: a later
// state must not be stored without the earlier ones.
func TestWriteBehindFails(t *testing.T) {
	defer func(n int) { lazyMax = n }(lazyMax)
	lazyMax = 8
	path, uid, ids := noopChain(t, 60)
	defer func() { behindHook = nil }()
	var mu sync.Mutex
	writes := 0
	behindHook = func() error {
		mu.Lock()
		defer mu.Unlock()
		writes++
		if writes == 2 {
			return errors.New("disk on fire")
		}
		return nil
	}
	_, _, err := (&Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4}).Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Run: %v; want the write behind's error", err)
	}
	view(t, path, func(tx *store.Tx) error {
		css := mustCommitStates(t, tx, uid)
		// The first write held the first tasks; whatever came after the
		// failed one is not stored: the stored tasks are a prefix.
		done := 0
		for done < len(ids) && css[ids[done]].Status == StatusNoop {
			done++
		}
		if done == 0 || done == len(ids) {
			t.Fatalf("%d of %d tasks stored as done; want some, not all", done, len(ids))
		}
		for _, id := range ids[done:] {
			if cs := css[id]; cs.Status == StatusNoop || cs.Committed != 0 || !cs.Staged {
				t.Errorf("%s after the failed write: %+v; want not done, still staged", id, cs)
			}
		}
		return nil
	})
	// Resume finishes the plan.
	if _, states, err := (&Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4}).Run(context.Background(), nil); err != nil {
		t.Fatalf("resume: %v", err)
	} else if states[ids[len(ids)-1]].Status != StatusNoop {
		t.Errorf("after resume the last task is %s", states[ids[len(ids)-1]].Status)
	}
}

// heldSyncs makes the sync of every eager write of the runner wait for a
// value from the returned channel (an error fails it), once per write,
// however many wait for it.
func heldSyncs(t *testing.T) chan error {
	t.Helper()
	hold := make(chan error)
	lateHook = func(durable func() error) func() error {
		return sync.OnceValue(func() error {
			if err := <-hold; err != nil {
				return err
			}
			return durable()
		})
	}
	t.Cleanup(func() { lateHook = nil })
	return hold
}

// shellChain makes a store with a chain of n tasks of the bench base,
// each appending its task to runs.log in the returned directory.
func shellChain(t *testing.T, n int) (path, uid, dir string) {
	t.Helper()
	base, err := filepath.Abs(filepath.Join("testdata", "benchbase"))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	path, uid = benchStoreAt(t, testStorePath(t), "chain", n, base, map[string]any{"dir": dir})
	return path, uid, dir
}

// runsLogged returns the tasks the bench base's scripts logged in dir.
func runsLogged(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(string(raw))
}

// A task's script starts only once the commit of the task it depends on is
// durable: while that sync is held, the next script does not start.
func TestDependentWaitsForSync(t *testing.T) {
	path, uid, dir := shellChain(t, 3)
	hold := heldSyncs(t)
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1}
	ran := make(chan error, 1)
	var states map[string]State
	go func() {
		var err error
		_, states, err = r.Run(context.Background(), nil)
		ran <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); len(runsLogged(t, dir)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first script never ran")
		}
	}
	time.Sleep(150 * time.Millisecond)
	if got := runsLogged(t, dir); len(got) != 1 {
		t.Fatalf("with the first commit's sync held, the scripts logged %q", got)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case hold <- nil:
			case <-stop:
				return
			}
		}
	}()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if got := runsLogged(t, dir); len(got) != 3 {
		t.Fatalf("after the run the scripts logged %q", got)
	}
	for id, st := range states {
		if st.Status != StatusSuccess {
			t.Errorf("%s ended %s: %s", id, st.Status, st.Err)
		}
	}
}

// A failed sync keeps the dependent's script from starting, and says so.
func TestDependentNotStartedWhenSyncFails(t *testing.T) {
	path, uid, dir := shellChain(t, 3)
	hold := heldSyncs(t)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case hold <- errors.New("disk on fire"):
			case <-stop:
				return
			}
		}
	}()
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := runsLogged(t, dir); len(got) != 1 {
		t.Fatalf("after a failed sync the scripts logged %q", got)
	}
	var failed []string
	for id, st := range states {
		if st.Status == StatusError {
			failed = append(failed, id)
			if !strings.Contains(st.Err, "not started") || !strings.Contains(st.Err, "disk on fire") {
				t.Errorf("%s failed with %q", id, st.Err)
			}
		}
	}
	if len(failed) != 1 {
		t.Fatalf("tasks that failed: %q", failed)
	}
}

// The record Run returns has no edges (the walk has its own, and a plan of
// 100,000 tasks spent a fifth of its heap on them), but the record Load
// keeps for the next caller is not that one: Load reads the edges whole.
func TestRunDropsTheEdgesOfItsOwnRecord(t *testing.T) {
	path, uid := chain4(t)
	load := func() *Record {
		t.Helper()
		var rec *Record
		view(t, path, func(tx *store.Tx) error {
			var err error
			rec, err = Load(tx, uid)
			return err
		})
		return rec
	}
	if n := len(load().Plan.Edges); n != 3 {
		t.Fatalf("the plan has %d edges, want 3", n)
	}
	rec, _, err := (&Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 1}).Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Plan.Edges != nil {
		t.Errorf("Run returned %d edges, want none", len(rec.Plan.Edges))
	}
	if n := len(load().Plan.Edges); n != 3 {
		t.Fatalf("after the run Load finds %d edges, want 3", n)
	}
	// A noop task keeps no inputs while it runs; its commit records them.
	view(t, path, func(tx *store.Tx) error {
		snap, err := staging.Committed(tx, "n2")
		if err != nil {
			return err
		}
		if snap == nil || !reflect.DeepEqual(snap.Inputs, map[string]any{"location": "", "value": ""}) {
			t.Errorf("n2 committed with inputs %+v, want location and value empty", snap)
		}
		return nil
	})
}
