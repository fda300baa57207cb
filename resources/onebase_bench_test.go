package resources

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneBaseComposition writes a base and a composition of n resources of it
// under a temp dir, and returns the composition's path.
func oneBaseComposition(t testing.TB, n int) string {
	dir := t.TempDir()
	var comp strings.Builder
	comp.WriteString("resources:\n")
	for i := range n {
		fmt.Fprintf(&comp, "  - id: r%05d\n    from: web\n", i)
	}
	writeFiles(t, dir, map[string]string{
		"web/meta.yaml":      "handler: noop\nactions: {run: actions/run.sh}\ninputs:\n  value: {schema: str, value: \"\"}\n",
		"web/actions/run.sh": strings.Repeat("echo run\n", 100),
		"c.yaml":             comp.String(),
	})
	return filepath.Join(dir, "c.yaml")
}

// BenchmarkCompositionOneBase creates a composition of n resources of one
// base in one transaction: the base is read and stored once, whatever n
// (issue 29: 10,000 under 1 s).
func BenchmarkCompositionOneBase(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			path := oneBaseComposition(b, n)
			for b.Loop() {
				b.StopTimer()
				db := openStore(b)
				b.StartTimer()
				c, err := LoadComposition(path, os.Getenv)
				if err != nil {
					b.Fatal(err)
				}
				update(b, db, func(cat *Catalog) {
					if _, err := cat.CreateComposition("c", c); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}
