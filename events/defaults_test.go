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
