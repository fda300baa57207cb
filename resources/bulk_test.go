package resources

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/solarops/solar/store"
)

// TestBulkReadsSeePendingWrites checks the write buffer of a composition:
// until it ends, the catalog's own reads see its writes (a key, a scan of a
// resource's connections merged with what the store holds, deletions) while
// the transaction does not hold them yet; when it ends, the store holds
// exactly what the reads saw.
func TestBulkReadsSeePendingWrites(t *testing.T) {
	db := openStore(t)
	if err := db.Update(func(tx *store.Tx) error {
		for _, k := range []string{"out/a\x00b", "out/a\x00d", "out/a\x00f", "out/z\x00a"} {
			if err := tx.Put(store.Connections, k, []byte("stored "+k)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	scan := func(c *Catalog, prefix string) []string {
		t.Helper()
		var out []string
		if err := c.forEach(store.Connections, prefix, func(k string, v []byte) error {
			out = append(out, k+"="+string(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if err := db.Update(func(tx *store.Tx) error {
		c := NewCatalog(tx)
		c.startBulk(0)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(c.put(store.Connections, "out/a\x00e", []byte("new e")))
		must(c.put(store.Connections, "out/a\x00c", []byte("new c")))
		must(c.put(store.Connections, "out/a\x00d", []byte("new d")))
		must(c.del(store.Connections, "out/a\x00f"))
		must(c.put(store.Connections, "out/a\x00g", []byte("gone")))
		must(c.del(store.Connections, "out/a\x00g"))
		must(c.put(store.Effective, "r10", []byte("eff")))
		if tx.Has(store.Connections, "out/a\x00c") || tx.Has(store.Effective, "r10") {
			t.Error("a pending write reached the transaction before the bulk write ended")
		}
		if v, err := c.get(store.Effective, "r10"); err != nil || string(v) != "eff" {
			t.Errorf("get of a pending write = %q, %v; want eff", v, err)
		}
		if _, err := c.get(store.Connections, "out/a\x00f"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get of a pending deletion: err = %v, want ErrNotFound", err)
		}
		want := []string{"out/a\x00b=stored out/a\x00b", "out/a\x00c=new c", "out/a\x00d=new d", "out/a\x00e=new e"}
		if got := scan(c, "out/a\x00"); !slices.Equal(got, want) {
			t.Errorf("scan during the bulk write = %q, want %q", got, want)
		}
		// A scan that is not of one group stores what is pending first.
		if got := scan(c, "out/"); len(got) != 5 || !tx.Has(store.Connections, "out/a\x00c") {
			t.Errorf("scan of out/ = %q, want the four of a and z's, with the pending writes stored", got)
		}
		must(c.put(store.Connections, "out/a\x00h", []byte("new h")))
		must(c.endBulk())
		if c.bulk != nil {
			t.Error("the catalog still buffers after endBulk")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	view(t, db, func(c *Catalog) {
		want := []string{"out/a\x00b=stored out/a\x00b", "out/a\x00c=new c", "out/a\x00d=new d", "out/a\x00e=new e", "out/a\x00h=new h"}
		if got := scan(c, "out/a\x00"); !slices.Equal(got, want) {
			t.Errorf("stored after the bulk write: %q, want %q", got, want)
		}
	})
}

// TestCompositionConnectsToStoredResources checks that a composition whose
// entries follow a resource created before it sees that resource's stored
// connections next to its own pending ones (both receivers are downstream
// of it), and that a cycle among its own connections is refused.
func TestCompositionConnectsToStoredResources(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	update(t, db, func(c *Catalog) {
		for _, n := range []string{"a", "b"} {
			if _, err := c.Create(CreateSpec{Name: n, Base: noop, Values: Values{Text: map[string]string{"value": "of " + n}}}, false); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Connect("a", "b", []Mapping{{From: "value", To: "value"}}); err != nil {
			t.Fatal(err)
		}
	})
	comp := &Composition{Path: "c.yaml", Resources: []CompResource{
		{ID: "c", From: realBaseDir("noop"), Input: map[string]any{"value": "a::value"}, Line: 2},
		{ID: "d", From: realBaseDir("noop"), Input: map[string]any{"value": "c::value"}, Line: 5},
	}}
	update(t, db, func(c *Catalog) {
		if _, err := c.CreateComposition("x", comp); err != nil {
			t.Fatal(err)
		}
		down, err := c.Downstream("a")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"b", "c", "d"}; !slices.Equal(down, want) {
			t.Errorf("downstream of a = %v, want %v", down, want)
		}
	})
	view(t, db, func(c *Catalog) {
		rcv, err := c.Receivers("a")
		if err != nil || !slices.Equal(rcv, []string{"b", "c"}) {
			t.Errorf("receivers of a = %v, %v; want [b c]", rcv, err)
		}
		eff, err := c.Effective("d")
		if err != nil || eff["value"] != "of a" {
			t.Errorf("effective value of d = %v, %v; want a's", eff, err)
		}
	})
	// A cycle among the composition's own pending connections is refused.
	cyc := &Composition{Path: "y.yaml", Resources: []CompResource{
		{ID: "p", From: realBaseDir("noop"), Input: map[string]any{"value": "q::value"}, Line: 2},
		{ID: "q", From: realBaseDir("noop"), Input: map[string]any{"value": "p::value"}, Line: 5},
	}}
	err := db.Update(func(tx *store.Tx) error {
		_, err := NewCatalog(tx).CreateComposition("y", cyc)
		return err
	})
	if !errors.Is(err, ErrCycle) {
		t.Errorf("p and q following each other: err = %v, want ErrCycle", err)
	}
}

func realBaseDir(name string) string { return filepath.Join(basesDir, name) }
