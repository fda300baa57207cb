package pg_test

import (
	"testing"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/kv/kvtest"
	"github.com/solarops/solar/store/pg"
)

// BenchmarkStore runs kvtest.Bench against a local server with fsync on,
// reached over its Unix socket.
func BenchmarkStore(b *testing.B) {
	db := pgtest.Shared(b)
	n := 0
	kvtest.Bench(b, func(b *testing.B) kv.Backend {
		n++
		s, err := pg.Open(db+"&schema=bench"+string(rune('a'+n)), opts())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
