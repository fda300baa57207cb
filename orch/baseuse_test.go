package orch

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// TestPruneBases: prune keeps a base that a resource is made of, one that
// a task of a plan is pinned to and one that a committed removal keeps in
// history (revert recreates the resource), and removes the others; a dry
// run removes nothing.
func TestPruneBases(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(tx *store.Tx, name string) string {
		c := bases.New([]bases.File{{Path: "meta.yaml", Data: []byte("handler: noop\n# " + name + "\n")}})
		if err := bases.Put(tx, c, bases.Info{Name: name}); err != nil {
			t.Fatal(err)
		}
		return c.Digest
	}
	var pinned, kept, unused, replaced string
	err = db.Update(func(tx *store.Tx) error {
		b, err := resources.LoadBase(filepath.Join("..", "testdata", "resources", "noop"))
		if err != nil {
			return err
		}
		if _, err := resources.NewCatalog(tx).Create(resources.CreateSpec{Name: "r", Base: b}, false); err != nil {
			return err
		}
		pinned, kept, unused, replaced = put(tx, "pinned"), put(tx, "kept"), put(tx, "unused"), put(tx, "replaced")
		// A staged upgrade away from "replaced": discarding it puts that
		// base back, so it stays.
		up := fmt.Sprintf(`{"key":"r.update","resource":"r","action":"update","seq":9,"tags":{},"diff":[{"op":"change","key":".","file":true,"old":"replaced@%s","new":"noop@x"}],"cause":"upgrade"}`, replaced)
		if err := tx.Put(store.Staged, "r.update", []byte(up)); err != nil {
			return err
		}
		if err := savePins(tx, "7", map[string]*Pin{"x.run": {Base: BaseRef{Name: "pinned", Digest: pinned}}, "y.run": {Base: BaseRef{Name: "pinned", Digest: pinned}}}); err != nil {
			return err
		}
		h, _ := json.Marshal(map[string]any{"uid": "3", "key": "gone.remove", "resource": "gone", "action": "remove",
			"removed": map[string]any{"name": "gone", "base": map[string]any{"name": "kept", "digest": kept}, "inputs": map[string]any{}}})
		return tx.Put(store.History, store.SeqKey(3), h)
	})
	if err != nil {
		t.Fatal(err)
	}
	prune := func(dry bool) []string {
		var names []string
		fn := db.Update
		if dry {
			fn = db.View
		}
		if err := fn(func(tx *store.Tx) error {
			gone, err := PruneBases(tx, dry)
			for _, in := range gone {
				names = append(names, in.Name)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return names
	}
	if got := prune(true); !slices.Equal(got, []string{"unused"}) {
		t.Errorf("dry run: %q, want [unused]", got)
	}
	var use *BaseUse
	if err := db.View(func(tx *store.Tx) (err error) { use, err = BaseUsers(tx); return err }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(use.Plans[pinned], []string{"7"}) || !slices.Equal(use.History[kept], []string{"3"}) || use.Used(unused) ||
		!slices.Equal(use.Resources[replaced], []string{"r"}) {
		t.Errorf("users: %+v", use)
	}
	if got := prune(false); !slices.Equal(got, []string{"unused"}) {
		t.Errorf("prune: %q, want [unused]", got)
	}
	if got := prune(false); len(got) != 0 {
		t.Errorf("prune again: %q, want nothing", got)
	}
	if err := db.View(func(tx *store.Tx) error {
		list, err := bases.List(tx)
		var names []string
		for _, in := range list {
			names = append(names, in.Name)
		}
		if !slices.Equal(names, []string{"kept", "noop", "pinned", "replaced"}) {
			t.Errorf("left: %q", names)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
