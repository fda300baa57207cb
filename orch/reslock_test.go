package orch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Two runs of one store are two open file descriptions of the lock file:
// a resource locked by one is refused to the other until it lets go, and
// other resources are not held up.
func TestResourceLocksExcludeOtherRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "solar.db")
	a, b := &resourceLocks{storePath: path}, &resourceLocks{storePath: path}
	defer a.close()
	defer b.close()
	ctx := context.Background()
	gone, cancel := context.WithCancel(ctx)
	cancel() // b gives up at once rather than wait

	unlock, err := a.lock(ctx, "keystone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.lock(gone, "keystone", nil); err == nil {
		t.Fatal("another run took keystone's lock while it was held")
	}
	other, err := b.lock(gone, "haproxy", nil)
	if err != nil {
		t.Fatalf("another resource was held up: %v", err)
	}
	other()
	unlock()
	again, err := b.lock(gone, "keystone", nil)
	if err != nil {
		t.Fatalf("keystone's lock was not released: %v", err)
	}
	again()
}

// Within a run, tasks whose resources share a byte of the lock file keep
// it until the last of them lets go; the first to finish must not unlock
// the other's resource for other runs.
func TestResourceLocksSharedOffsetHeldUntilLastHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "solar.db")
	a, b := &resourceLocks{storePath: path}, &resourceLocks{storePath: path}
	defer a.close()
	defer b.close()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	first, err := a.lock(context.Background(), "keystone", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The same resource stands for any name with the same offset.
	second, err := a.lock(context.Background(), "keystone", nil)
	if err != nil {
		t.Fatal(err)
	}
	first()
	if _, err := b.lock(gone, "keystone", nil); err == nil {
		t.Fatal("the lock went with the first holder while the second still held it")
	}
	second()
	if _, err := b.lock(gone, "keystone", nil); err != nil {
		t.Fatalf("the lock stayed after the last holder let go: %v", err)
	}
}

// A run of shell tasks over many resources keeps one lock file, not one per
// resource (creating a file cost about half a millisecond per new resource).
func TestRunKeepsOneLockFile(t *testing.T) {
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		t.Fatal(err)
	}
	path, uid := benchStore(t, "independent", 20, dir, map[string]any{"dir": t.TempDir()})
	r := &Runner{Path: path, UID: uid, Concurrency: 4, PerNode: 1}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, st := range states {
		if st.Status != StatusSuccess {
			t.Fatalf("task %s ended %s: %s", id, st.Status, st.Err)
		}
	}
	ents, err := os.ReadDir(path + ".locks")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != lockFileName {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("lock dir holds %v, want only %s", names, lockFileName)
	}
}
