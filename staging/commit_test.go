package staging_test

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// addRules adds rules as "solar events add" does.
func addRules(tx *store.Tx, cat *resources.Catalog, texts ...string) error {
	rules := make([]events.Rule, len(texts))
	for i, s := range texts {
		r, err := events.Parse(s)
		if err != nil {
			return err
		}
		rules[i] = r
	}
	_, err := events.Add(tx, cat, rules...)
	return err
}

// ruleTexts lists every stored rule.
func ruleTexts(tb testing.TB, db *store.DB) []string {
	tb.Helper()
	out := []string{}
	if err := db.View(func(tx *store.Tx) error {
		rules, err := events.List(tx)
		for _, r := range rules {
			out = append(out, r.String())
		}
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return out
}

// state is what a test checks about one resource after a command.
type state struct {
	exists    bool
	removing  bool
	own       map[string]string // own input values, formatted
	incoming  []string          // emitters, in connection order
	receivers []string
	committed bool
}

func stateOf(tb testing.TB, db *store.DB, name string) state {
	tb.Helper()
	var s state
	if err := db.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		snap, err := staging.Committed(tx, name)
		if err != nil {
			return err
		}
		s.committed = snap != nil
		r, err := cat.Get(name)
		if errors.Is(err, resources.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		s.exists, s.removing = true, r.Removing
		s.own = map[string]string{}
		for k, v := range r.Inputs {
			s.own[k] = schema.Format(v)
		}
		ins, err := cat.Incoming(name)
		for _, c := range ins {
			s.incoming = append(s.incoming, c.Emitter)
		}
		if err != nil {
			return err
		}
		s.receivers, err = cat.Receivers(name)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestDiscard(t *testing.T) {
	t.Run("create deletes the resource, its connections and rules", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "n1", "node", "", "ip=10.0.0.1"); err != nil {
				return err
			}
			if err := create(cat, st, "ks", "keystone", "", "dir=/srv"); err != nil {
				return err
			}
			return commit(st, "n1.run", "ks.run")
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "db", "mariadb", "", "dir=/srv root_password=pw port=3307"); err != nil {
				return err
			}
			if err := connect(cat, st, "n1", "db", ""); err != nil {
				return err
			}
			if err := connect(cat, st, "db", "ks", "port->db_port"); err != nil {
				return err
			}
			return addRules(cat.Tx(), cat, "after n1.run db.run", "on db.run changed ks.restart", "after n1.run ks.run")
		})
		if diff := cmp.Diff([]string{"db.run", "ks.update"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log (-want +got):\n%s", diff)
		}
		var got []*staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			var err error
			got, err = st.Discard("db.run")
			return err
		})
		if diff := cmp.Diff([]string{"db.run"}, keysOf(got)); diff != "" {
			t.Errorf("Discard returned (-want +got):\n%s", diff)
		}
		if s := stateOf(t, db, "db"); s.exists {
			t.Errorf("db still exists after discarding its create")
		}
		if s := stateOf(t, db, "n1"); len(s.receivers) != 0 {
			t.Errorf("n1 still connected to %v", s.receivers)
		}
		if s := stateOf(t, db, "ks"); len(s.incoming) != 0 {
			t.Errorf("ks still connected from %v", s.incoming)
		}
		if diff := cmp.Diff([]string{"after n1.run ks.run"}, ruleTexts(t, db)); diff != "" {
			t.Errorf("rules (-want +got):\n%s", diff)
		}
		// ks follows its own db_port again, which is what it committed.
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log = %v, want empty", got)
		}
	})

	t.Run("update restores values and connections", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			for _, n := range []string{"n1", "n2"} {
				if err := create(cat, st, n, "node", "", "ip=10.0.0."+n[1:]); err != nil {
					return err
				}
			}
			if err := create(cat, st, "db", "mariadb", "", "dir=/srv root_password=pw"); err != nil {
				return err
			}
			if err := connect(cat, st, "n1", "db", "ip->ip"); err != nil {
				return err
			}
			return commit(st, "n1.run", "n2.run", "db.run")
		})
		before := stateOf(t, db, "db")
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := update(cat, st, "db", "port=3307 root_password=other"); err != nil {
				return err
			}
			if _, err := cat.Disconnect("n1", "db"); err != nil {
				return err
			}
			if _, err := st.Touch("disconnect n1", "db"); err != nil {
				return err
			}
			return connect(cat, st, "n2", "db", "location->location")
		})
		if diff := cmp.Diff([]string{"db.update"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log (-want +got):\n%s", diff)
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("db.update")
			return err
		})
		if diff := cmp.Diff(before, stateOf(t, db, "db"), cmp.AllowUnexported(state{})); diff != "" {
			t.Errorf("db after discard (-want +got):\n%s", diff)
		}
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log = %v, want empty", got)
		}
	})

	t.Run("remove keeps the resource", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "a", "noop", "", "value=1"); err != nil {
				return err
			}
			return commit(st, "a.run")
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "a", "value=2") })
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Remove("a")
			return err
		})
		if diff := cmp.Diff([]string{"a.remove"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log (-want +got):\n%s", diff)
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("a.remove")
			return err
		})
		s := stateOf(t, db, "a")
		if !s.exists || s.removing || s.own["value"] != "2" {
			t.Errorf("a after discarding its removal: %+v, want it kept, not removing, value 2", s)
		}
		// The update staged before the removal is still to be done.
		if diff := cmp.Diff([]string{"a.update"}, logKeys(t, db)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})

	t.Run("custom action just drops the entry", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "a", "noop", "", "value=1"); err != nil {
				return err
			}
			if _, err := st.StageAction("a", "restart"); err != nil {
				return err
			}
			return update(cat, st, "a", "value=2")
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("a.restart")
			return err
		})
		s := stateOf(t, db, "a")
		if !s.exists || s.own["value"] != "2" {
			t.Errorf("a after discarding restart: %+v, want it unchanged", s)
		}
		if diff := cmp.Diff([]string{"a.run"}, logKeys(t, db)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})

	t.Run("affected child stays while its cause is staged", func(t *testing.T) {
		db := chain(t, "content")
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "t1", "content=bye") })
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("t2.update")
			return err
		})
		// t2 follows t1; only discarding t1's change can undo t2's.
		e := entry(t, db, "t2.update")
		if len(e.Tags) != 0 || !cmp.Equal(e.AffectedBy, []string{"t1"}) {
			t.Errorf("t2.update tags %v, affected_by %v; want it still an affected child of t1", e.Tags, e.AffectedBy)
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("t1.update")
			return err
		})
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log = %v, want empty", got)
		}
	})

	t.Run("update staged by hand before the first run", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "a", "noop", "", ""); err != nil {
				return err
			}
			_, err := st.StageAction("a", staging.ActionUpdate)
			return err
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("a.update")
			return err
		})
		if !stateOf(t, db, "a").exists {
			t.Errorf("discarding a.update deleted a")
		}
		if diff := cmp.Diff([]string{"a.run"}, logKeys(t, db)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})

	t.Run("unknown key", func(t *testing.T) {
		db := openStore(t)
		err := try(db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("nope.run")
			return err
		})
		if !errors.Is(err, staging.ErrNoEntry) || !strings.Contains(err.Error(), "nope.run") {
			t.Errorf("Discard(nope.run) = %v, want ErrNoEntry naming the key", err)
		}
	})

	t.Run("all", func(t *testing.T) {
		db := chain(t, "content")
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := update(cat, st, "t1", "content=bye"); err != nil {
				return err
			}
			if err := update(cat, st, "t3", "mode=0644"); err != nil {
				return err
			}
			if _, err := st.StageAction("t2", "update"); err != nil {
				return err
			}
			if err := create(cat, st, "t4", "file", "", "dir=/srv path=t4"); err != nil {
				return err
			}
			if err := connect(cat, st, "t3", "t4", "content->content"); err != nil {
				return err
			}
			if _, err := st.Remove("t2"); err != nil {
				return err
			}
			return update(cat, st, "t1", "content=again")
		})
		if len(logKeys(t, db)) < 4 {
			t.Fatalf("log = %v, want several entries", logKeys(t, db))
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.DiscardAll()
			return err
		})
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log after DiscardAll = %v, want empty", got)
		}
		if stateOf(t, db, "t4").exists {
			t.Errorf("t4 exists after discarding its create")
		}
		for _, n := range []string{"t1", "t2", "t3"} {
			s := stateOf(t, db, n)
			if !s.exists || s.removing || s.own["content"] != "hello" {
				t.Errorf("%s after DiscardAll: %+v, want it as committed", n, s)
			}
		}
	})
}

