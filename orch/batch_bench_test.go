package orch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// BenchmarkBatch runs 100 package-like tasks on one node at the default
// concurrency (10) and --per-node (1), grouped and not: a package manager call costs 200 ms
// plus 5 ms per package, so the batch script, one call for all its
// members, costs 200 ms + 5 ms × members, and run.sh, one call per task,
// 205 ms. One node runs one task at a time (--per-node 1): alone, the 100
// calls take turns; grouped, the ready tasks go as one batch. The issue wants grouped at least 10x faster (x-faster).
func BenchmarkBatch(b *testing.B) {
	const n = 100
	runSh := "sleep 0.205\n"
	batchSh := `k=$(grep -o '"resource":' "$SOLAR_BATCH" | wc -l)
sleep "$(awk -v k="$k" 'BEGIN { printf "%.3f", 0.2 + 0.005 * k }')"
sed 's/{"resource":"/\n/g' "$SOLAR_BATCH" | tail -n +2 | sed -n 's/^\([^"]*\)".*/\1/p' |
	awk 'BEGIN { printf "{\"members\": {" } { printf "%s\"%s\": {}", sep, $1; sep = ", " } END { print "}}" }' >"$SOLAR_RESULT"
`
	grouped := writeBatchBase(b, runSh, batchSh, "")
	alone := writeBatchBase(b, runSh, batchSh, "")
	// The same base without its batch script: every task runs alone.
	meta := "handler: shell\nactions: {run: run.sh}\ninputs:\n  dir: {schema: str!}\n  token: {schema: str, value: \"\", sensitive: true}\n"
	if err := os.WriteFile(filepath.Join(alone, "meta.yaml"), []byte(meta), 0o644); err != nil {
		b.Fatal(err)
	}
	var withBatch, without time.Duration
	for i := 0; i < b.N; i++ {
		for _, c := range []struct {
			dir string
			d   *time.Duration
		}{{grouped, &withBatch}, {alone, &without}} {
			b.StopTimer()
			path := filepath.Join(b.TempDir(), "solar.db")
			addLocalNode(b, path, "node1")
			path, uid := benchStoreAt(b, path, "independent", n, c.dir, map[string]any{"dir": b.TempDir(), "location": "node1"})
			b.StartTimer()
			start := time.Now()
			r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 10, PerNode: 1}
			_, states, err := r.Run(context.Background(), nil)
			*c.d += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			for id, st := range states {
				if st.Status != StatusSuccess {
					b.Fatalf("%s ended %s: %s", id, st.Status, st.Err)
				}
			}
		}
	}
	b.ReportMetric(float64(withBatch.Milliseconds())/float64(b.N), "batch-ms")
	b.ReportMetric(float64(without.Milliseconds())/float64(b.N), "alone-ms")
	b.ReportMetric(float64(without)/float64(withBatch), "x-faster")
}

// addLocalNode creates node name, reached with the local transport, in the
// store at path.
func addLocalNode(b testing.TB, path, name string) {
	b.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	base, err := resources.LoadBase("../testdata/resources/node")
	if err != nil {
		b.Fatal(err)
	}
	err = db.Update(func(tx *store.Tx) error {
		_, err := resources.NewCatalog(tx).Create(resources.CreateSpec{Name: name, Base: base, Values: resources.Values{Raw: map[string]any{"ip": "127.0.0.1"}}}, false)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}
