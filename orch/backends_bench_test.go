package orch

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/solarops/solar/internal/pgtest"
)

// BenchmarkBackends runs the team store's speed targets on a local
// PostgreSQL (internal/pgtest: Unix socket, fsync on) beside the same
// work on bbolt: ch process of 10,000 staged entries with 30,000 rules
// (< 1.5 s), run-once of a 1,000-task noop chain (< 3 s), and a
// 1,000-task trivial shell chain (within 2x of bbolt).
func BenchmarkBackends(b *testing.B) {
	srv, err := pgtest.StartServer()
	if err != nil {
		pgtest.SkipOrFail(b, err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	dbs := 0
	backends := []struct {
		name string
		loc  func(b *testing.B) string
	}{
		{"bbolt", func(b *testing.B) string { return filepath.Join(b.TempDir(), "solar.db") }},
		{"postgres", func(b *testing.B) string {
			dbs++
			u, err := srv.NewDatabase(fmt.Sprintf("bench%d", dbs))
			if err != nil {
				b.Fatal(err)
			}
			return u
		}},
	}
	for _, be := range backends {
		b.Run(be.name+"/process/n=10000", func(b *testing.B) {
			benchProcess(b, processStoreAt(b, be.loc(b), 10000), 10000)
		})
		b.Run(be.name+"/run-once-noop/chain/n=1000", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path, uid := benchStoreAt(b, be.loc(b), "chain", 1000, "../testdata/resources/noop", nil)
				b.StartTimer()
				runBench(b, path, uid, 1000)
			}
		})
		b.Run(be.name+"/shell-chain/minimal/n=1000", func(b *testing.B) {
			dir, err := filepath.Abs("testdata/benchbase")
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path, uid := benchStoreAt(b, be.loc(b), "chain", 1000, dir, map[string]any{"dir": b.TempDir()})
				b.StartTimer()
				runBench(b, path, uid, 1000)
			}
		})
	}
}
