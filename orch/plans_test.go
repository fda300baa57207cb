package orch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// testStorePath returns the path of a new store in a temp dir, checked for
// consistency at cleanup. The store is closed between uses (see update),
// since a Runner opens the file itself and bbolt's lock would make it wait.
func testStorePath(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "solar.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Cleanup(func() {
		db, err := store.Open(path, store.Options{})
		if err != nil {
			t.Errorf("reopen store: %v", err)
			return
		}
		defer db.Close()
		if err := db.Check(); err != nil {
			t.Errorf("store inconsistent: %v", err)
		}
	})
	return path
}

// update runs fn in one write transaction on the store at path, which is
// closed again before it returns.
func update(t *testing.T, path string, fn func(tx *store.Tx) error) {
	t.Helper()
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in one read transaction on the store at path.
func view(t *testing.T, path string, fn func(tx *store.Tx) error) {
	t.Helper()
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(fn); err != nil {
		t.Fatal(err)
	}
}

// stagedNode and triggeredNode make plan nodes by hand: the planner's own
// tests cover how real plans are built.
func stagedNode(resource, action string) planner.Node {
	return planner.Node{ID: resource + "." + action + "#0", Resource: resource, Action: action, Staged: true, StagedKey: resource + "." + action}
}

func triggeredNode(resource, action string) planner.Node {
	return planner.Node{ID: resource + "." + action + "#0", Resource: resource, Action: action, TriggeredBy: []string{"on x.run changed " + resource + "." + action}}
}

// savePlan stores a plan made of nodes under a new uid and returns the uid.
func savePlan(t *testing.T, tx *store.Tx, now time.Time, nodes ...planner.Node) string {
	t.Helper()
	uid, err := NewUID(tx, now)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{UID: uid, CreatedAt: now, Selection: []string{}, Plan: &planner.Plan{Nodes: nodes, Edges: []planner.Edge{}, Warnings: []string{}}}
	if err := Save(tx, rec); err != nil {
		t.Fatal(err)
	}
	return uid
}

func TestResolveWithoutPlans(t *testing.T) {
	path := testStorePath(t)
	for _, ref := range []string{"last", "last~1"} {
		t.Run(ref, func(t *testing.T) {
			view(t, path, func(tx *store.Tx) error {
				_, err := Resolve(tx, ref)
				if !errors.Is(err, ErrNoPlans) {
					t.Errorf("Resolve(%q) = %v, want ErrNoPlans", ref, err)
				}
				return nil
			})
		})
	}
	view(t, path, func(tx *store.Tx) error {
		if _, err := Resolve(tx, "20260101-000000-0001"); !errors.Is(err, ErrUnknownPlan) {
			t.Errorf("Resolve(uid) on an empty store = %v, want ErrUnknownPlan", err)
		}
		return nil
	})
}

func TestResolve(t *testing.T) {
	path := testStorePath(t)
	// Three plans created within one second: the sequence number alone
	// must keep them in creation order.
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var uids []string
	update(t, path, func(tx *store.Tx) error {
		for _, r := range []string{"a", "b", "c"} {
			uids = append(uids, savePlan(t, tx, now, stagedNode(r, "run")))
		}
		return nil
	})
	tests := []struct {
		ref     string
		want    string
		wantErr error
	}{
		{ref: "last", want: uids[2]},
		{ref: "last~0", want: uids[2]},
		{ref: "last~1", want: uids[1]},
		{ref: "last~2", want: uids[0]},
		{ref: uids[1], want: uids[1]},
		{ref: "last~3", wantErr: ErrUnknownPlan},
		{ref: "last~-1", wantErr: ErrUnknownPlan},
		{ref: "last~x", wantErr: ErrUnknownPlan},
		{ref: "last~", wantErr: ErrUnknownPlan},
		{ref: "nope", wantErr: ErrUnknownPlan},
		{ref: "", wantErr: ErrUnknownPlan},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			view(t, path, func(tx *store.Tx) error {
				got, err := Resolve(tx, tt.ref)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("Resolve(%q) = %q, %v; want error %v", tt.ref, got, err, tt.wantErr)
					}
					return nil
				}
				if err != nil || got != tt.want {
					t.Errorf("Resolve(%q) = %q, %v; want %q", tt.ref, got, err, tt.want)
				}
				return nil
			})
		})
	}
}

