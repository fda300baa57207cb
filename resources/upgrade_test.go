package resources

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/bolt"
	"github.com/solarops/solar/store/kv"
)

// copyBase copies the base testdata/resources/name into a temp directory
// that the test may delete.
func copyBase(t *testing.T, name string) string {
	t.Helper()
	c, err := bases.Read(filepath.Join(basesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := bases.Export(c, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withoutDigest is a record as schema version 3 wrote it: this version's
// record with no "digest" in the base at path.
func withoutDigest(t *testing.T, raw []byte, path ...string) []byte {
	t.Helper()
	fields, err := objectFields(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fields {
		if len(path) > 0 && f.key == path[0] {
			fields[i].value = withoutDigest(t, f.value, path[1:]...)
		}
	}
	if len(path) == 0 {
		for i, f := range fields {
			if f.key == "digest" {
				fields = append(fields[:i], fields[i+1:]...)
				break
			}
		}
	}
	return encodeFields(fields)
}

// TestUpgradeStoresOldBases: a store of schema version 3 (resources
// naming their base by directory only) opened by this solar stores each
// directory's files once and writes the digest into the resources and
// into a committed removal's history entry, every other byte kept; a
// resource whose directory is gone keeps no digest, does not fail the
// open, and is reported naming it, its directory and the command that
// re-points it.
func TestUpgradeStoresOldBases(t *testing.T) {
	kept, gone := copyBase(t, "file"), copyBase(t, "noop")
	want := map[string][]byte{} // resource -> this version's record
	var removed []byte          // a history entry keeping a removed resource
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		for _, name := range []string{"a1", "a2", "a3"} {
			mustCreate(t, cat, name, loadBase(t, kept), "dir="+t.TempDir(), "path="+name)
		}
		mustCreate(t, cat, "b1", loadBase(t, gone))
	})
	if err := db.View(func(tx *store.Tx) error {
		for _, name := range []string{"a1", "a2", "a3", "b1"} {
			raw, err := tx.Get(store.Resources, name)
			if err != nil {
				return err
			}
			want[name] = raw
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	removed = []byte(`{"uid":"1","key":"a3.remove","resource":"a3","action":"remove","diff":[],"cause":"","committed_at":"2026-01-02T03:04:05Z","removed":` + string(want["a3"]) + `}`)

	p := filepath.Join(t.TempDir(), "old.db")
	be, err := bolt.Open(p, bolt.Options{Buckets: store.Buckets, Meta: store.MetaBucket, Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	err = be.Update(func(tx kv.Tx) error {
		for _, name := range []string{"a1", "a2", "b1"} {
			if err := tx.Put(store.Resources, name, withoutDigest(t, want[name], "base")); err != nil {
				return err
			}
		}
		return tx.Put(store.History, store.SeqKey(1), withoutDigest(t, removed, "removed", "base"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}

	up, err := store.Open(p, store.Options{})
	if err != nil {
		t.Fatalf("open a version 3 store whose base directory %s is gone: %v", gone, err)
	}
	defer up.Close()
	c, err := bases.Read(kept)
	if err != nil {
		t.Fatal(err)
	}
	err = up.View(func(tx *store.Tx) error {
		for _, name := range []string{"a1", "a2"} {
			if raw, _ := tx.Get(store.Resources, name); !bytes.Equal(raw, want[name]) {
				t.Errorf("record %s after the upgrade:\n%s\nwant:\n%s", name, raw, want[name])
			}
		}
		if raw, _ := tx.Get(store.History, store.SeqKey(1)); !bytes.Equal(raw, removed) {
			t.Errorf("history entry after the upgrade:\n%s\nwant:\n%s", raw, removed)
		}
		list, err := bases.List(tx)
		if err != nil {
			return err
		}
		if len(list) != 1 || list[0].Digest != c.Digest || list[0].Name != "file" || list[0].Source != kept {
			t.Errorf("stored bases: %+v; want file@%s alone, from %s", list, bases.Short(c.Digest), kept)
		}
		if _, err := bases.Get(tx, "file", c.Digest); err != nil {
			t.Errorf("the stored files: %v", err)
		}
		r, err := NewCatalog(tx).Get("b1")
		if err != nil {
			return err
		}
		if r.Base.Digest != "" {
			t.Errorf("b1, whose directory is gone, has digest %q", r.Base.Digest)
		}
		err = CheckBase(r)
		if !errors.Is(err, ErrBaseMissing) || !strings.Contains(err.Error(), "b1") || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "solar resource upgrade NAME DIR") {
			t.Errorf("CheckBase(b1) = %v; want ErrBaseMissing naming b1, %s and the command", err, gone)
		}
		a1, err := NewCatalog(tx).Get("a1")
		if err != nil {
			return err
		}
		if err := CheckBase(a1); err != nil {
			t.Errorf("CheckBase(a1) = %v", err)
		}
		missing, err := MissingBases(tx)
		if err != nil {
			return err
		}
		if got, _ := json.Marshal(missing); string(got) != `[{"dir":"`+gone+`","resources":["b1"]}]` {
			t.Errorf("MissingBases = %s", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMissingBasesForgetsFixed: a marked resource that has its base since,
// or is gone, is not reported.
func TestMissingBasesForgetsFixed(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "a", realBase(t, "noop"))
		for _, name := range []string{"a", "gone"} {
			if err := bases.MarkMissing(cat.tx, name, "/nowhere"); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err := db.View(func(tx *store.Tx) error {
		list, err := MissingBases(tx)
		if len(list) != 0 {
			t.Errorf("MissingBases = %+v; want none", list)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSetField: a member is replaced or added after "dir", the rest kept
// byte for byte; a path that does not lead to an object is an error.
func TestSetField(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"name":"a","base":{"name":"x","dir":"/d","handler":"shell"},"inputs":{"v": 1.50}}`, `{"name":"a","base":{"name":"x","dir":"/d","digest":"00","handler":"shell"},"inputs":{"v": 1.50}}`},
		{`{"base":{"digest":"11","dir":"/d"}}`, `{"base":{"digest":"00","dir":"/d"}}`},
		{`{"base":{"name":"x"}}`, `{"base":{"name":"x","digest":"00"}}`},
	} {
		got, err := setField([]byte(tt.in), []string{"base"}, "digest", "00")
		if err != nil || string(got) != tt.want {
			t.Errorf("setField(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{`{"name":"a"}`, `{"base":[1]}`, `[]`, `{"base":`} {
		if got, err := setField([]byte(in), []string{"base"}, "digest", "00"); err == nil {
			t.Errorf("setField(%s) = %s; want an error", in, got)
		}
	}
}
