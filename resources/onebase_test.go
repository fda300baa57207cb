package resources

import (
	"os"
	"testing"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/store"
)

// TestCompositionStoresBaseOnce: a thousand resources of one base store
// its files once, and every resource names them by digest.
func TestCompositionStoresBaseOnce(t *testing.T) {
	const n = 1000
	db := openStore(t)
	c, err := LoadComposition(oneBaseComposition(t, n), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	update(t, db, func(cat *Catalog) {
		if _, err := cat.CreateComposition("c", c); err != nil {
			t.Fatal(err)
		}
	})
	err = db.View(func(tx *store.Tx) error {
		list, err := bases.List(tx)
		if err != nil {
			return err
		}
		if len(list) != 1 {
			t.Fatalf("%d bases stored, want 1", len(list))
		}
		contents := 0
		if err := tx.ForEach(store.Bases, "content/", func(string, []byte) error { contents++; return nil }); err != nil {
			return err
		}
		if contents != 1 {
			t.Errorf("%d content records, want 1", contents)
		}
		rs, err := NewCatalog(tx).List(nil)
		if err != nil {
			return err
		}
		if len(rs) != n {
			t.Fatalf("%d resources", len(rs))
		}
		for _, r := range rs {
			if r.Base.Digest != list[0].Digest {
				t.Fatalf("%s: digest %q, want %s", r.Name, r.Base.Digest, list[0].Digest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
