package pg_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/kv/kvtest"
	"github.com/solarops/solar/store/pg"
)

var schemas atomic.Int64

// newURL returns the URL of a store no one has used: a fresh schema of a
// database on the test binary's shared server.
func newURL(t *testing.T, db string) string {
	return fmt.Sprintf("%s&schema=s%d", db, schemas.Add(1))
}

func opts() pg.Options {
	return pg.Options{Buckets: append([]string{"meta"}, kvtest.Buckets...), Meta: "meta", Version: 1}
}

func TestConformance(t *testing.T) {
	db := pgtest.Shared(t)
	kvtest.Run(t, func(t *testing.T) func() (kv.Backend, error) {
		u := newURL(t, db)
		return func() (kv.Backend, error) { return pg.Open(u, opts()) }
	})
}

func TestLocksConformance(t *testing.T) {
	db := pgtest.Shared(t)
	const ttl = 2 * time.Second
	kvtest.RunLocks(t, kvtest.LocksFactory{
		New: func(t *testing.T) func() (kv.Locks, error) {
			u := newURL(t, db)
			return func() (kv.Locks, error) { return pg.OpenStoreLocks(u, opts(), pg.LeaseOptions{TTL: ttl}) }
		},
		Crash:        pg.Crash,
		ExpireWithin: ttl + 5*time.Second,
	})
}
