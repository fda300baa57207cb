package orch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// valueBase writes, in a directory of its own, a shell base whose run
// logs its task and its input value to $dir/runs.log, and returns it.
func valueBase(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "valuebase")
	if err := os.MkdirAll(filepath.Join(dir, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := "handler: shell\nactions:\n  run: actions/run.sh\ninputs:\n  dir: {schema: str!}\n  value: {schema: str, value: \"\"}\n"
	script := "#!/bin/sh\necho \"$SOLAR_TASK $SOLAR_INPUT_VALUE\" >> \"$SOLAR_INPUT_DIR/runs.log\"\n"
	if err := os.WriteFile(filepath.Join(dir, "meta.yaml"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "actions", "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// baseChain makes a pinned plan of a chain of n resources of valueBase,
// with value "old", and removes the base's directory: what runs must come
// from the store. It returns the store, the plan, the directory runs.log
// is in, and the base's digest.
func baseChain(t *testing.T, n int) (path, uid, out, digest string) {
	t.Helper()
	dir := valueBase(t)
	out = t.TempDir()
	path, uid = benchStoreAt(t, testStorePath(t), "chain", n, dir, map[string]any{"dir": out, "value": "old"})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	view(t, path, func(tx *store.Tx) error {
		r, err := resources.NewCatalog(tx).Get("r0")
		digest = r.Base.Digest
		return err
	})
	if digest == "" {
		t.Fatal("the resource records no digest")
	}
	return path, uid, out, digest
}

// runLogged runs plan uid with its bases cached in cache, and returns the
// final states and the lines its scripts logged in out.
func runLogged(t *testing.T, path, uid, out, cache string) (map[string]State, []string) {
	t.Helper()
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 2, PerNode: 1, CacheDir: cache}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "runs.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines []string
	if len(raw) > 0 {
		lines = strings.Split(strings.TrimSpace(string(raw)), "\n")
	}
	return states, lines
}

// A run's scripts come from the store, written once into the machine's
// base cache under their digest (0700): the directory the base was created
// from is gone, and everything runs.
func TestRunMaterializesFromTheStore(t *testing.T) {
	path, uid, out, digest := baseChain(t, 3)
	cache := filepath.Join(t.TempDir(), "cache")
	states, lines := runLogged(t, path, uid, out, cache)
	for id, st := range states {
		if st.Status != StatusSuccess {
			t.Errorf("%s ended %s: %s", id, st.Status, st.Err)
		}
	}
	if want := []string{"r0.run#0 old", "r1.run#0 old", "r2.run#0 old"}; !reflect.DeepEqual(lines, want) {
		t.Errorf("runs.log = %q, want %q", lines, want)
	}
	ents, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != digest {
		t.Fatalf("cache holds %v, want the one digest %s", ents, digest)
	}
	fi, err := os.Stat(filepath.Join(cache, digest))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("cached base has mode %v, want 0700", fi.Mode().Perm())
	}
}

// A run writes a base into the cache once, however many tasks use it: the
// second task of a digest gets the directory the first one made.
func TestRunBasesOncePerDigest(t *testing.T) {
	path, _, _, digest := baseChain(t, 3)
	cache := t.TempDir()
	view(t, path, func(tx *store.Tx) error {
		rb := newRunBases(tx, cache)
		dir, problem := rb.dir("valuebase", digest)
		if problem != "" {
			t.Fatal(problem)
		}
		// Written and verified again, this file would go.
		extra := filepath.Join(dir, "extra")
		if err := os.WriteFile(extra, nil, 0o600); err != nil {
			return err
		}
		again, problem := rb.dir("valuebase", digest)
		if again != dir || problem != "" {
			t.Errorf("second task: %q %q, want %q", again, problem, dir)
		}
		if _, err := os.Stat(extra); err != nil {
			t.Errorf("the base was written again for the second task: %v", err)
		}
		return nil
	})
}

// A base that does not verify, is not in the store, or that a resource
// does not record (a store from before bases were stored) fails each of its
// tasks naming it, and nothing of it runs.
func TestBadBaseRunsNothing(t *testing.T) {
	tests := []struct {
		name   string
		damage func(tx *store.Tx, uid, digest string) error
		want   string
	}{
		{"corrupt", func(tx *store.Tx, uid, digest string) error {
			return tx.Put(store.Bases, "content/"+digest, []byte("\x07meta.yamlscribbled"))
		}, "base valuebase@" + "%s does not match its digest; nothing of it ran"},
		{"missing", func(tx *store.Tx, uid, digest string) error {
			return bases.Delete(tx, digest)
		}, "base valuebase@%s is not in the store; nothing of it ran"},
		{"no digest", func(tx *store.Tx, uid, digest string) error {
			cat := resources.NewCatalog(tx)
			for _, name := range []string{"r0", "r1", "r2"} {
				r, err := cat.Get(name)
				if err != nil {
					return err
				}
				cp := *r
				cp.Base.Digest = ""
				if err := cat.Put(&cp); err != nil {
					return err
				}
			}
			// A plan of such a store was made before pins too.
			return unpin(tx, uid)
		}, "has no stored base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, uid, out, digest := baseChain(t, 3)
			update(t, path, func(tx *store.Tx) error { return tt.damage(tx, uid, digest) })
			want := tt.want
			if strings.Contains(want, "%s") {
				want = strings.ReplaceAll(want, "%s", bases.Short(digest))
			}
			states, lines := runLogged(t, path, uid, out, t.TempDir())
			for _, id := range []string{"r0.run#0", "r1.run#0", "r2.run#0"} {
				if st := states[id]; st.Status == StatusSuccess || !strings.Contains(st.Err+st.Reason, want) && !strings.Contains(st.Reason, "upstream") {
					t.Errorf("%s: %s %q %q, want an error saying %q", id, st.Status, st.Err, st.Reason, want)
				}
			}
			if st := states["r0.run#0"]; st.Status != StatusError || !strings.Contains(st.Err, want) {
				t.Errorf("r0.run#0: %s %q, want ERROR %q", st.Status, st.Err, want)
			}
			if len(lines) != 0 {
				t.Errorf("scripts ran: %q", lines)
			}
		})
	}
}

// unpin makes plan uid one made before pins were recorded.
func unpin(tx *store.Tx, uid string) error {
	var keys []string
	if err := tx.ForEach(store.Plans, pinPrefix(uid), func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		return err
	}
	for _, k := range append(keys, pinnedKey(uid)) {
		if err := tx.Delete(store.Plans, k); err != nil {
			return err
		}
	}
	return nil
}

// A pinned plan's task runs with its pinned value even when the resource's
// record says otherwise; a plan made before pins (stored by an older
// solar) still runs, with the record's values, as it did.
func TestUnpinnedPlanRunsCatalogValues(t *testing.T) {
	for _, pinned := range []bool{true, false} {
		path, uid, out, _ := baseChain(t, 3)
		update(t, path, func(tx *store.Tx) error {
			if _, err := resources.NewCatalog(tx).Update("r0", resources.Values{Raw: map[string]any{"value": "new"}}, resources.Meta{}); err != nil {
				return err
			}
			if !pinned {
				return unpin(tx, uid)
			}
			return nil
		})
		view(t, path, func(tx *store.Tx) error {
			if Pinned(tx, uid) != pinned {
				t.Fatalf("Pinned = %v, want %v", !pinned, pinned)
			}
			return nil
		})
		want := "r0.run#0 old"
		if !pinned {
			want = "r0.run#0 new"
		}
		states, lines := runLogged(t, path, uid, out, t.TempDir())
		if st := states["r0.run#0"]; st.Status != StatusSuccess {
			t.Fatalf("pinned %v: r0.run#0 ended %s: %s", pinned, st.Status, st.Err)
		}
		if len(lines) != 3 || lines[0] != want {
			t.Errorf("pinned %v: runs.log = %q, want %q", pinned, lines, want)
		}
	}
}

// A pinned task's inputs are its pin's, overridden by the outputs the run
// sent to the emitter input a connection feeds it from, or (for an input
// no connection feeds) to its own input; nothing else the run sent
// reaches it.
func TestPinnedInputsTakeSentOutputs(t *testing.T) {
	defs := map[string]*resources.InputDef{"fed": {Name: "fed"}, "own": {Name: "own"}, "plain": {Name: "plain"}}
	info := &taskInfo{node: &planner.Node{Resource: "r", ID: "r.run#0"}, inputDefs: defs,
		pin: &Pin{Inputs: map[string]any{"fed": "p1", "own": "p2", "plain": "p3"}, Sources: map[string]string{"fed": "e.value"}}}
	l := &ledger{}
	if got, want := l.inputs(info), map[string]any{"fed": "p1", "own": "p2", "plain": "p3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("before any output: %v, want %v", got, want)
	}
	l.keepSent("e", "value", "s1")
	l.keepSent("r", "own", "s2")
	l.keepSent("r", "fed", "ignored: a connection feeds it")
	l.keepSent("x", "plain", "another resource's")
	if got, want := l.inputs(info), map[string]any{"fed": "s1", "own": "s2", "plain": "p3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after outputs: %v, want %v", got, want)
	}
	if info.pin.Inputs["fed"] != "p1" {
		t.Error("the pin itself was changed")
	}
}

// A resumed run gives a task the outputs the earlier run's succeeded tasks
// sent to its pin's sources (they are in the emitter's record), and nothing
// for a source whose task has not succeeded yet.
func TestResumedOutputs(t *testing.T) {
	path, _, _, _ := baseChain(t, 3)
	pin := &Pin{Later: map[string]string{"value": "r0.run#0"}, Sources: map[string]string{"value": "r0.value"}}
	infos := map[string]*taskInfo{"x.run#0": {pin: pin}, "r0.run#0": {}}
	for _, tt := range []struct {
		emitter Status
		want    map[string]any
	}{
		{StatusSuccess, map[string]any{"r0.value": "old"}},
		{StatusError, nil},
	} {
		view(t, path, func(tx *store.Tx) error {
			got, err := resumedOutputs(tx, map[string]State{"r0.run#0": {Status: tt.emitter}, "x.run#0": {Status: StatusPending}}, infos)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("emitter %s: %v, want %v", tt.emitter, got, tt.want)
			}
			return nil
		})
	}
}
