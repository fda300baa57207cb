package orch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/bolt"
)

// A run of shell tasks over many resources keeps one lock file, not one per
// resource (creating a file cost about half a millisecond per new resource).
func TestRunKeepsOneLockFile(t *testing.T) {
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		t.Fatal(err)
	}
	path, uid := benchStore(t, "independent", 20, dir, map[string]any{"dir": t.TempDir()})
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4, PerNode: 1}
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
	if len(ents) != 1 || ents[0].Name() != bolt.LockFileName {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("lock dir holds %v, want only %s", names, bolt.LockFileName)
	}
}
