package pg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/store/kv"
)

// The shared rates (kv.Rates) are rows of the rate table: each rate's
// theoretical arrival time (kv.GCRATake) on the database's clock, so that
// runners on every machine share one rate without comparing their clocks.
// Reserve is one statement, on the lock session's connection in READ
// COMMITTED: INSERT ... ON CONFLICT DO UPDATE locks the rate's row, so
// two sessions taking one rate update it one after the other, each from
// the other's time. The clock is clock_timestamp(), read once per
// statement (the now CTE): the time the row is taken, not the start of a
// transaction.

// reserveSQL is the statement of Reserve: $1 the rate's name, $2 n·every
// and $3 burst·every, in microseconds. It returns the wait in
// microseconds.
func reserveSQL(schema string) string {
	us := "::bigint * interval '1 microsecond'"
	return `WITH now AS (SELECT clock_timestamp() AS t)
		INSERT INTO ` + schema + `.rate AS r (name, tat)
			SELECT $1, now.t + $2` + us + ` FROM now
		ON CONFLICT (name) DO UPDATE SET tat = greatest(r.tat, (SELECT t FROM now)) + $2` + us + `
		RETURNING greatest(0, (extract(epoch FROM r.tat - $3` + us + ` - (SELECT t FROM now)) * 1000000)::bigint)`
}

var _ kv.Rates = StoreLocks{}

// Reserve takes n starts of the rate called name (kv.Rates) in one
// statement on the database's clock.
func (s StoreLocks) Reserve(ctx context.Context, name string, every time.Duration, burst, n int) (time.Duration, error) {
	return s.l.reserve(ctx, name, every, burst, n)
}

func (l *Locks) reserve(ctx context.Context, name string, every time.Duration, burst, n int) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, l.fail("rate "+name, errClosed)
	}
	ctx, cancel := context.WithTimeout(ctx, lockOpTimeout)
	defer cancel()
	var us int64
	err := l.do(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, l.sql.reserve, name, (time.Duration(n) * every).Microseconds(), (time.Duration(burst) * every).Microseconds()).Scan(&us)
	})
	if err != nil {
		return 0, l.fail("rate "+name, err)
	}
	return time.Duration(us) * time.Microsecond, nil
}

var _ kv.Rates = (*Store)(nil)

// Reserve takes n starts of the rate called name (kv.Rates) on a
// connection of the store's pool, for a process without a lock session
// (the fleet's runners): one statement in READ COMMITTED, whatever the
// site's default isolation, as the lock session's.
func (s *Store) Reserve(ctx context.Context, name string, every time.Duration, burst, n int) (time.Duration, error) {
	conn, err := s.acquire(ctx, "rate "+name)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var us int64
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, s.locks.sql.reserve, name, (time.Duration(n) * every).Microseconds(), (time.Duration(burst) * every).Microseconds()).Scan(&us)
	})
	if err != nil {
		return 0, s.fail("rate "+name, err)
	}
	return time.Duration(us) * time.Microsecond, nil
}
