package events

import (
	"path/filepath"
	"testing"

	"github.com/solarops/solar/store"
)

// A connection's default rules that would close a cycle of after rules are
// left out (the planner would reject every plan with both actions), the
// others are added and owned by their pair.
func TestAddDefaultsLeavesOutCycles(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat := fakeCatalog{"a": {"run", "update", "remove"}, "b": {"run", "update", "remove"}, "c": {"run"}}
	err = db.Update(func(tx *store.Tx) error {
		owned, skipped, err := AddDefaults(tx, cat, Pair{"a", "b"}, Pair{"b", "c"})
		if err != nil {
			return err
		}
		if len(owned[0]) != 3 || len(owned[1]) != 1 || len(skipped) != 0 {
			t.Fatalf("first connections: owned %q, skipped %q", owned, skipped)
		}
		// b -> a would reverse every rule of a -> b.
		owned, skipped, err = AddDefaults(tx, cat, Pair{"b", "a"})
		if err != nil {
			return err
		}
		if len(owned[0]) != 0 || len(skipped) != 3 {
			t.Fatalf("reverse connection: owned %q, skipped %q", owned, skipped)
		}
		// A pair already covered adds nothing and skips nothing.
		owned, skipped, err = AddDefaults(tx, cat, Pair{"a", "b"})
		if err != nil {
			return err
		}
		if len(owned[0]) != 0 || len(skipped) != 0 {
			t.Fatalf("repeat: owned %q, skipped %q", owned, skipped)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A cycle through several stored rules is found too: with a -> b -> c
// connected, each default rule of c -> a closes a cycle of three actions
// (run, update, and remove in the other direction), while c -> d closes
// none.
func TestAddDefaultsLeavesOutLongCycles(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := []string{"run", "update", "remove"}
	cat := fakeCatalog{"a": all, "b": all, "c": all, "d": all}
	err = db.Update(func(tx *store.Tx) error {
		if _, _, err := AddDefaults(tx, cat, Pair{"a", "b"}, Pair{"b", "c"}); err != nil {
			return err
		}
		owned, skipped, err := AddDefaults(tx, cat, Pair{"c", "a"}, Pair{"c", "d"})
		if err != nil {
			return err
		}
		if len(owned[0]) != 0 || len(skipped) != 3 {
			t.Errorf("c -> a: owned %q, skipped %q; want all three skipped", owned[0], skipped)
		}
		if len(owned[1]) != 3 {
			t.Errorf("c -> d: owned %q, want all three", owned[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
