package orch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// checkBase writes a shell base, version v, whose run and update write
// the input value to $dir/$SOLAR_RESOURCE and whose check compares that
// file with the value. A check logs "resource value v" to $dir/checks.log
// (what it was given, and by which version of the base); it fails when
// $dir/RESOURCE.fail exists and reports "stamp" among its changes when
// $dir/RESOURCE.stamp does. The base ignores "stamp" for drift.
func checkBase(t *testing.T, v string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkbase")
	if err := os.MkdirAll(filepath.Join(dir, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := "handler: shell\nversion: " + v + "\ncheck: [run, update]\ndrift: {ignore: [stamp]}\n" +
		"actions:\n  run: actions/apply.sh\n  update: actions/apply.sh\n" +
		"inputs:\n  dir: {schema: str!}\n  value: {schema: str, value: \"\"}\n"
	script := `#!/bin/sh
f="$SOLAR_INPUT_DIR/$SOLAR_RESOURCE"
if [ "$SOLAR_CHECK" != 1 ]; then
  printf '%s\n' "$SOLAR_INPUT_VALUE" > "$f"
  exit 0
fi
echo "$SOLAR_RESOURCE $SOLAR_INPUT_VALUE ` + v + `" >> "$SOLAR_INPUT_DIR/checks.log"
if [ -e "$f.fail" ]; then echo "cannot read $f" >&2; exit 1; fi
changes=""
if [ "$(cat "$f" 2>/dev/null)" != "$SOLAR_INPUT_VALUE" ]; then
  echo "$f differs from value"
  changes='"value"'
fi
if [ -e "$f.stamp" ]; then changes="${changes:+$changes,}\"stamp\""; fi
if [ -z "$changes" ]; then
  echo '{"changed": false}' > "$SOLAR_RESULT"
else
  echo "{\"changed\": true, \"changes\": [$changes]}" > "$SOLAR_RESULT"
fi
`
	for name, text := range map[string]string{"meta.yaml": meta, "actions/apply.sh": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// driftWorld is a store whose resources a, b, c (tag grp=x for a and b)
// of checkBase v1 and n of the noop base (no check) were created, run and
// committed through the real path: process, then run.
type driftWorld struct {
	t         *testing.T
	path, out string
	cache     string
	v1        *resources.Base
}

func newDriftWorld(t *testing.T) *driftWorld {
	t.Helper()
	w := &driftWorld{t: t, path: testStorePath(t), out: t.TempDir(), cache: t.TempDir()}
	var err error
	if w.v1, err = resources.LoadBase(checkBase(t, "v1")); err != nil {
		t.Fatal(err)
	}
	noop, err := resources.LoadBase(filepath.Join("..", "testdata", "resources", "noop"))
	if err != nil {
		t.Fatal(err)
	}
	update(t, w.path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		for _, n := range []string{"a", "b", "c"} {
			ts := tags.Set{}
			if n != "c" {
				ts["grp"] = "x"
			}
			vals := map[string]any{"dir": w.out, "value": n + "1"}
			if _, err := cat.Create(resources.CreateSpec{Name: n, Base: w.v1, Values: resources.Values{Raw: vals}, Tags: ts}, false); err != nil {
				return err
			}
		}
		if _, err := cat.Create(resources.CreateSpec{Name: "n", Base: noop}, false); err != nil {
			return err
		}
		_, err := staging.New(cat, time.Now).Touch("create", "a", "b", "c", "n")
		return err
	})
	w.processAndRun()
	return w
}

// processAndRun plans everything staged and runs it.
func (w *driftWorld) processAndRun() {
	w.t.Helper()
	var uid string
	update(w.t, w.path, func(tx *store.Tx) error {
		res, err := Process(tx, nil, nil, true, time.Now(), "")
		if err == nil {
			uid = res.Record.UID
		}
		return err
	})
	r := &Runner{Store: store.NewHandle(w.path), UID: uid, Concurrency: 2, PerNode: 1, CacheDir: w.cache, Now: time.Now}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	for id, st := range states {
		if st.Status != StatusSuccess && st.Status != StatusNoop {
			w.t.Fatalf("%s ended %s: %s", id, st.Status, st.Err)
		}
	}
}

// drift runs Drift with o's selection and returns its results by resource
// and the lines the checks logged.
func (w *driftWorld) drift(o DriftOptions) (*DriftRun, map[string]DriftResult, []string, error) {
	w.t.Helper()
	if err := os.Remove(filepath.Join(w.out, "checks.log")); err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	o.Concurrency, o.PerNode = 4, 1
	o.Settings = Runner{CacheDir: w.cache, Now: time.Now, Actor: "tester", Host: "here"}
	run, err := Drift(context.Background(), store.NewHandle(w.path), o)
	if err != nil {
		return nil, nil, nil, err
	}
	by := map[string]DriftResult{}
	for _, r := range run.Results {
		by[r.Resource] = r
	}
	raw, err := os.ReadFile(filepath.Join(w.out, "checks.log"))
	if err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	slices.Sort(lines)
	return run, by, lines, nil
}

func (w *driftWorld) mustDrift(o DriftOptions) (*DriftRun, map[string]DriftResult, []string) {
	w.t.Helper()
	run, by, lines, err := w.drift(o)
	if err != nil {
		w.t.Fatal(err)
	}
	return run, by, lines
}

// write puts text in the file name of the world's directory, as an
// operator editing by hand would.
func (w *driftWorld) write(name, text string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.out, name), []byte(text), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func wantDrift(t *testing.T, by map[string]DriftResult, name, status string, changes ...string) {
	t.Helper()
	got, ok := by[name]
	if !ok {
		t.Errorf("%s: no result; want %s", name, status)
		return
	}
	if got.Status != status || !slices.Equal(got.Changes, append([]string{}, changes...)) {
		t.Errorf("%s: %s %v (%q); want %s %v", name, got.Status, got.Changes, got.Detail, status, changes)
	}
}

// Right after a run everything that can be checked is in sync, with the
// update check and the committed values; the noop base cannot be checked.
func TestDriftInSync(t *testing.T) {
	w := newDriftWorld(t)
	run, by, lines := w.mustDrift(DriftOptions{Selection: "all"})
	for _, n := range []string{"a", "b", "c"} {
		wantDrift(t, by, n, DriftInSync)
		if by[n].Action != "update" {
			t.Errorf("%s checked %q; want update, which the base checks", n, by[n].Action)
		}
	}
	wantDrift(t, by, "n", DriftCannot)
	if !strings.Contains(by["n"].Detail, "noop") {
		t.Errorf("cannot check says %q; want it to name the base", by["n"].Detail)
	}
	if want := []string{"a a1 v1", "b b1 v1", "c c1 v1"}; !slices.Equal(lines, want) {
		t.Errorf("checks saw %q; want %q", lines, want)
	}
	if run.Count(DriftDrifted) != 0 || run.By != "tester" || run.Host != "here" || run.Selection != "all" || run.ID == "" {
		t.Errorf("run %+v", run)
	}
}

// A file changed by hand is drift naming what differs, with what the check
// printed; a failing check is an error; neither changes anything.
func TestDriftDriftedAndError(t *testing.T) {
	w := newDriftWorld(t)
	w.write("a", "by hand\n")
	w.write("c.fail", "")
	_, by, _ := w.mustDrift(DriftOptions{})
	wantDrift(t, by, "a", DriftDrifted, "value")
	if !strings.Contains(by["a"].Detail, "differs from value") {
		t.Errorf("a's detail %q; want what the check printed", by["a"].Detail)
	}
	wantDrift(t, by, "b", DriftInSync)
	wantDrift(t, by, "c", DriftError)
	if by["c"].Detail == "" {
		t.Error("c's error says nothing")
	}
	raw, err := os.ReadFile(filepath.Join(w.out, "a"))
	if err != nil || string(raw) != "by hand\n" {
		t.Errorf("drift changed a's file: %q %v", raw, err)
	}
	var ents []*staging.Entry
	view(t, w.path, func(tx *store.Tx) (err error) { ents, err = staging.List(tx); return err })
	if len(ents) != 0 {
		t.Errorf("drift without --stage staged %d entries", len(ents))
	}
}

// Differences the base ignores (stamp) or the resource ignores (its
// drift_ignore meta) are not drift, and are recorded as ignored.
func TestDriftIgnore(t *testing.T) {
	w := newDriftWorld(t)
	w.write("a.stamp", "")
	w.write("b.stamp", "")
	w.write("b", "by hand\n")
	w.write("c", "by hand\n")
	update(t, w.path, func(tx *store.Tx) error {
		_, err := resources.NewCatalog(tx).Update("c", resources.Values{}, resources.Meta{DriftIgnore: []string{"value"}})
		return err
	})
	_, by, _ := w.mustDrift(DriftOptions{})
	wantDrift(t, by, "a", DriftInSync)
	if !slices.Equal(by["a"].Ignored, []string{"stamp"}) {
		t.Errorf("a ignored %v; want [stamp] (the base's rule)", by["a"].Ignored)
	}
	wantDrift(t, by, "b", DriftDrifted, "value")
	if !slices.Equal(by["b"].Ignored, []string{"stamp"}) {
		t.Errorf("b ignored %v; want [stamp]", by["b"].Ignored)
	}
	wantDrift(t, by, "c", DriftInSync)
	if !slices.Equal(by["c"].Ignored, []string{"value"}) {
		t.Errorf("c ignored %v; want [value] (the resource's rule)", by["c"].Ignored)
	}
}

// Tags and names select what is checked; an unknown name is bad input and
// nothing is kept.
func TestDriftSelection(t *testing.T) {
	w := newDriftWorld(t)
	expr, err := tags.ParseExpr("grp=x")
	if err != nil {
		t.Fatal(err)
	}
	_, by, lines := w.mustDrift(DriftOptions{Tags: expr})
	if len(by) != 2 || by["a"].Status == "" || by["b"].Status == "" {
		t.Errorf("-t grp=x checked %v; want a and b", by)
	}
	if len(lines) != 2 {
		t.Errorf("-t grp=x ran checks %q", lines)
	}
	_, by, _ = w.mustDrift(DriftOptions{Names: []string{"c", "n", "c"}})
	if len(by) != 2 || by["c"].Status != DriftInSync || by["n"].Status != DriftCannot {
		t.Errorf("-n c -n n -n c gave %v; want c and n once each", by)
	}
	before := driftRunCount(t, w.path)
	_, _, _, err = w.drift(DriftOptions{Names: []string{"a", "nosuch"}})
	if !errors.Is(err, resources.ErrNotFound) || !errors.Is(err, invalid.ErrInput) || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown name: %v; want bad input naming it", err)
	}
	if after := driftRunCount(t, w.path); after != before {
		t.Errorf("a refused drift kept a run: %d runs, had %d", after, before)
	}
}

func driftRunCount(t *testing.T, path string) int {
	t.Helper()
	var n int
	view(t, path, func(tx *store.Tx) error {
		runs, err := DriftRuns(tx)
		n = len(runs)
		return err
	})
	return n
}

// A change staged but not run is never drift: the check gets the committed
// value, and the world, which still holds it, is in sync.
func TestDriftStagedChangeIsNotDrift(t *testing.T) {
	w := newDriftWorld(t)
	update(t, w.path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if _, err := cat.Update("a", resources.Values{Raw: map[string]any{"value": "a2"}}, resources.Meta{}); err != nil {
			return err
		}
		_, err := staging.New(cat, time.Now).Touch("update", "a")
		return err
	})
	_, by, lines := w.mustDrift(DriftOptions{Names: []string{"a"}})
	wantDrift(t, by, "a", DriftInSync)
	if want := []string{"a a1 v1"}; !slices.Equal(lines, want) {
		t.Errorf("the check saw %q; want %q (the committed value)", lines, want)
	}
}

// An upgrade staged but not run is checked with the base that committed
// the resource (the committing plan's digest), not the new one.
func TestDriftUpgradeNotRunChecksCommittedBase(t *testing.T) {
	w := newDriftWorld(t)
	v2, err := resources.LoadBase(checkBase(t, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	update(t, w.path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		u, err := cat.Upgrade("a", v2)
		if err != nil {
			return err
		}
		_, err = staging.New(cat, time.Now).Upgrade(u)
		return err
	})
	_, _, lines := w.mustDrift(DriftOptions{Names: []string{"a"}})
	if want := []string{"a a1 v1"}; !slices.Equal(lines, want) {
		t.Errorf("the check ran as %q; want %q (the committed base)", lines, want)
	}
	w.processAndRun()
	_, _, lines = w.mustDrift(DriftOptions{Names: []string{"a"}})
	if want := []string{"a a1 v2"}; !slices.Equal(lines, want) {
		t.Errorf("after the upgrade ran the check ran as %q; want %q", lines, want)
	}
}

// Every run is kept: DriftRuns lists them oldest first, GetDriftRun finds
// one by id or "last", and an unknown id is bad input.
func TestDriftRunsKept(t *testing.T) {
	w := newDriftWorld(t)
	first, _, _ := w.mustDrift(DriftOptions{Selection: "all"})
	w.write("a", "by hand\n")
	second, _, _ := w.mustDrift(DriftOptions{Names: []string{"a"}, Selection: "-n a"})
	view(t, w.path, func(tx *store.Tx) error {
		runs, err := DriftRuns(tx)
		if err != nil {
			return err
		}
		if len(runs) != 2 || runs[0].ID != first.ID || runs[1].ID != second.ID {
			t.Errorf("DriftRuns = %v; want %s then %s", runs, first.ID, second.ID)
		}
		last, err := GetDriftRun(tx, "last")
		if err != nil {
			return err
		}
		if last.ID != second.ID || last.Selection != "-n a" || last.Count(DriftDrifted) != 1 || last.By != "tester" {
			t.Errorf("last = %+v; want the second run, a drifted", last)
		}
		got, err := GetDriftRun(tx, first.ID)
		if err != nil || got.Count(DriftInSync) != 3 || got.Count(DriftCannot) != 1 {
			t.Errorf("GetDriftRun(%s) = %+v, %v", first.ID, got, err)
		}
		_, err = GetDriftRun(tx, "nosuch")
		if !errors.Is(err, ErrNoDriftRun) || !errors.Is(err, invalid.ErrInput) || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("unknown id: %v; want bad input naming it", err)
		}
		return nil
	})
	empty := testStorePath(t)
	view(t, empty, func(tx *store.Tx) error {
		if _, err := GetDriftRun(tx, "last"); !errors.Is(err, ErrNoDriftRun) {
			t.Errorf("last of no runs: %v; want ErrNoDriftRun", err)
		}
		return nil
	})
}

// Stage stages the corrective action of each drifted resource with cause
// "drift" and records it; processed and run, it repairs the world and the
// next drift is clean.
func TestDriftStage(t *testing.T) {
	w := newDriftWorld(t)
	w.write("b", "by hand\n")
	run, _, _ := w.mustDrift(DriftOptions{Stage: true})
	if !slices.Equal(run.Staged, []string{"b.update"}) {
		t.Errorf("staged %v; want [b.update]", run.Staged)
	}
	view(t, w.path, func(tx *store.Tx) error {
		ents, err := staging.List(tx)
		if err != nil {
			return err
		}
		if len(ents) != 1 || ents[0].Key != "b.update" || ents[0].Cause != DriftCause {
			t.Errorf("staged %+v; want b.update with cause %q", ents, DriftCause)
		}
		last, err := GetDriftRun(tx, "last")
		if err == nil && !slices.Equal(last.Staged, []string{"b.update"}) {
			t.Errorf("kept run staged %v", last.Staged)
		}
		return err
	})
	w.processAndRun()
	raw, err := os.ReadFile(filepath.Join(w.out, "b"))
	if err != nil || string(raw) != "b1\n" {
		t.Errorf("after the corrective run b holds %q %v; want b1", raw, err)
	}
	run, _, _ = w.mustDrift(DriftOptions{Stage: true})
	if run.Count(DriftDrifted) != 0 || len(run.Staged) != 0 {
		t.Errorf("drift after repair: %d drifted, staged %v", run.Count(DriftDrifted), run.Staged)
	}
}
