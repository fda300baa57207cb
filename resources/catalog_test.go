package resources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// basesDir holds the real bases shared with the CLI tests.
const basesDir = "../testdata/resources"

// openStore returns a store in a temp dir, checked for consistency at
// cleanup.
func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Errorf("store inconsistent: %v", err)
		}
		db.Close()
	})
	return db
}

// update runs fn in a write transaction over a fresh catalog and fails the
// test if the transaction does not commit.
func update(t testing.TB, db *store.DB, fn func(cat *Catalog)) {
	t.Helper()
	if err := db.Update(func(tx *store.Tx) error {
		fn(NewCatalog(tx))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a read transaction over a fresh catalog, so nothing is
// served from a cache filled by earlier writes.
func view(t testing.TB, db *store.DB, fn func(cat *Catalog)) {
	t.Helper()
	if err := db.View(func(tx *store.Tx) error {
		fn(NewCatalog(tx))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// writeFiles creates files (path relative to dir -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeBase makes a base named name under a temp dir with the given
// meta.yaml and returns its directory.
func writeBase(t testing.TB, name, meta string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeFiles(t, dir, map[string]string{"meta.yaml": meta})
	return dir
}

// loadBase loads a base and fails the test on error.
func loadBase(t testing.TB, dir string) *Base {
	t.Helper()
	b, err := LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// realBase loads one of the bases in testdata/resources.
func realBase(t testing.TB, name string) *Base {
	t.Helper()
	return loadBase(t, filepath.Join(basesDir, name))
}

// create parses args as the CLI does and creates the resource.
func create(cat *Catalog, name string, b *Base, args ...string) (*Resource, error) {
	vals, err := ParseValues(args)
	if err != nil {
		return nil, err
	}
	return cat.Create(CreateSpec{Name: name, Base: b, Values: vals}, false)
}

// mustCreate is create that fails the test on error.
func mustCreate(t testing.TB, cat *Catalog, name string, b *Base, args ...string) *Resource {
	t.Helper()
	r, err := create(cat, name, b, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantErr checks that err wraps kind and mentions every one of parts.
func wantErr(t *testing.T, err, kind error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one wrapping %v mentioning %q", kind, parts)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestCatalogListFiltersByTag(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	update(t, db, func(cat *Catalog) {
		for _, c := range []struct {
			name string
			tags tags.Set
		}{{"web2", tags.Set{"env": "prod"}}, {"db1", tags.Set{"env": "prod", "db": ""}}, {"web1", tags.Set{"env": "stage"}}} {
			if _, err := cat.Create(CreateSpec{Name: c.name, Base: noop, Tags: c.tags}, false); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{"", []string{"db1", "web1", "web2"}},
		{"env=prod", []string{"db1", "web2"}},
		{"env=prod & db", []string{"db1"}},
		{"env=stage | resource=db1", []string{"db1", "web1"}},
		{"role=noop", []string{"db1", "web1", "web2"}},
		{"env=dev", nil},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			var filter *tags.Expr
			if tt.expr != "" {
				var err error
				if filter, err = tags.ParseExpr(tt.expr); err != nil {
					t.Fatal(err)
				}
			}
			view(t, db, func(cat *Catalog) {
				rs, err := cat.List(filter)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rs {
					got = append(got, r.Name)
				}
				if strings.Join(got, " ") != strings.Join(tt.want, " ") {
					t.Errorf("List(%q) = %q, want %q", tt.expr, got, tt.want)
				}
			})
		})
	}
}

func TestCatalogSetTags(t *testing.T) {
	noop := realBase(t, "noop")
	for _, tt := range []struct {
		name    string
		set     tags.Set
		del     bool
		want    string // tags.Set.String of the result
		wantErr string
	}{
		{name: "add", set: tags.Set{"env": "prod", "rack": ""}, want: "env=prod,rack,resource=a,role=noop"},
		{name: "replace value", set: tags.Set{"env": "dev"}, want: "env=dev,resource=a,role=noop"},
		{name: "delete by key", set: tags.Set{"env": ""}, del: true, want: "resource=a,role=noop"},
		{name: "delete needs the same value", set: tags.Set{"env": "prod"}, del: true, want: "env=stage,resource=a,role=noop"},
		{name: "delete with the value", set: tags.Set{"env": "stage"}, del: true, want: "resource=a,role=noop"},
		{name: "resource tag is fixed", set: tags.Set{"resource": "b"}, wantErr: `tag "resource" is implicit`},
		{name: "resource tag cannot be deleted", set: tags.Set{"resource": ""}, del: true, wantErr: `tag "resource" is implicit`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				if _, err := cat.Create(CreateSpec{Name: "a", Base: noop, Tags: tags.Set{"env": "stage"}}, false); err != nil {
					t.Fatal(err)
				}
				_, err := cat.SetTags("a", tt.set, tt.del)
				if tt.wantErr != "" {
					wantErr(t, err, ErrInvalid, tt.wantErr)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			})
			if tt.wantErr != "" {
				return
			}
			view(t, db, func(cat *Catalog) {
				r, err := cat.Get("a")
				if err != nil {
					t.Fatal(err)
				}
				if got := r.Tags.String(); got != tt.want {
					t.Errorf("tags = %s, want %s", got, tt.want)
				}
			})
		})
	}
}

func TestCatalogGetUnknown(t *testing.T) {
	db := openStore(t)
	view(t, db, func(cat *Catalog) {
		_, err := cat.Get("ghost")
		wantErr(t, err, ErrNotFound, `"ghost"`)
		if cat.Exists("ghost") {
			t.Error("Exists(ghost) = true")
		}
		if _, ok := cat.Actions("ghost"); ok {
			t.Error("Actions(ghost) reported a resource")
		}
	})
}

// A catalog caches what it read; Reset forgets it all, so the next reads
// see what others wrote in the same transaction since.
func TestCatalogReset(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "a", noop, "value=first")
		if _, err := cat.Effective("a"); err != nil {
			t.Fatal(err)
		}
		if ok := cat.Exists("gone"); ok {
			t.Fatal("gone exists")
		}
		other := NewCatalog(cat.Tx())
		vals, err := ParseValues([]string{"value=second"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Update("a", vals, Meta{}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, other, "gone", noop)
		if eff, _ := cat.Effective("a"); eff["value"] != "first" {
			t.Fatalf("before Reset, value = %v: the catalog cached nothing, the test proves nothing", eff["value"])
		}
		cat.Reset()
		if eff, _ := cat.Effective("a"); eff["value"] != "second" {
			t.Errorf("after Reset, effective value = %v, want second", eff["value"])
		}
		if r, _ := cat.Get("a"); r.Inputs["value"] != "second" {
			t.Errorf("after Reset, input value = %v, want second", r.Inputs["value"])
		}
		if !cat.Exists("gone") {
			t.Error("after Reset, a resource made since is not seen")
		}
	})
}

// Effective values and sensitivity are kept in the store only for
// resources that connections feed, and only those look for them there: a
// resource fed by none reads its own record and nothing else, whatever
// the Effective bucket holds under its name.
func TestUnfedResourceIgnoresKeptValues(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "a", noop, "value=own")
		tx := cat.Tx()
		kept := []byte(`{"value":"kept"}`)
		if err := tx.Put(store.Effective, "a", kept); err != nil {
			t.Fatal(err)
		}
		if err := tx.Put(store.Effective, sensKey("a"), []byte(`{"effective":"`+digest(kept)+`","inputs":["value"]}`)); err != nil {
			t.Fatal(err)
		}
	})
	view(t, db, func(cat *Catalog) {
		eff, err := cat.Effective("a")
		if err != nil || eff["value"] != "own" {
			t.Errorf("Effective = %v, %v; want the resource's own value", eff, err)
		}
		sens, err := cat.SensitiveInputs("a")
		if err != nil || sens["value"] {
			t.Errorf("SensitiveInputs = %v, %v; want none", sens, err)
		}
	})
}
