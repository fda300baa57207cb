package staging_test

import (
	"testing"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// TestActors: an entry records who staged it last (StagedBy, as StagedAt
// is the last change's time); its history entry keeps that and adds who
// ran it and where (RanBy, RanOn: the committing Stager's Actor and Host).
// A Stager without an Actor records no one, as entries written before
// actors read.
func TestActors(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		st.By("alice@laptop")
		if err := create(cat, st, "a", "noop", "role=web", "value=1"); err != nil {
			return err
		}
		return create(cat, st, "b", "noop", "role=web", "value=1")
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		st.By("bob@desk")
		return update(cat, st, "b", "value=2")
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		return create(cat, st, "c", "noop", "role=web", "value=1")
	})
	want := map[string]string{"a.run": "alice@laptop", "b.run": "bob@desk", "c.run": ""}
	view(t, db, func(tx *store.Tx) {
		for key, who := range want {
			e, err := staging.Get(tx, key)
			if err != nil {
				t.Fatal(err)
			}
			if e.StagedBy != who {
				t.Errorf("%s staged by %q, want %q", key, e.StagedBy, who)
			}
		}
		heads, err := staging.SelectHeads(tx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range heads {
			if h.StagedBy != want[h.Key] {
				t.Errorf("head %s staged by %q, want %q", h.Key, h.StagedBy, want[h.Key])
			}
		}
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		st.Actor, st.Host = "carol@ci", "runner1"
		for _, key := range []string{"a.run", "b.run"} {
			if _, err := st.Commit(key, "plan-1", key+"#0", nil); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx *store.Tx) {
		hs, err := staging.History(tx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != 2 {
			t.Fatalf("%d history entries, want 2", len(hs))
		}
		for _, h := range hs {
			if h.StagedBy != want[h.Key] || h.RanBy != "carol@ci" || h.RanOn != "runner1" {
				t.Errorf("history %s: staged by %q, ran by %q on %q; want %q, carol@ci, runner1", h.Key, h.StagedBy, h.RanBy, h.RanOn, want[h.Key])
			}
		}
	})
}

func view(t *testing.T, db *store.DB, fn func(tx *store.Tx)) {
	t.Helper()
	if err := db.View(func(tx *store.Tx) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
}