func TestRemove(t *testing.T) {
	t.Run("never committed is deleted at once", func(t *testing.T) {
		db := openStore(t)
		var e *staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "a", "noop", "", ""); err != nil {
				return err
			}
			if _, err := st.StageAction("a", "restart"); err != nil {
				return err
			}
			var err error
			e, err = st.Remove("a")
			return err
		})
		if e != nil {
			t.Errorf("Remove returned %+v, want nil (nothing to undo anywhere)", e)
		}
		if stateOf(t, db, "a").exists {
			t.Errorf("a still exists")
		}
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log = %v, want empty", got)
		}
	})

	t.Run("committed is marked, then deleted on commit", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "n1", "node", "", "ip=10.0.0.1"); err != nil {
				return err
			}
			if err := create(cat, st, "db", "mariadb", "env=1", "dir=/srv root_password=pw"); err != nil {
				return err
			}
			if err := create(cat, st, "ks", "keystone", "", "dir=/srv"); err != nil {
				return err
			}
			if err := connect(cat, st, "n1", "db", ""); err != nil {
				return err
			}
			if err := connect(cat, st, "db", "ks", "port->db_port"); err != nil {
				return err
			}
			if err := addRules(cat.Tx(), cat, "after n1.run db.run", "on db.run changed ks.restart", "after n1.run ks.run"); err != nil {
				return err
			}
			return commit(st, "n1.run", "db.run", "ks.run")
		})
		var e *staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := update(cat, st, "db", "port=3307"); err != nil {
				return err
			}
			var err error
			e, err = st.Remove("db")
			return err
		})
		// The update and its child are superseded by the removal: the child
		// still follows db until db is gone.
		if e == nil || e.Key != "db.remove" || e.Tags["env"] != "1" {
			t.Fatalf("Remove returned %+v, want db.remove with db's tags", e)
		}
		if s := stateOf(t, db, "db"); !s.exists || !s.removing {
			t.Errorf("db = %+v, want it kept and marked removing", s)
		}
		want := []string{"- dir=/srv", "- ip=10.0.0.1", "- location=n1", "- port=3306", "- root_password=pw (sensitive)"}
		if diff := cmp.Diff(want, lines(entry(t, db, "db.remove").Diff)); diff != "" {
			t.Errorf("db.remove diff (-want +got):\n%s", diff)
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return commit(st, "db.remove") })
		s := stateOf(t, db, "db")
		if s.exists || s.committed {
			t.Errorf("db after committing its removal: %+v, want it and its committed state gone", s)
		}
		if s := stateOf(t, db, "n1"); len(s.receivers) != 0 {
			t.Errorf("n1 still connected to %v", s.receivers)
		}
		if diff := cmp.Diff([]string{"after n1.run ks.run"}, ruleTexts(t, db)); diff != "" {
			t.Errorf("rules (-want +got):\n%s", diff)
		}
		// ks committed db_port 3306 through its connection from db. db's
		// update to 3307 reached ks, but without db ks has its own 3306
		// again: only the lost connection is left to apply.
		if diff := cmp.Diff([]string{"ks.update"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log after the removal (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"- conn db.port -> db_port"}, lines(entry(t, db, "ks.update").Diff)); diff != "" {
			t.Errorf("ks.update diff (-want +got):\n%s", diff)
		}
	})

	t.Run("receivers are restaged when their emitter is deleted", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "n1", "node", "", "ip=10.0.0.1"); err != nil {
				return err
			}
			if err := create(cat, st, "db", "mariadb", "", "dir=/srv root_password=pw"); err != nil {
				return err
			}
			if err := connect(cat, st, "n1", "db", "ip->ip"); err != nil {
				return err
			}
			return commit(st, "n1.run", "db.run")
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if _, err := st.Remove("n1"); err != nil {
				return err
			}
			return commit(st, "n1.remove")
		})
		// db ran with n1's ip; without n1 it gets its own ip back, which
		// must be applied: nothing is forgotten.
		if diff := cmp.Diff([]string{"db.update"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log (-want +got):\n%s", diff)
		}
		want := []string{"~ ip=10.0.0.1>>127.0.0.1", "- conn n1.ip -> ip"}
		if diff := cmp.Diff(want, lines(entry(t, db, "db.update").Diff)); diff != "" {
			t.Errorf("db.update diff (-want +got):\n%s", diff)
		}
	})
}