func TestLoadUnknownPlan(t *testing.T) {
	path := testStorePath(t)
	view(t, path, func(tx *store.Tx) error {
		if _, err := Load(tx, "20260101-000000-0001"); !errors.Is(err, ErrUnknownPlan) {
			t.Errorf("Load of a missing plan = %v, want ErrUnknownPlan", err)
		}
		return nil
	})
}

func TestPending(t *testing.T) {
	path := testStorePath(t)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var open, closed string
	update(t, path, func(tx *store.Tx) error {
		open = savePlan(t, tx, now,
			stagedNode("a", "run"),        // pending: counts
			stagedNode("b", "run"),        // interrupted: counts
			stagedNode("c", "run"),        // succeeded: done
			stagedNode("d", "run"),        // stopped: resume runs it, so it counts
			stagedNode("g", "run"),        // skipped for a failure: done
			triggeredNode("e", "restart"), // not staged: never an entry of its own
		)
		for id, st := range map[string]State{
			"b.run#0": {Status: StatusInProgress},
			"c.run#0": {Status: StatusSuccess},
			"d.run#0": {Status: StatusSkipped, Reason: ReasonStopped},
			"g.run#0": {Status: StatusSkipped, Reason: ReasonUpstreamFailed + ": x.run#0"},
		} {
			if err := PutState(tx, open, id, st); err != nil {
				return err
			}
		}
		closed = savePlan(t, tx, now, stagedNode("f", "run"))
		return SetOpen(tx, closed, false)
	})
	view(t, path, func(tx *store.Tx) error {
		got, err := Pending(tx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"a.run": open, "b.run": open, "d.run": open}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Pending (-want +got):\n%s", diff)
		}
		return nil
	})
}

func TestSupersede(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	tests := []struct {
		name  string
		nodes []planner.Node
		done  map[string]State // states recorded before Supersede
		keys  []string
		// wantPlans is what Supersede reports; wantStates the old plan's
		// states afterwards; wantOpen whether it is still unfinished.
		wantPlans  bool
		wantStates map[string]State
		wantOpen   bool
		// wantKept, when set, is the finished tasks Supersede reports left
		// as they were.
		wantKept map[Status]int
	}{
		{
			name:  "an interrupted plan keeps what finished, ERROR included",
			nodes: []planner.Node{stagedNode("a", "run"), stagedNode("b", "run"), stagedNode("e", "run")},
			done: map[string]State{
				"a.run#0": {Status: StatusSuccess},
				"b.run#0": {Status: StatusSkipped, Reason: ReasonStopped},
				"e.run#0": {Status: StatusError, Err: "boom"},
			},
			keys:      []string{"b.run", "e.run"},
			wantPlans: true,
			wantStates: map[string]State{
				"a.run#0": {Status: StatusSuccess},
				"b.run#0": {Status: StatusSkipped, Reason: "superseded by NEW", End: later},
				"e.run#0": {Status: StatusError, Err: "boom"},
			},
			wantOpen: false,
			wantKept: map[Status]int{StatusSuccess: 1, StatusError: 1},
		},
		{
			name:      "some tasks taken over, others left to run",
			nodes:     []planner.Node{stagedNode("a", "run"), stagedNode("b", "run"), triggeredNode("c", "restart")},
			keys:      []string{"a.run", "x.run"},
			wantPlans: true,
			wantStates: map[string]State{
				"a.run#0":     {Status: StatusSkipped, Reason: "superseded by NEW", End: later},
				"b.run#0":     {Status: StatusPending},
				"c.restart#0": {Status: StatusPending},
			},
			wantOpen: true,
		},
		{
			name:      "everything taken over closes the plan",
			nodes:     []planner.Node{stagedNode("a", "run"), stagedNode("b", "run")},
			done:      map[string]State{"b.run#0": {Status: StatusSuccess}},
			keys:      []string{"a.run"},
			wantPlans: true,
			wantStates: map[string]State{
				"a.run#0": {Status: StatusSkipped, Reason: "superseded by NEW", End: later},
				"b.run#0": {Status: StatusSuccess},
			},
			wantOpen: false,
		},
		{
			name:      "a finished task is not superseded",
			nodes:     []planner.Node{stagedNode("a", "run"), stagedNode("b", "run")},
			done:      map[string]State{"a.run#0": {Status: StatusError, Err: "boom"}},
			keys:      []string{"a.run"},
			wantPlans: false,
			wantStates: map[string]State{
				"a.run#0": {Status: StatusError, Err: "boom"},
				"b.run#0": {Status: StatusPending},
			},
			wantOpen: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := testStorePath(t)
			var uid string
			update(t, path, func(tx *store.Tx) error {
				uid = savePlan(t, tx, now, tt.nodes...)
				for id, st := range tt.done {
					if err := PutState(tx, uid, id, st); err != nil {
						return err
					}
				}
				return nil
			})
			update(t, path, func(tx *store.Tx) error {
				plans, err := Supersede(tx, tt.keys, "NEW", later)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, p := range plans {
					got = append(got, p.UID)
					if tt.wantKept != nil {
						if diff := cmp.Diff(tt.wantKept, p.Kept); diff != "" {
							t.Errorf("Supersede kept (-want +got):\n%s", diff)
						}
					}
				}
				var want []string
				if tt.wantPlans {
					want = []string{uid}
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("Supersede plans (-want +got):\n%s", diff)
				}
				return nil
			})
			view(t, path, func(tx *store.Tx) error {
				rec, err := Load(tx, uid)
				if err != nil {
					t.Fatal(err)
				}
				states, err := States(tx, rec)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.wantStates, states); diff != "" {
					t.Errorf("states after Supersede (-want +got):\n%s", diff)
				}
				if got := Open(tx, uid); got != tt.wantOpen {
					t.Errorf("plan open = %v, want %v", got, tt.wantOpen)
				}
				pending, err := Pending(tx)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range tt.keys {
					if p, ok := pending[k]; ok && tt.wantPlans {
						t.Errorf("entry %s still pending in plan %s after Supersede", k, p)
					}
				}
				return nil
			})
		})
	}
}

