package staging_test

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// secretChain stores db (mariadb, root_password=hunter2) -> ks.db_host ->
// gl.keystone_url, neither receiving input declared sensitive, committed.
func secretChain(t *testing.T) *store.DB {
	t.Helper()
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		for _, c := range [][3]string{{"db", "mariadb", "dir=/srv root_password=hunter2"}, {"ks", "keystone", "dir=/srv"}, {"gl", "glance", "dir=/srv"}} {
			if err := create(cat, st, c[0], c[1], "env=1", c[2]); err != nil {
				return err
			}
		}
		if err := connect(cat, st, "db", "ks", "root_password->db_host"); err != nil {
			return err
		}
		if err := connect(cat, st, "ks", "gl", "db_host->keystone_url"); err != nil {
			return err
		}
		return commit(st, "db.run", "ks.run", "gl.run")
	})
	return db
}

// historyLines returns the diff of the newest history entry for key.
func historyLines(t *testing.T, db *store.DB, key string) []string {
	t.Helper()
	var out []string
	if err := db.View(func(tx *store.Tx) error {
		hs, err := staging.History(tx, 0)
		for _, h := range hs {
			if h.Key == key {
				out = lines(h.Diff)
				break
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A value that comes from a sensitive input, through any number of
// connections, is masked in every diff staging records: the entries it
// stages, the children a change reaches, history, and an old value after
// the connection that brought it is gone.
func TestSensitivityFollowsTheValueIntoDiffs(t *testing.T) {
	t.Run("first run, two connections away", func(t *testing.T) {
		db := secretChain(t)
		want := map[string][]string{
			"ks.run": {"+ dir=/srv", "+ port=5000", "+ admin_port=35357", "+ db_host=hunter2 (sensitive)", "+ db_port=3306", "+ db_password= (sensitive)", "+ location=", "+ conn db.root_password -> db_host"},
			"gl.run": {"+ dir=/srv", "+ port=9292", "+ keystone_url=hunter2 (sensitive)", "+ db_host=127.0.0.1", "+ db_port=3306", "+ location=", "+ conn ks.db_host -> keystone_url"},
		}
		for key, w := range want {
			if diff := cmp.Diff(w, historyLines(t, db, key)); diff != "" {
				t.Errorf("history of %s (-want +got):\n%s", key, diff)
			}
		}
	})

	t.Run("affected children of a changed secret", func(t *testing.T) {
		db := secretChain(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			return update(cat, st, "db", "root_password=s3cret")
		})
		for key, w := range map[string]string{
			"db.update": "~ root_password=hunter2>>s3cret (sensitive)",
			"ks.update": "~ db_host=hunter2>>s3cret (sensitive)",
			"gl.update": "~ keystone_url=hunter2>>s3cret (sensitive)",
		} {
			if diff := cmp.Diff([]string{w}, lines(entry(t, db, key).Diff)); diff != "" {
				t.Errorf("%s diff (-want +got):\n%s", key, diff)
			}
		}
	})

	t.Run("old value after a disconnect", func(t *testing.T) {
		db := secretChain(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if _, err := cat.Disconnect("ks", "gl"); err != nil {
				return err
			}
			_, err := st.Touch("disconnect ks", "gl")
			return err
		})
		w := []string{"~ keystone_url=hunter2>>http://127.0.0.1:5000/v3 (sensitive)", "- conn ks.db_host -> keystone_url"}
		if diff := cmp.Diff(w, lines(entry(t, db, "gl.update").Diff)); diff != "" {
			t.Errorf("gl.update diff (-want +got):\n%s", diff)
		}
		// Removing it now: the committed value is still the secret.
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Remove("gl")
			return err
		})
		for _, l := range lines(entry(t, db, "gl.remove").Diff) {
			if l == "- keystone_url=hunter2" {
				t.Errorf("gl.remove diff shows the secret: %q", l)
			}
		}
	})

	t.Run("a connection gone while the action ran", func(t *testing.T) {
		db := secretChain(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			return update(cat, st, "db", "root_password=s3cret")
		})
		// The runner reads what ks.update runs with, and masks.
		var ran map[string]any
		var sens map[string]bool
		if err := db.View(func(tx *store.Tx) error {
			cat := resources.NewCatalog(tx)
			eff, err := cat.Effective("ks")
			if err != nil {
				return err
			}
			ran = maps.Clone(eff)
			s, err := cat.SensitiveInputs("ks")
			sens = maps.Clone(s)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// While it runs, the operator disconnects db.
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if _, err := cat.Disconnect("db", "ks"); err != nil {
				return err
			}
			_, err := st.Touch("disconnect db", "ks")
			return err
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.CommitRan("ks.update", "plan-2", "ks.update#0", ran, sens)
			return err
		})
		// History records the value that ran (the connection is the
		// current one), the committed state remembers it was masked.
		w := []string{"~ db_host=hunter2>>s3cret (sensitive)", "- conn db.root_password -> db_host"}
		if diff := cmp.Diff(w, historyLines(t, db, "ks.update")); diff != "" {
			t.Errorf("history of ks.update (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"~ db_host=s3cret>>127.0.0.1 (sensitive)"}, lines(entry(t, db, "ks.update").Diff)); diff != "" {
			t.Errorf("ks.update diff (-want +got):\n%s", diff)
		}
	})
}

// Discarding a change caused by the removal of a sensitive emitter keeps
// the committed value as the receiver's own, and keeps it masked, also
// downstream, until the operator writes it.
func TestDiscardKeepsSecretOfGoneEmitterMasked(t *testing.T) {
	db := secretChain(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := st.Remove("db"); err != nil {
			return err
		}
		return commit(st, "db.remove")
	})
	if diff := cmp.Diff([]string{"~ db_host=hunter2>>127.0.0.1 (sensitive)", "- conn db.root_password -> db_host"}, lines(entry(t, db, "ks.update").Diff)); diff != "" {
		t.Errorf("ks.update diff (-want +got):\n%s", diff)
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.Discard("ks.update", "gl.update")
		return err
	})
	if s := stateOf(t, db, "ks"); s.own["db_host"] != "hunter2" {
		t.Fatalf("ks.db_host after discard = %q, want the committed value kept as its own", s.own["db_host"])
	}
	sensOf := func(name string) map[string]bool {
		t.Helper()
		var out map[string]bool
		if err := db.View(func(tx *store.Tx) error {
			var err error
			out, err = resources.NewCatalog(tx).SensitiveInputs(name)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if !sensOf("ks")["db_host"] || !sensOf("gl")["keystone_url"] {
		t.Errorf("after discard, ks.db_host masked %v, gl.keystone_url masked %v; want both masked (the value is db's secret)",
			sensOf("ks")["db_host"], sensOf("gl")["keystone_url"])
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		return update(cat, st, "ks", "db_host=10.0.0.5")
	})
	if sensOf("ks")["db_host"] || sensOf("gl")["keystone_url"] {
		t.Errorf("after writing ks.db_host, it is still masked")
	}
	if diff := cmp.Diff([]string{"~ db_host=hunter2>>10.0.0.5 (sensitive)"}, lines(entry(t, db, "ks.update").Diff)); diff != "" {
		t.Errorf("ks.update diff (-want +got):\n%s", diff)
	}
}