func TestHistoryAndRevert(t *testing.T) {
	db := openStore(t)
	// uid 1: db.run, 2: db.update (port 3307), 3: db.restart
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if err := create(cat, st, "db", "mariadb", "env=1", "dir=/srv root_password=pw"); err != nil {
			return err
		}
		return commit(st, "db.run")
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if err := update(cat, st, "db", "port=3307"); err != nil {
			return err
		}
		return commit(st, "db.update")
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := st.StageAction("db", "restart"); err != nil {
			return err
		}
		return commit(st, "db.restart")
	})

	var hs []*staging.HistoryEntry
	if err := db.View(func(tx *store.Tx) error {
		var err error
		hs, err = staging.History(tx, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	type row struct{ UID, Key, Plan, Task string }
	var got []row
	for _, h := range hs {
		got = append(got, row{h.UID, h.Key, h.Plan, h.Task})
	}
	wantRows := []row{{"3", "db.restart", "plan-1", "x.run#0"}, {"2", "db.update", "plan-1", "x.run#0"}, {"1", "db.run", "plan-1", "x.run#0"}}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Fatalf("history, newest first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"~ port=3306>>3307"}, lines(hs[1].Diff)); diff != "" {
		t.Errorf("history 2 diff (-want +got):\n%s", diff)
	}
	if !hs[0].CommittedAt.Equal(now()) {
		t.Errorf("committed_at = %v, want %v", hs[0].CommittedAt, now())
	}
	for n, want := range map[int][]string{1: {"3"}, 2: {"3", "2"}, 5: {"3", "2", "1"}} {
		if err := db.View(func(tx *store.Tx) error {
			last, err := staging.History(tx, n)
			var uids []string
			for _, h := range last {
				uids = append(uids, h.UID)
			}
			if !cmp.Equal(uids, want) {
				t.Errorf("History(%d) = %v, want uids %v", n, uids, want)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("custom action is not revertible", func(t *testing.T) {
		err := try(db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Revert("3")
			return err
		})
		if !errors.Is(err, staging.ErrNotRevertible) {
			t.Fatalf("Revert(3) = %v, want ErrNotRevertible", err)
		}
		for _, want := range []string{"db.restart", "custom action", "inverse", "solar ch stage -a"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not explain why (missing %q)", err, want)
			}
		}
	})

	t.Run("unknown uid", func(t *testing.T) {
		err := try(db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Revert("42")
			return err
		})
		if !errors.Is(err, staging.ErrNoHistory) {
			t.Errorf("Revert(42) = %v, want ErrNoHistory", err)
		}
	})

	t.Run("update restores the old values", func(t *testing.T) {
		var ents []*staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			var err error
			ents, err = st.Revert("2")
			return err
		})
		if diff := cmp.Diff([]string{"db.update"}, keysOf(ents)); diff != "" {
			t.Fatalf("Revert returned (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"~ port=3307>>3306"}, lines(entry(t, db, "db.update").Diff)); diff != "" {
			t.Errorf("db.update diff (-want +got):\n%s", diff)
		}
		if s := stateOf(t, db, "db"); s.own["port"] != "3306" {
			t.Errorf("db port = %s, want 3306", s.own["port"])
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return commit(st, "db.update") })
	})

	t.Run("create stages a remove", func(t *testing.T) {
		var ents []*staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			var err error
			ents, err = st.Revert("1")
			return err
		})
		if diff := cmp.Diff([]string{"db.remove"}, keysOf(ents)); diff != "" {
			t.Fatalf("Revert returned (-want +got):\n%s", diff)
		}
		if s := stateOf(t, db, "db"); !s.removing {
			t.Errorf("db not marked removing")
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return commit(st, "db.remove") })
		if stateOf(t, db, "db").exists {
			t.Fatalf("db exists after its removal was committed")
		}
	})

	t.Run("remove recreates the resource", func(t *testing.T) {
		var uid string
		if err := db.View(func(tx *store.Tx) error {
			hs, err := staging.History(tx, 1)
			if err == nil {
				uid = hs[0].UID
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var ents []*staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			var err error
			ents, err = st.Revert(uid)
			return err
		})
		if diff := cmp.Diff([]string{"db.run"}, keysOf(ents)); diff != "" {
			t.Fatalf("Revert returned (-want +got):\n%s", diff)
		}
		s := stateOf(t, db, "db")
		if !s.exists || s.removing || s.own["port"] != "3306" || s.own["root_password"] != "pw" {
			t.Errorf("db after revert: %+v, want it back as it was", s)
		}
		e := entry(t, db, "db.run")
		want := []string{"+ dir=/srv", "+ ip=127.0.0.1", "+ port=3306", "+ root_password=pw (sensitive)", "+ location="}
		if diff := cmp.Diff(want, lines(e.Diff)); diff != "" {
			t.Errorf("db.run diff (-want +got):\n%s", diff)
		}
		if e.Tags["env"] != "1" {
			t.Errorf("db.run tags = %v, want db's tags back", e.Tags)
		}
	})
}

