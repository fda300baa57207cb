package orch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// probeStack creates probe resources (outcome per name), commits nothing,
// adds the rules and processes the entries tagged sel=1 into a plan.
func probeStack(t *testing.T, outcomes map[string]string, selected []string, rules ...string) (path, uid, work string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	work = t.TempDir()
	path = testStorePath(t)
	sel := map[string]bool{}
	for _, n := range selected {
		sel[n] = true
	}
	update(t, path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		stg := staging.New(cat, time.Now)
		for _, n := range []string{"k", "ha", "gc", "mon"} {
			ts := tags.Set{}
			if sel[n] {
				ts["sel"] = "1"
			}
			vals := resources.Values{Raw: map[string]any{"dir": work, "outcome": outcomes[n]}}
			if _, err := cat.Create(resources.CreateSpec{Name: n, Base: base, Values: vals, Tags: ts}, false); err != nil {
				return err
			}
			if _, err := stg.Touch("create", n); err != nil {
				return err
			}
		}
		var parsed []events.Rule
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
		expr, err := tags.ParseExpr("sel=1")
		if err != nil {
			return err
		}
		res, err := Process(tx, []*tags.Expr{expr}, []string{"sel=1"}, false, time.Now(), "")
		if err != nil {
			return err
		}
		uid = res.Record.UID
		return nil
	})
	return path, uid, work
}

// A subscriber hangs after the last instance of a cycle-broken action. When
// only the earlier instance changed and the subscriber fails, its refresh
// must stay staged: nothing is forgotten.
func TestRefreshFollowsEveryInstance(t *testing.T) {
	rules := []string{
		"on k.run changed ha.run",
		"on ha.run changed gc.run",
		"on gc.run changed ha.run",
		"on ha.run changed mon.reload",
	}
	outcomes := map[string]string{"k": "changed", "ha": "changed-once", "gc": "changed", "mon": "fail"}
	path, uid, _ := probeStack(t, outcomes, []string{"k"}, rules...)
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{"k.run#0": StatusSuccess, "ha.run#0": StatusSuccess, "gc.run#0": StatusSuccess, "ha.run#1": StatusNoop, "mon.reload#0": StatusError}
	for id, st := range want {
		if states[id].Status != st {
			t.Fatalf("%s ended %s, want %s (all: %+v)", id, states[id].Status, st, states)
		}
	}
	view(t, path, func(tx *store.Tx) error {
		e, err := staging.Get(tx, "mon.reload")
		if err != nil {
			t.Fatalf("the failed subscriber's refresh is not staged: %v", err)
		}
		if e.Cause != "refresh: ha.run#0 changed" {
			t.Errorf("refresh cause = %q", e.Cause)
		}
		return nil
	})
}

// A refresh is committed when its subscriber succeeds.
func TestRefreshCommittedWhenSubscriberSucceeds(t *testing.T) {
	outcomes := map[string]string{"k": "changed", "ha": "changed", "gc": "ok", "mon": "ok"}
	path, uid, _ := probeStack(t, outcomes, []string{"k"}, "on k.run changed ha.run")
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1}
	if _, _, err := r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	view(t, path, func(tx *store.Tx) error {
		if tx.Has(store.Staged, "ha.run") {
			t.Error("ha.run ran and succeeded, but an entry is still staged for it")
		}
		if !tx.Has(store.Staged, "gc.run") {
			t.Error("gc.run was outside the selection and must stay staged")
		}
		return nil
	})
}
