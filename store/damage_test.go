package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// filled returns the path of a closed store holding enough data to span
// many pages.
func filled(t *testing.T) string {
	t.Helper()
	p := closedStore(t)
	db := mustOpen(t, p)
	if err := db.Update(func(tx *Tx) error {
		for i := range 2000 {
			if err := tx.Put(Resources, fmt.Sprintf("r%05d", i), []byte(strings.Repeat("x", 200))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll opens the store and reads every key, as report or list would.
func readAll(p string) error {
	db, err := Open(p, Options{LockWait: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *Tx) error {
		return tx.ForEach(Resources, "", func(string, []byte) error { return nil })
	})
}

func wantDamaged(t *testing.T, err error, p string) {
	t.Helper()
	var de *DamagedError
	if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
		t.Fatalf("err = %v, want a DamagedError", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "store "+p+" is damaged: ") || !strings.HasSuffix(msg, "; restore it from a copy") || strings.Contains(msg, "\n") {
		t.Fatalf("message %q: want one line naming %s", msg, p)
	}
}

func TestTruncatedStoreIsDamagedNotSIGBUS(t *testing.T) {
	p := filled(t)
	if err := os.Truncate(p, 8192); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, readAll(p), p)
}

func TestOverwrittenPageIsDamagedNotPanic(t *testing.T) {
	p := filled(t)
	// Overwrite every data page after the two meta pages with garbage:
	// bbolt then finds branch and leaf pages of impossible types.
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2 * 4096; i < len(raw); i++ {
		raw[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, readAll(p), p)
}

func TestNotAStoreIsDamaged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	if err := os.WriteFile(p, []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, readAll(p), p)
}

func TestDamagedRecordIsNamedWithTheStore(t *testing.T) {
	db, p := open(t)
	err := db.View(func(tx *Tx) error { return Damagedf("plan record %s has no graph", "x") })
	wantDamaged(t, err, p)
	if !strings.Contains(err.Error(), "plan record x has no graph") {
		t.Fatalf("err = %v, want the record named", err)
	}
}

func TestPanicOfSolarItselfIsNotDamage(t *testing.T) {
	db, _ := open(t)
	defer func() {
		if v := recover(); v == nil {
			t.Fatal("a bug in a transaction's function must not be reported as damage")
		}
	}()
	_ = db.View(func(tx *Tx) error {
		panic("a bug of the caller, not the file")
	})
}

func TestDeadWaiterLeavesNoWaitingSignal(t *testing.T) {
	// The child: a waiter that is killed while it waits (it leaves its
	// marker file, and nothing else).
	if os.Getenv("SOLAR_STORE_WAITER") != "" {
		_, _ = Open(os.Getenv("SOLAR_STORE_WAITER"), Options{LockWait: time.Minute})
		return
	}
	db, p := open(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeadWaiterLeavesNoWaitingSignal$")
	cmd.Env = append(os.Environ(), "SOLAR_STORE_WAITER="+p)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !db.Waiting() {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the waiting process never showed as waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if _, err := os.Stat(p + ".waiting"); err != nil {
		t.Fatalf("marker file: %v (the test expects the killed waiter to leave it)", err)
	}
	if db.Waiting() {
		t.Fatal("a killed waiter still counts as waiting")
	}
}

func TestReadOnlyOpensShareTheLock(t *testing.T) {
	p := closedStore(t)
	r1, err := Open(p, Options{ReadOnly: true, LockWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := Open(p, Options{ReadOnly: true, LockWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("a second reader waited for the first: %v", err)
	}
	defer r2.Close()
	if err := r2.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("update on a read-only store: %v", err)
	}
	if _, err := Open(p, Options{LockWait: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a writer beside readers: %v, want ErrLocked", err)
	}
}

func TestReadOnlyOpenOfMissingFileCreatesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "typo.db")
	if _, err := Open(p, Options{ReadOnly: true}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("err = %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("a read-only open created the file")
	}
}

func TestReadOnlyOpenOnReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes through file modes")
	}
	p := closedStore(t)
	if err := os.Chmod(p, 0o400); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// closedStore returns the path of a new store, closed, not checked at
// cleanup (tests damage it).
func closedStore(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "solar.db")
	db, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	return p
}

func TestOpenTightensAnOpenMode(t *testing.T) {
	db, p := open(t)
	db.Close()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	*db = *mustOpen(t, p)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v after open, want 0600", st.Mode().Perm())
	}
}