func TestRevertRemoveRestoresConnectionsAndRules(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if err := create(cat, st, "n1", "node", "", "ip=10.0.0.1"); err != nil {
			return err
		}
		if err := create(cat, st, "db", "mariadb", "", "dir=/srv root_password=pw port=3307"); err != nil {
			return err
		}
		if err := create(cat, st, "ks", "keystone", "", "dir=/srv"); err != nil {
			return err
		}
		if err := connect(cat, st, "n1", "db", ""); err != nil {
			return err
		}
		if err := connect(cat, st, "db", "ks", "port->db_port"); err != nil {
			return err
		}
		if err := addRules(cat.Tx(), cat, "after n1.run db.run", "on db.run changed ks.restart"); err != nil {
			return err
		}
		return commit(st, "n1.run", "db.run", "ks.run")
	})
	var uid string
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := st.Remove("db"); err != nil {
			return err
		}
		h, err := st.Commit("db.remove", "plan-1", "db.remove#0", nil)
		if h != nil {
			uid = h.UID
		}
		return err
	})
	// ks lost its db_port (3307): it must apply its own (3306).
	if diff := cmp.Diff([]string{"ks.update"}, logKeys(t, db)); diff != "" {
		t.Fatalf("log after committing the removal (-want +got):\n%s", diff)
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.Revert(uid)
		return err
	})
	if got := stateOf(t, db, "db"); !cmp.Equal(got.incoming, []string{"n1"}) || !cmp.Equal(got.receivers, []string{"ks"}) {
		t.Errorf("db connections after revert: from %v to %v, want from [n1] to [ks]", got.incoming, got.receivers)
	}
	if diff := cmp.Diff([]string{"after n1.run db.run", "on db.run changed ks.restart"}, ruleTexts(t, db)); diff != "" {
		t.Errorf("rules after revert (-want +got):\n%s", diff)
	}
	// ks follows db again, as committed: its update is no longer needed.
	if diff := cmp.Diff([]string{"db.run"}, logKeys(t, db)); diff != "" {
		t.Errorf("log after revert (-want +got):\n%s", diff)
	}
}

