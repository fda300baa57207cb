package orch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/store"
)

// TestRunnerFencedAfterLosingItsClaim: once another runner's claim replaces
// this one's (as after its lease expired on a shared store), the
// run's next write fails naming the new holder, nothing more is written,
// and no later task starts.
func TestRunnerFencedAfterLosingItsClaim(t *testing.T) {
	base := t.TempDir()
	for name, body := range map[string]string{
		"meta.yaml":      "handler: shell\nactions:\n  run: actions/run.sh\ninputs:\n  dir: {schema: str!}\n",
		"actions/run.sh": "#!/bin/sh\necho \"$SOLAR_TASK\" >> \"$SOLAR_INPUT_DIR/runs.log\"\nsleep 1\n",
	} {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	path, uid := benchStore(t, "chain", 3, base, map[string]any{"dir": work})
	done := make(chan error, 1)
	go func() {
		r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 1, PerNode: 1}
		_, _, err := r.Run(context.Background(), nil)
		done <- err
	}()
	// While the first task sleeps, another runner takes the plan over.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if raw, _ := os.ReadFile(filepath.Join(work, "runs.log")); len(raw) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first task never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	update(t, path, func(tx *store.Tx) error {
		raw, _ := json.Marshal(runnerRecord{PID: 4242, Host: "elsewhere", Started: time.Now(), Token: "the other runner"})
		return tx.Put(store.Plans, runnerKey(uid), raw)
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced runner did not stop")
	}
	if !errors.Is(err, ErrLostClaim) || !strings.Contains(err.Error(), "pid 4242 on elsewhere") {
		t.Fatalf("Run = %v, want ErrLostClaim naming the new holder", err)
	}
	raw, _ := os.ReadFile(filepath.Join(work, "runs.log"))
	if n := strings.Count(string(raw), "\n"); n != 1 {
		t.Fatalf("%d tasks started, want only the first:\n%s", n, raw)
	}
	view(t, path, func(tx *store.Tx) error {
		var rr runnerRecord
		got, err := tx.Get(store.Plans, runnerKey(uid))
		if err != nil || json.Unmarshal(got, &rr) != nil || rr.Token != "the other runner" {
			t.Errorf("the runner record is %s (%v): the fenced runner wrote over it", got, err)
		}
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		states, err := States(tx, rec)
		if err != nil {
			return err
		}
		for id, st := range states {
			if st.Status.Finished() {
				t.Errorf("%s is %s: the fenced runner wrote a final state", id, st.Status)
			}
		}
		return nil
	})
}
