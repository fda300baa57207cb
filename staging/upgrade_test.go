package staging_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
)

// writeBase writes a base directory (path -> content) under dir and loads
// it.
func writeBase(t *testing.T, dir string, files map[string]string) *resources.Base {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const upMeta = "handler: shell\nactions: {run: run.sh, update: run.sh}\ninputs:\n  x: {schema: str!}\n  pw: {schema: str, sensitive: true}\n"

// upgraded creates r from v1, commits its run and upgrades it to b.
func upgraded(t *testing.T, b func(dir string) *resources.Base) (*staging.Entry, string) {
	t.Helper()
	db := openStore(t)
	dir := filepath.Join(t.TempDir(), "web")
	v1 := writeBase(t, dir, map[string]string{"meta.yaml": upMeta, "run.sh": "echo 1"})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := cat.Create(resources.CreateSpec{Name: "r", Base: v1, Values: must(resources.ParseValues([]string{"x=a", "pw=s3cret"}))}, false); err != nil {
			return err
		}
		if _, err := st.Touch("create", "r"); err != nil {
			return err
		}
		return commit(st, "r.run")
	})
	next := b(dir)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		u, err := cat.Upgrade("r", next)
		if err != nil {
			return err
		}
		_, err = st.Upgrade(u)
		return err
	})
	ents := logKeys(t, db)
	if len(ents) == 0 {
		return nil, dir
	}
	return entry(t, db, "r.update"), dir
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestUpgradeDropsInputsMaskingSecrets(t *testing.T) {
	e, _ := upgraded(t, func(dir string) *resources.Base {
		return writeBase(t, dir, map[string]string{"meta.yaml": "handler: shell\nactions: {run: run.sh, update: run.sh}\ninputs:\n  y: {schema: int, value: 2}\n", "run.sh": "echo 2"})
	})
	var text []string
	for _, c := range e.Diff {
		text = append(text, staging.FormatChange(c))
	}
	if len(text) == 0 || !regexp.MustCompile(`^~ base: web@[0-9a-f]{12} >> web@[0-9a-f]{12}$`).MatchString(text[0]) {
		t.Fatalf("diff %q: want the base line first", text)
	}
	want := []string{"~ meta.yaml", "~ run.sh", "+ y: 2", "- pw: ********", "- x: a"}
	if diff := cmp.Diff(want, text[1:]); diff != "" {
		t.Errorf("diff of an upgrade dropping required x and sensitive pw (-want +got):\n%s", diff)
	}
}

func TestUpgradeBackToTheCommittedBaseLeavesNothingStaged(t *testing.T) {
	e, _ := upgraded(t, func(dir string) *resources.Base {
		writeBase(t, dir, map[string]string{"meta.yaml": upMeta, "run.sh": "echo 2"})
		return writeBase(t, dir, map[string]string{"meta.yaml": upMeta, "run.sh": "echo 1"})
	})
	if e != nil {
		t.Errorf("upgrade to the committed content staged %v", lines(e.Diff))
	}
	db := openStore(t)
	dir := filepath.Join(t.TempDir(), "web")
	v1 := writeBase(t, dir, map[string]string{"meta.yaml": upMeta, "run.sh": "echo 1"})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := cat.Create(resources.CreateSpec{Name: "r", Base: v1, Values: must(resources.ParseValues([]string{"x=a"}))}, false); err != nil {
			return err
		}
		if _, err := st.Touch("create", "r"); err != nil {
			return err
		}
		return commit(st, "r.run")
	})
	for i, script := range []string{"echo 2", "echo 3", "echo 1"} {
		b := writeBase(t, dir, map[string]string{"meta.yaml": upMeta, "run.sh": script})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			u, err := cat.Upgrade("r", b)
			if err != nil {
				return err
			}
			_, err = st.Upgrade(u)
			return err
		})
		keys := logKeys(t, db)
		switch {
		case i < 2 && len(keys) != 1:
			t.Fatalf("upgrade %d: staged %v, want r.update", i, keys)
		case i < 2 && len(entry(t, db, "r.update").Diff) != 2:
			t.Errorf("upgrade %d: diff %v, want the base line and ~ run.sh", i, entry(t, db, "r.update").Diff)
		case i == 2 && len(keys) != 0:
			t.Errorf("upgrade back to the committed base: staged %v", keys)
		}
	}
}

func TestUpgradeOfARecordWithoutDigest(t *testing.T) {
	db := openStore(t)
	dir := filepath.Join(t.TempDir(), "web")
	v1 := writeBase(t, dir, map[string]string{"meta.yaml": upMeta, "run.sh": "echo 1"})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		r, err := cat.Create(resources.CreateSpec{Name: "r", Base: v1, Values: must(resources.ParseValues([]string{"x=a"}))}, false)
		if err != nil {
			return err
		}
		if _, err := st.Touch("create", "r"); err != nil {
			return err
		}
		if err := commit(st, "r.run"); err != nil {
			return err
		}
		// A record from before bases were stored.
		cp := *r
		cp.Base.Digest = ""
		return cat.Put(&cp)
	})
	b := writeBase(t, filepath.Join(t.TempDir(), "moved"), map[string]string{"meta.yaml": upMeta, "run.sh": "echo 1"})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		u, err := cat.Upgrade("r", b)
		if err != nil {
			return err
		}
		if u.OldFiles || u.Unchanged || len(u.Files) != 0 {
			t.Errorf("upgrade of a record without digest: %+v", u)
		}
		_, err = st.Upgrade(u)
		return err
	})
	e := entry(t, db, "r.update")
	if got := staging.FormatChange(e.Diff[0]); got != "~ base: (files not stored) >> moved@"+b.Digest[:12] || len(e.Diff) != 1 {
		t.Errorf("diff %v, first line %q", lines(e.Diff), got)
	}
	err := try(db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.Discard("r.update")
		return err
	})
	if !errors.Is(err, staging.ErrNotRevertible) {
		t.Errorf("discard of an upgrade whose old base is not stored: %v, want ErrNotRevertible", err)
	}
}