func TestCommitWhenResourceChangedSincePlan(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		return create(cat, st, "db", "mariadb", "env=1", "dir=/srv root_password=pw")
	})
	// The plan was made now: the task runs with these inputs.
	var ran map[string]any
	if err := db.View(func(tx *store.Tx) error {
		eff, err := resources.NewCatalog(tx).Effective("db")
		ran = maps.Clone(eff)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// While it runs, the operator changes the port.
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "db", "port=3307") })
	var h *staging.HistoryEntry
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		var err error
		h, err = st.Commit("db.run", "plan-1", "db.run#0", ran)
		return err
	})
	if h.Key != "db.run" || h.Task != "db.run#0" {
		t.Errorf("history = %+v, want db.run from task db.run#0", h)
	}
	// History tells what ran, not what is staged now.
	if got := lines(h.Diff); !cmp.Equal(got[2], "+ port=3306") {
		t.Errorf("history diff = %v, want port 3306 added (what ran)", got)
	}
	if diff := cmp.Diff([]string{"db.update"}, logKeys(t, db)); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	e := entry(t, db, "db.update")
	if diff := cmp.Diff([]string{"~ port=3306>>3307"}, lines(e.Diff)); diff != "" {
		t.Errorf("db.update diff (-want +got):\n%s", diff)
	}
	if e.Tags["env"] != "1" {
		t.Errorf("db.update tags = %v, want db's", e.Tags)
	}
	// Discarding the remaining change goes back to what ran.
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.Discard("db.update")
		return err
	})
	if s := stateOf(t, db, "db"); s.own["port"] != "3306" {
		t.Errorf("db port after discard = %s, want 3306 (what ran)", s.own["port"])
	}
	if got := logKeys(t, db); len(got) != 0 {
		t.Errorf("log = %v, want empty", got)
	}
}

