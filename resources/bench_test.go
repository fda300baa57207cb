package resources

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
)

// buildChain stores n noop resources, each connected to the next by
// value->value, and returns the name of the tail.
func buildChain(b *testing.B, db *store.DB, n int) string {
	noop := realBase(b, "noop")
	name := func(i int) string { return fmt.Sprintf("c%06d", i) }
	update(b, db, func(cat *Catalog) {
		for i := range n {
			vals := Values{Text: map[string]string{"value": name(i)}}
			if _, err := cat.Create(CreateSpec{Name: name(i), Base: noop, Values: vals}, false); err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				continue
			}
			if _, err := cat.Connect(name(i-1), name(i), []Mapping{{From: "value", To: "value"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	return name(n - 1)
}

// BenchmarkEffectiveChain measures the effective values of the tail of a
// chain with a cold catalog, as every command that reads a resource starts
// with one: each op walks the whole chain back to its head.
func BenchmarkEffectiveChain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			db := openStore(b)
			tail := buildChain(b, db, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := db.View(func(tx *store.Tx) error {
					eff, err := NewCatalog(tx).Effective(tail)
					if err != nil {
						return err
					}
					if eff["value"] != "c000000" {
						b.Fatalf("tail value = %v, want the head's", eff["value"])
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildChain measures creating and connecting a chain link by link
// in one transaction, as a composition does.
func BenchmarkBuildChain(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db := openStore(b)
				b.StartTimer()
				buildChain(b, db, n)
			}
		})
	}
}

// BenchmarkCreateManyInputs loads a base with n inputs and creates a
// resource from it, with every value given: linear in n (200,000 inputs
// used to take over 30 s, searching the inputs once per input).
func BenchmarkCreateManyInputs(b *testing.B) {
	for _, n := range []int{20000, 200000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			var meta strings.Builder
			meta.WriteString("handler: noop\ninputs:\n")
			text := make(map[string]string, n)
			for i := range n {
				fmt.Fprintf(&meta, "  i%d: {schema: str, value: v}\n", i)
				text[fmt.Sprintf("i%d", i)] = "w"
			}
			if err := os.WriteFile(filepath.Join(dir, "meta.yaml"), []byte(meta.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				base, err := LoadBase(dir)
				if err != nil {
					b.Fatal(err)
				}
				db := openStore(b)
				update(b, db, func(cat *Catalog) {
					if _, err := cat.Create(CreateSpec{Name: "x", Base: base, Values: Values{Text: text}}, false); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}

// BenchmarkCompositionManyInputs loads and creates a composition of one
// resource whose entry gives all n inputs of its base: linear in n (yaml.v3
// checks the keys of a mapping it decodes pairwise, so an entry's input
// mapping of 200,000 keys took over three minutes).
func BenchmarkCompositionManyInputs(b *testing.B) {
	for _, n := range []int{20000, 200000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			var meta, comp strings.Builder
			meta.WriteString("handler: noop\ninputs:\n")
			comp.WriteString("resources:\n  - id: x\n    from: base\n    input:\n")
			for i := range n {
				fmt.Fprintf(&meta, "  i%d: {schema: str, value: v}\n", i)
				fmt.Fprintf(&comp, "      i%d: w\n", i)
			}
			writeFiles(b, dir, map[string]string{"base/meta.yaml": meta.String(), "c.yaml": comp.String()})
			for b.Loop() {
				c, err := LoadComposition(filepath.Join(dir, "c.yaml"), os.Getenv)
				if err != nil {
					b.Fatal(err)
				}
				db := openStore(b)
				update(b, db, func(cat *Catalog) {
					if _, err := cat.CreateComposition("c", c); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}
