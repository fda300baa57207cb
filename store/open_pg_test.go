package store_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store"
)

// TestOpenURL: a postgres:// location opens the PostgreSQL backend, shown
// without its password; a path still opens a bbolt file.
func TestOpenURL(t *testing.T) {
	u := pgtest.Shared(t) + "&password=s3cret"
	db, err := store.Open(u, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Kind() != "postgresql" || strings.Contains(db.Location(), "s3cret") || !strings.Contains(db.Location(), "password=xxxxx") {
		t.Errorf("kind %q location %q", db.Kind(), db.Location())
	}
	if err := db.Update(func(tx *store.Tx) error { return tx.Put(store.Resources, "r", []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *store.Tx) error {
		if held, known := tx.ClaimHeld("x"); !known || held {
			t.Errorf("ClaimHeld of a free claim = %v, known %v", held, known)
		}
		v, err := tx.Get(store.Resources, "r")
		if string(v) != "x" {
			t.Errorf("Get = %q %v", v, err)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	locks, err := store.OpenLocks(u, store.LockOptions{})
	if err != nil || locks == nil {
		t.Fatalf("OpenLocks of a URL: %v %v", locks, err)
	}
	defer locks.Close()
	unlock, ok, err := locks.TryClaim("x")
	if err != nil || !ok {
		t.Fatalf("TryClaim: %v %v", ok, err)
	}
	defer unlock()
	_ = db.View(func(tx *store.Tx) error {
		if held, _ := tx.ClaimHeld("x"); !held {
			t.Error("ClaimHeld does not see the claim of OpenLocks")
		}
		return nil
	})

	ro, err := store.Open(strings.Replace(u, "&password", "&schema=nothing_here&password", 1), store.Options{ReadOnly: true})
	if !errors.Is(err, store.ErrNoStore) || ro != nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("read-only open of an empty schema: %v", err)
	}

	f, err := store.Open(filepath.Join(t.TempDir(), "solar.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Kind() != "bbolt" {
		t.Errorf("a path opened %q", f.Kind())
	}
}