func TestCommitKeepsAffectedChildAChild(t *testing.T) {
	db := chain(t, "content")
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "t1", "content=bye") })
	var ran map[string]any
	if err := db.View(func(tx *store.Tx) error {
		eff, err := resources.NewCatalog(tx).Effective("t2")
		ran = maps.Clone(eff)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// t1 changes again while t2.update runs with "bye".
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "t1", "content=again") })
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.Commit("t2.update", "plan-1", "t2.update#0", ran)
		return err
	})
	e := entry(t, db, "t2.update")
	if diff := cmp.Diff([]string{"~ content=bye>>again (sensitive)"}, lines(e.Diff)); diff != "" {
		t.Errorf("t2.update diff (-want +got):\n%s", diff)
	}
	if len(e.Tags) != 0 || !cmp.Equal(e.AffectedBy, []string{"t1"}) {
		t.Errorf("t2.update tags %v, affected_by %v; want it still an affected child of t1", e.Tags, e.AffectedBy)
	}
}

func TestHistoryOfEmptyStore(t *testing.T) {
	db := openStore(t)
	for _, n := range []int{0, 3} {
		if err := db.View(func(tx *store.Tx) error {
			hs, err := staging.History(tx, n)
			if hs == nil || len(hs) != 0 {
				t.Errorf("History(%d) = %#v, want an empty list", n, hs)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCommitUnknownKey(t *testing.T) {
	db := openStore(t)
	err := try(db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.Commit("nope.run", "plan-1", "nope.run#0", nil)
		return err
	})
	if !errors.Is(err, staging.ErrNoEntry) {
		t.Errorf("Commit(nope.run) = %v, want ErrNoEntry", err)
	}
}

func TestStageRefresh(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if err := create(cat, st, "ks", "keystone", "env=1", "dir=/srv"); err != nil {
			return err
		}
		if err := create(cat, st, "db", "mariadb", "", "dir=/srv root_password=pw"); err != nil {
			return err
		}
		return commit(st, "ks.run", "db.run")
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := st.StageRefresh("ks", "update", "refresh: db.run#0 changed"); err != nil {
			return err
		}
		if err := update(cat, st, "db", "port=3307"); err != nil {
			return err
		}
		_, err := st.StageRefresh("db", "update", "refresh: x.run#0 changed")
		return err
	})
	e := entry(t, db, "ks.update")
	if e.Cause != "refresh: db.run#0 changed" || e.Tags["env"] != "1" || len(e.Diff) != 0 {
		t.Errorf("ks.update = %+v, want the refresh with ks's tags and no diff", e)
	}
	// db.update was staged for its change: the refresh does not replace it.
	if e := entry(t, db, "db.update"); e.Cause != "update" {
		t.Errorf("db.update cause = %q, want update", e.Cause)
	}
	// A change and its undoing leave both refreshes staged: nothing is
	// forgotten.
	for _, args := range []string{"port=5001", "port=5000"} {
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "ks", args) })
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "db", "port=3306") })
	if diff := cmp.Diff([]string{"ks.update", "db.update"}, logKeys(t, db)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return commit(st, "ks.update", "db.update") })
	if got := logKeys(t, db); len(got) != 0 {
		t.Errorf("log after the refreshes ran = %v, want empty", got)
	}
}

// TestCommittedSnapshotKeepsEmittersAndMappings checks that a committed
// snapshot stores of each connection only its emitter and mappings (the
// receiver, order and rules belong to the live connection), and that
// discarding a disconnect still puts the connection back from it.
func TestCommittedSnapshotKeepsEmittersAndMappings(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		for _, n := range []string{"a", "b"} {
			if err := create(cat, st, n, "noop", "", "value="+n); err != nil {
				return err
			}
		}
		if err := connect(cat, st, "a", "b", "value->value"); err != nil {
			return err
		}
		if err := cat.AddConnectionRules("a", "b", []string{"after a.run b.run"}); err != nil {
			return err
		}
		return commit(st, "a.run", "b.run")
	})
	var rec map[string]any
	if err := db.View(func(tx *store.Tx) error {
		raw, err := tx.Get(store.Committed, "b")
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &rec)
	}); err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"emitter": "a", "mappings": []any{map[string]any{"from": "value", "to": "value"}}}}
	if diff := cmp.Diff(want, rec["connections"]); diff != "" {
		t.Errorf("committed connections of b (-want +got):\n%s", diff)
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := cat.Disconnect("a", "b"); err != nil {
			return err
		}
		if _, err := st.Touch("disconnect a", "b"); err != nil {
			return err
		}
		_, err := st.Discard("b.update")
		return err
	})
	if s := stateOf(t, db, "b"); !slices.Equal(s.incoming, []string{"a"}) {
		t.Errorf("b's incoming after discarding the disconnect = %v, want [a]", s.incoming)
	}
	if got := logKeys(t, db); len(got) != 0 {
		t.Errorf("log = %v, want empty", got)
	}
}