// TestLoadSizesTaskGraph checks that a loaded plan is the saved one, with
// its task lists allocated once at their size (a plan of 100,000 tasks
// allocated five times their size while encoding/json grew them) and its
// edges sharing the strings of their tasks, and that a record without a
// task graph is still refused as damaged.
func TestLoadSizesTaskGraph(t *testing.T) {
	path := testStorePath(t)
	p, err := planner.Build(planner.GenInput("chain", 1000))
	if err != nil {
		t.Fatal(err)
	}
	want := &Record{UID: "20260101-000000-0001", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Selection: []string{"role=noop"}, Plan: p}
	update(t, path, func(tx *store.Tx) error {
		if err := Save(tx, want); err != nil {
			return err
		}
		if err := tx.Put(store.Plans, planKey("20260101-000000-0002"), []byte(`{"uid":"20260101-000000-0002"}`)); err != nil {
			return err
		}
		return tx.Put(store.Plans, planKey("20260101-000000-0003"), []byte(`{"uid":"20260101-000000-0003","plan":null}`))
	})
	view(t, path, func(tx *store.Tx) error {
		got, err := Load(tx, want.UID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("loaded plan differs from the saved one (-saved +loaded):\n%s", diff)
		}
		if cap(got.Plan.Nodes) != len(got.Plan.Nodes) || cap(got.Plan.Edges) != len(got.Plan.Edges) {
			t.Errorf("task lists of %d nodes and %d edges have room for %d and %d: grown while decoding, not sized",
				len(got.Plan.Nodes), len(got.Plan.Edges), cap(got.Plan.Nodes), cap(got.Plan.Edges))
		}
		// Edges share their strings with their nodes.
		byID := map[string]*planner.Node{}
		for i := range got.Plan.Nodes {
			byID[got.Plan.Nodes[i].ID] = &got.Plan.Nodes[i]
		}
		shared := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
		rules := 0
		for _, e := range got.Plan.Edges {
			if !shared(e.From, byID[e.From].ID) || !shared(e.To, byID[e.To].ID) {
				t.Fatalf("edge %s -> %s holds its own copies of the task ids", e.From, e.To)
			}
			for _, text := range byID[e.To].TriggeredBy {
				if text == e.Rule {
					if !shared(text, e.Rule) {
						t.Fatalf("edge %s -> %s holds its own copy of the rule %q", e.From, e.To, e.Rule)
					}
					rules++
				}
			}
		}
		if rules == 0 {
			t.Error("no edge's rule is among the texts of the rules that trigger its task: the chain has react rules")
		}
		for _, uid := range []string{"20260101-000000-0002", "20260101-000000-0003"} {
			if _, err := Load(tx, uid); !errors.Is(err, store.ErrDamaged) {
				t.Errorf("Load of a record without a task graph = %v, want store.ErrDamaged", err)
			}
		}
		return nil
	})
}

