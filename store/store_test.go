package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/store/bolt"
)

// open returns a store in a temp dir, checked for consistency at cleanup.
func open(t *testing.T) (*DB, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sub", "solar.db")
	db, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Errorf("store inconsistent: %v", err)
		}
		db.Close()
	})
	return db, p
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	_, p := open(t)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestSecondOpenWaitsThenFailsWithErrLocked(t *testing.T) {
	_, p := open(t)
	start := time.Now()
	_, err := Open(p, Options{LockWait: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("gave up after %v, want a wait of about 200ms", waited)
	}
}

func TestSchemaVersionIsChecked(t *testing.T) {
	db, p := open(t)
	if err := db.Backend().(*bolt.Store).SetSchemaVersion("99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(p, Options{}); !errors.Is(err, ErrSchema) {
		t.Fatalf("err = %v, want ErrSchema", err)
	}
	// Reopen with the right version so cleanup's Check works.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	*db = *fresh
}

func TestReadOnlyOpenLeavesFileUnchanged(t *testing.T) {
	db, p := open(t)
	if err := db.Update(func(tx *Tx) error { return tx.Put(Resources, "a", []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(p)
	db2, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db2.View(func(tx *Tx) error { _, err := tx.Get(Resources, "a"); return err }); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("boom")
	if err := db2.Update(func(tx *Tx) error {
		if err := tx.Put(Resources, "b", []byte("2")); err != nil {
			return err
		}
		return failed
	}); !errors.Is(err, failed) {
		t.Fatalf("err = %v", err)
	}
	db2.Close()
	after, _ := os.ReadFile(p)
	if string(before) != string(after) {
		t.Fatal("a read and a rolled-back update changed the file")
	}
	*db = *mustOpen(t, p)
}

func mustOpen(t *testing.T, p string) *DB {
	db, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestBucketOperations(t *testing.T) {
	db, _ := open(t)
	err := db.Update(func(tx *Tx) error {
		for _, k := range []string{"a/1", "a/2", "a/3", "b/1", "ab"} {
			if err := tx.Put(Plans, k, []byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *Tx) error {
		var got []string
		if err := tx.ForEach(Plans, "a/", func(k string, _ []byte) error {
			got = append(got, k)
			return nil
		}); err != nil {
			return err
		}
		if len(got) != 3 || got[0] != "a/1" || got[2] != "a/3" {
			t.Errorf("ForEach a/ = %v", got)
		}
		k, v, err := tx.Last(Plans, "a/")
		if err != nil || k != "a/3" || string(v) != "a/3" {
			t.Errorf("Last a/ = %q %q %v", k, v, err)
		}
		if k, _, err := tx.Last(Plans, "b/"); err != nil || k != "b/1" {
			t.Errorf("Last b/ = %q %v", k, err)
		}
		if _, _, err := tx.Last(Plans, "c/"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Last c/ err = %v", err)
		}
		if _, err := tx.Get(Plans, "zz"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get missing err = %v", err)
		}
		if err := tx.Put(Plans, "x", nil); !errors.Is(err, ErrReadOnly) {
			t.Errorf("Put in View err = %v", err)
		}
		n := 0
		_ = tx.ForEach(Plans, "", func(string, []byte) error {
			n++
			if n == 2 {
				return ErrStop
			}
			return nil
		})
		if n != 2 {
			t.Errorf("ErrStop did not stop: %d", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.DeletePrefix(Plans, "a/") }); err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *Tx) error {
		if tx.Has(Plans, "a/1") || !tx.Has(Plans, "ab") {
			t.Error("DeletePrefix removed the wrong keys")
		}
		return nil
	})
}

func TestSeqKeySortsNumerically(t *testing.T) {
	if !(SeqKey(9) < SeqKey(10) && SeqKey(255) < SeqKey(256) && SeqKey(1<<40) > SeqKey(1<<39)) {
		t.Fatal("SeqKey does not sort numerically")
	}
	// Stored keys have this form: it must never change.
	for n, want := range map[uint64]string{0: "0000000000000000", 42: "000000000000002a", 1<<64 - 1: "ffffffffffffffff", 0x0123456789abcdef: "0123456789abcdef"} {
		if got := SeqKey(n); got != want {
			t.Errorf("SeqKey(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"/x/flag.db", map[string]string{"SOLAR_DB": "/x/env.db"}, "/x/flag.db"},
		{"", map[string]string{"SOLAR_DB": "/x/env.db", "XDG_STATE_HOME": "/state"}, "/x/env.db"},
		{"", map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, "/state/solar/solar.db"},
		{"", map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/solar/solar.db"},
	}
	for _, c := range cases {
		got, err := Path(c.flag, env(c.env))
		if err != nil || got != c.want {
			t.Errorf("Path(%q, %v) = %q, %v; want %q", c.flag, c.env, got, err, c.want)
		}
	}
}
