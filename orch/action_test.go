package orch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// TestActionPlan: a one-task plan of one action is stored pinned, takes
// the staged entry of that action when there is one, refuses an entry
// pending elsewhere and bad names with nothing written; CheckAction
// predicts that task and writes nothing.
func TestActionPlan(t *testing.T) {
	w := newDriftWorld(t)
	plans := func() int {
		var n int
		view(t, w.path, func(tx *store.Tx) error {
			uids, err := UIDs(tx)
			n = len(uids)
			return err
		})
		return n
	}
	before := plans()

	// Bad names: the sentinel, nothing written.
	for _, c := range []struct {
		name, action string
		want         error
	}{
		{"nosuch", "run", resources.ErrNotFound},
		{"a", "frobnicate", staging.ErrUnknownAction},
	} {
		err := w.actionPlan(c.name, c.action)
		if !errors.Is(err, c.want) {
			t.Errorf("ActionPlan(%s, %s) = %v, want %v", c.name, c.action, err, c.want)
		}
	}
	if got := plans(); got != before {
		t.Fatalf("bad names wrote %d plans", got-before)
	}

	// Nothing staged: a staged (not reactive) task with no entry, pinned
	// to the resource's values.
	rec, pins := w.mustActionPlan("a", "run")
	n := rec.Plan.Nodes[0]
	if len(rec.Plan.Nodes) != 1 || n.ID != "a.run#0" || !n.Staged || n.StagedKey != "" || n.Weight != 1 {
		t.Fatalf("plan = %+v, want one staged task a.run#0 without entry", rec.Plan.Nodes)
	}
	if v := pins["a.run#0"].Inputs["value"]; v != "a1" {
		t.Errorf("pinned value = %v, want a1", v)
	}

	// Staged: the task is the entry's, and its diff is pinned.
	update(t, w.path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if _, err := cat.Update("b", resources.Values{Raw: map[string]any{"value": "b2"}}, resources.Meta{}); err != nil {
			return err
		}
		_, err := staging.New(cat, time.Now).Touch("update", "b")
		return err
	})
	if p, err := w.check("b", "update"); err != nil || p.What != WouldChange {
		t.Fatalf("CheckAction(b, update) = %+v, %v; want would change", p, err)
	}
	if b, err := os.ReadFile(filepath.Join(w.out, "b")); err != nil || string(b) != "b1\n" {
		t.Fatalf("the check changed b: %q, %v", b, err)
	}
	rec, pins = w.mustActionPlan("b", "update")
	if n := rec.Plan.Nodes[0]; n.StagedKey != "b.update" {
		t.Errorf("StagedKey = %q, want b.update", n.StagedKey)
	}
	if p := pins["b.update#0"]; p.Inputs["value"] != "b2" || len(p.Diff) == 0 {
		t.Errorf("pin = %+v, want value b2 with the entry's diff", p)
	}

	// That plan holds b.update now: another is refused, naming it.
	mid := plans()
	if err := w.actionPlan("b", "update"); !errors.Is(err, ErrPending) {
		t.Errorf("second ActionPlan(b, update) = %v, want ErrPending", err)
	}
	if got := plans(); got != mid {
		t.Errorf("the refusal wrote %d plans", got-mid)
	}
	if _, err := w.check("b", "update"); err != nil {
		t.Errorf("CheckAction refused a pending entry: %v", err)
	}
	if got := plans(); got != mid {
		t.Errorf("CheckAction wrote %d plans", got-mid)
	}
}

func (w *driftWorld) actionPlan(name, action string) error {
	_, _, err := w.tryActionPlan(name, action)
	return err
}

func (w *driftWorld) mustActionPlan(name, action string) (*Record, map[string]*Pin) {
	w.t.Helper()
	rec, pins, err := w.tryActionPlan(name, action)
	if err != nil {
		w.t.Fatal(err)
	}
	return rec, pins
}

func (w *driftWorld) tryActionPlan(name, action string) (*Record, map[string]*Pin, error) {
	var (
		rec  *Record
		pins map[string]*Pin
	)
	db, err := store.Open(w.path, store.Options{NoSync: true})
	if err != nil {
		w.t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *store.Tx) error {
		var err error
		if rec, err = ActionPlan(tx, name, action, time.Now(), "tester"); err != nil {
			return err
		}
		pins, err = Pins(tx, rec.UID)
		return err
	})
	return rec, pins, err
}

func (w *driftWorld) check(name, action string) (Prediction, error) {
	r := &Runner{Store: store.NewHandle(w.path), Concurrency: 1, PerNode: 1, CacheDir: w.cache, Now: time.Now}
	_, preds, err := r.CheckAction(context.Background(), nil, name, action)
	if err != nil || len(preds) != 1 {
		return Prediction{}, errors.Join(err, errors.New("want one prediction"))
	}
	return preds[0], nil
}