// TestLoadDecodesOnce checks that loading an unchanged plan again returns
// the record decoded the first time (the CLI checks a plan, then its runner
// loads it: a second each at 100,000 tasks), and that a changed record, or
// another plan, is decoded afresh.
func TestLoadDecodesOnce(t *testing.T) {
	path := testStorePath(t)
	p, err := planner.Build(planner.GenInput("chain", 10))
	if err != nil {
		t.Fatal(err)
	}
	a := &Record{UID: "20260101-000000-0001", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Plan: p}
	b := &Record{UID: "20260101-000000-0002", CreatedAt: a.CreatedAt, Plan: p}
	update(t, path, func(tx *store.Tx) error {
		if err := Save(tx, a); err != nil {
			return err
		}
		return Save(tx, b)
	})
	load := func(tx *store.Tx, uid string) *Record {
		t.Helper()
		rec, err := Load(tx, uid)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	var first *Record
	view(t, path, func(tx *store.Tx) error {
		first = load(tx, a.UID)
		if load(tx, a.UID) != first {
			t.Error("an unchanged plan was decoded again")
		}
		if got := load(tx, b.UID); got == first || got.UID != b.UID {
			t.Errorf("plan %s loaded as %s", b.UID, got.UID)
		}
		return nil
	})
	changed := *a
	changed.Selection = []string{"role=web"}
	update(t, path, func(tx *store.Tx) error { return Save(tx, &changed) })
	view(t, path, func(tx *store.Tx) error {
		if got := load(tx, a.UID); got == first || len(got.Selection) != 1 {
			t.Errorf("a changed plan record loaded as %+v, the record decoded before it changed", got.Selection)
		}
		return nil
	})
}

// TestDecodeSplit checks that a plan record as Save writes it, of any size
// (a big one is decoded in pieces on every core, a small one in one piece
// on the caller's goroutine), decodes to what encoding/json makes of it,
// whatever its strings hold (even the punctuation the pieces are cut at),
// and that a record with a piece that does not decode is left to
// encoding/json, which names what is wrong.
func TestDecodeSplit(t *testing.T) {
	for _, n := range []int{30000, 1000, 3, 0} {
		t.Run(fmt.Sprintf("tasks=%d", n), func(t *testing.T) {
			p := &planner.Plan{Nodes: []planner.Node{}, Edges: []planner.Edge{}}
			if n > 0 {
				var err error
				if p, err = planner.Build(planner.GenInput("chain", n)); err != nil {
					t.Fatal(err)
				}
				p.Warnings = []string{`a warning with },{"id": and ],"edges":[ inside`}
				for i := range p.Nodes {
					if i%1000 == 1 {
						p.Nodes[i].TriggeredBy = append(p.Nodes[i].TriggeredBy, `on x.run changed y.run },{"id":"z"} ],"warnings":`)
					}
				}
			}
			rec := &Record{UID: "20260101-000000-0001", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Selection: []string{"role=noop"}, Plan: p}
			raw, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if n == 30000 && len(raw) < 2*splitPiece {
				t.Fatalf("a record of %d bytes is cut in one piece; the test needs several", len(raw))
			}
			var want Record
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			got := decodeSplit(raw)
			if got == nil {
				t.Fatal("decodeSplit refused a record laid out as Save writes it")
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Fatalf("decoded by the split, the record differs (-encoding/json +split):\n%s", diff)
			}
			if n == 0 {
				return
			}
			// A bad task, far into the list when there are many.
			bad := bytes.Replace(raw, []byte(`"weight":1}`), []byte(`"weight":"one"}`), 1)
			if decodeSplit(bad) != nil {
				t.Fatal("decodeSplit accepted a record with a task that does not decode")
			}
			if _, err := decodeRecord(rec.UID, bad); !errors.Is(err, store.ErrDamaged) {
				t.Fatalf("decodeRecord of a record with a bad task = %v, want store.ErrDamaged", err)
			}
		})
	}
}
