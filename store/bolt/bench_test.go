package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/solarops/solar/store/bolt"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/kv/kvtest"
)

// BenchmarkStore runs kvtest.Bench against a bbolt file with fsync on,
// plain and with the journal, for comparison with store/pg.
func BenchmarkStore(b *testing.B) {
	for _, journal := range []bool{false, true} {
		name := "plain"
		if journal {
			name = "journal"
		}
		b.Run(name, func(b *testing.B) {
			kvtest.Bench(b, func(b *testing.B) kv.Backend {
				s, err := bolt.Open(filepath.Join(b.TempDir(), "solar.db"), bolt.Options{
					Buckets: append([]string{"meta"}, kvtest.Buckets...), Meta: "meta", Version: 1, Journal: journal,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}
