package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/cmd"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/bolt"
	"github.com/solarops/solar/store/kv"
)

// TestOldStore: a store written by solar of schema version 3 (resources
// naming their base by directory alone) is upgraded when a command opens
// it: the base whose directory is there is stored and shown by digest;
// the resource whose directory is gone keeps none, the open does not fail,
// and every command says so in one line on stderr, naming the resource,
// the directory and the command that re-points it.
func TestOldStore(t *testing.T) {
	work := t.TempDir()
	dbPath := filepath.Join(work, "solar.db")
	kept, gone := filepath.Join(work, "kept"), filepath.Join(work, "gone")
	for _, dir := range []string{kept, gone} {
		if err := os.MkdirAll(filepath.Join(dir, "actions"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meta.yaml"), []byte("handler: noop\nactions: {run: actions/run.sh}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "actions", "run.sh"), []byte("echo "+dir+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The records as this solar writes them, less the digests.
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		env := map[string]string{"SOLAR_DB": dbPath, "NO_COLOR": "1", "HOME": work}
		code := cmd.Main(args, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
		return out.String(), errb.String(), code
	}
	for name, dir := range map[string]string{"a": kept, "b": gone} {
		if _, stderr, code := run("resource", "create", name, dir); code != 0 {
			t.Fatalf("create %s: %s", name, stderr)
		}
	}
	records := map[string][]byte{}
	db, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *store.Tx) error {
		return tx.ForEach(store.Resources, "", func(k string, v []byte) error {
			var rec map[string]any
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			delete(rec["base"].(map[string]any), "digest")
			records[k], err = json.Marshal(rec)
			return err
		})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dbPath); err != nil {
		t.Fatal(err)
	}
	be, err := bolt.Open(dbPath, bolt.Options{Buckets: store.Buckets, Meta: store.MetaBucket, Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Update(func(tx kv.Tx) error {
		for k, v := range records {
			if err := tx.Put(store.Resources, k, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	be.Close()
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}

	warning := "solar: warning: the base of resource b (directory " + gone + " could not be read) is not in the store; re-point each with solar resource upgrade NAME DIR\n"
	for i := range 2 {
		out, stderr, code := run("resource", "show", "a", "--json")
		if code != 0 || stderr != warning {
			t.Fatalf("open %d: exit %d, stderr %q; want 0 and %q", i, code, stderr, warning)
		}
		var v struct {
			BaseDigest string `json:"base_digest"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.BaseDigest) != 64 {
			t.Errorf("a: base_digest %q, %v", v.BaseDigest, err)
		}
	}
	out, _, _ := run("base", "list")
	if strings.Count(out, "\nkept ") != 1 || strings.Contains(out, "gone") {
		t.Errorf("base list:\n%s", out)
	}
	out, _, _ = run("resource", "show", "b")
	if !strings.Contains(out, "digest:   - (not in the store: solar resource upgrade b DIR)") {
		t.Errorf("resource show b:\n%s", out)
	}
}
