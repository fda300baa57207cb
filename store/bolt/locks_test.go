package bolt

import (
	"path/filepath"
	"testing"

	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/kv/kvtest"
)

func TestLocksConformance(t *testing.T) {
	kvtest.RunLocks(t, kvtest.LocksFactory{
		New: func(t *testing.T) func() (kv.Locks, error) {
			p := filepath.Join(t.TempDir(), "solar.db")
			return func() (kv.Locks, error) { return OpenLocks(p), nil }
		},
	})
}

// Within a run, tasks whose resources share a byte of the lock file keep
// it until the last of them lets go; the first to finish must not unlock
// the other's resource for other runs.
func TestLocksSharedOffsetHeldUntilLastHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "solar.db")
	a, b := OpenLocks(path), OpenLocks(path)
	defer a.Close()
	defer b.Close()
	first, ok, err := a.TryLock("keystone")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The same resource stands for any name with the same offset.
	second, ok, err := a.TryLock("keystone")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	_ = first()
	_ = first() // a second unlock does nothing
	if _, ok, err := b.TryLock("keystone"); ok || err != nil {
		t.Fatalf("the lock went with the first holder while the second still held it: %v %v", ok, err)
	}
	_ = second()
	if _, ok, err := b.TryLock("keystone"); !ok || err != nil {
		t.Fatalf("the lock stayed after the last holder let go: %v %v", ok, err)
	}
}

// The lock file is made on first use, where it always was: a run of noop
// tasks never makes it.
func TestLocksFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "solar.db")
	l := OpenLocks(path)
	defer l.Close()
	if m, _ := filepath.Glob(path + ".locks"); len(m) != 0 {
		t.Fatalf("%s made before the first lock", m)
	}
	if _, _, err := l.TryClaim("plan"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.TrySlot("node/a", 1); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(path + ".locks/*"); len(m) != 0 {
		t.Fatalf("%s made by a claim or a slot", m)
	}
	if _, _, err := l.TryLock("keystone"); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(path + ".locks/*"); len(m) != 1 || m[0] != filepath.Join(path+".locks", LockFileName) {
		t.Fatalf("lock files %v, want only %s", m, LockFileName)
	}
}
