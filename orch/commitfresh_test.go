package orch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// The runner commits a task's staged entry with the resource as the store
// holds it then, not as it read it when the run started: a value another
// command changed while the task ran is staged afresh, not forgotten.
func TestRunnerRestagesChangeMadeWhileRunning(t *testing.T) {
	baseDir, work := t.TempDir(), t.TempDir()
	meta := "handler: shell\nactions:\n  run: actions/run.sh\ninputs:\n  dir: {schema: str!}\n  value: {schema: str, value: a}\n"
	// The script says it started, then waits for the test's go-ahead.
	script := "touch \"$SOLAR_INPUT_DIR/started\"\ni=0\nwhile [ ! -e \"$SOLAR_INPUT_DIR/go\" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done\n"
	if err := os.MkdirAll(filepath.Join(baseDir, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(baseDir, "meta.yaml"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(baseDir, "actions", "run.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := resources.LoadBase(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	path := testStorePath(t)
	var uid string
	update(t, path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		vals := resources.Values{Raw: map[string]any{"dir": work}}
		if _, err := cat.Create(resources.CreateSpec{Name: "app", Base: base, Values: vals}, false); err != nil {
			return err
		}
		if _, err := staging.New(cat, time.Now).Touch("create", "app"); err != nil {
			return err
		}
		res, err := Process(tx, nil, nil, false, time.Now(), "")
		if err != nil {
			return err
		}
		uid = res.Record.UID
		return nil
	})

	done := make(chan error, 1)
	go func() {
		r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 1, PerNode: 1}
		_, _, err := r.Run(context.Background(), nil)
		done <- err
	}()
	for {
		if _, err := os.Stat(filepath.Join(work, "started")); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended before its task started: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// Another command changes the resource while its task runs.
	update(t, path, func(tx *store.Tx) error {
		_, err := resources.NewCatalog(tx).Update("app", resources.Values{Raw: map[string]any{"value": "b"}}, resources.Meta{})
		return err
	})
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	view(t, path, func(tx *store.Tx) error {
		snap, err := staging.Committed(tx, "app")
		if err != nil {
			return err
		}
		if snap == nil || snap.Inputs["value"] != "a" {
			t.Errorf("committed state %+v, want the value the task ran with (a)", snap)
		}
		ents, err := staging.List(tx)
		if err != nil {
			return err
		}
		if len(ents) != 1 || !strings.Contains(ents[0].Cause, "changed while running") {
			t.Fatalf("staged %+v, want app's change to b staged afresh", ents)
		}
		return nil
	})
}
