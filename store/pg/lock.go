package pg

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/store/kv"
)

// errClosed is returned by TryLock and Lock after Close.
var errClosed = errors.New("lock session is closed")

// Locks is a session of its own that holds named locks, shared by every
// process, on every machine, that uses one store (a database and schema):
// session-level PostgreSQL advisory locks. A lock lasts until its unlock,
// Close, or the end of the session, which ends when the process dies,
// however it dies; so a lock never outlives its holder. A lost connection
// loses every lock with it.
type Locks struct {
	fail   func(op string, err error) error
	cfg    *pgx.ConnConfig
	schema string

	mu     sync.Mutex
	conn   *pgx.Conn
	held   map[string]*pgx.Conn // name -> the session holding it
	closed bool
}

// OpenLocks connects a lock session to the store at rawURL, without
// touching its tables: it needs none.
func OpenLocks(rawURL string) (*Locks, error) {
	s, err := parse(rawURL, Options{LockWait: DefaultLockWait})
	if err != nil {
		return nil, err
	}
	l := s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.connect(); err != nil {
		return nil, err
	}
	return l, nil
}

// lockKey hashes a name into the 64-bit key of a PostgreSQL advisory lock,
// apart for each schema and kind of lock.
func lockKey(schema, kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(kind + "\x00" + schema + "\x00" + name))
	return int64(h.Sum64())
}

func (l *Locks) connect() error {
	if l.conn != nil && !l.conn.IsClosed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.cfg.Copy())
	if err != nil {
		return l.fail("lock session", err)
	}
	l.conn, l.held = conn, map[string]*pgx.Conn{}
	return nil
}

// TryLock takes the lock called name if no one holds it. ok is false when
// another session, or another caller of this one, holds it. unlock
// releases it once; later calls do nothing.
func (l *Locks) TryLock(name string) (unlock func() error, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false, l.fail("lock "+name, errClosed)
	}
	if _, held := l.held[name]; held {
		// PostgreSQL would grant it again to the same session.
		return nil, false, nil
	}
	if err := l.connect(); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	key := lockKey(l.schema, "lock", name)
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		return nil, false, l.fail("lock "+name, err)
	}
	if !ok {
		return nil, false, nil
	}
	conn := l.conn
	l.held[name] = conn
	done := false
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if done {
			return nil
		}
		done = true
		if l.held[name] != conn || conn.IsClosed() {
			return nil // its session ended, and the lock with it
		}
		delete(l.held, name)
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
			// The session is in doubt: end it, which frees every lock.
			_ = conn.Close(ctx)
			return l.fail("unlock "+name, err)
		}
		return nil
	}, true, nil
}

// Lock waits for the lock called name until it is free or ctx is done;
// then the error wraps kv.ErrLocked and ctx's error.
func (l *Locks) Lock(ctx context.Context, name string) (unlock func() error, err error) {
	pause := 10 * time.Millisecond
	for {
		unlock, ok, err := l.TryLock(name)
		if err != nil || ok {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, l.fail("lock "+name, fmt.Errorf("%w: %w", kv.ErrLocked, ctx.Err()))
		case <-time.After(pause):
		}
		pause = min(pause*2, 500*time.Millisecond)
	}
}

// Close ends the session, which releases every lock it holds.
func (l *Locks) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var err error
	if l.conn != nil {
		// The server frees a closed session's locks only once it notices
		// the disconnect; freed here, they are free when Close returns, for
		// the next runner of the plan to take at once.
		if len(l.held) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = l.conn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
			cancel()
		}
		err = l.conn.Close(context.Background())
		l.conn = nil
	}
	l.held = nil
	return err
}

// TryLock takes a lock of the store's lock session (see Locks), which
// connects on first use.
func (s *Store) TryLock(name string) (unlock func() error, ok bool, err error) {
	return s.locks.TryLock(name)
}

// Lock waits for a lock of the store's lock session (see Locks.Lock).
func (s *Store) Lock(ctx context.Context, name string) (unlock func() error, err error) {
	return s.locks.Lock(ctx, name)
}

// LockHeld reports whether any session, this process's included, holds the
// lock called name (TryLock, Locks). It asks pg_locks, outside the
// transaction's snapshot: the answer is of the moment.
func (t *tx) LockHeld(name string) (bool, error) {
	key := uint64(lockKey(t.s.loc.schema, "lock", name))
	var held bool
	err := t.read(func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		return rows.Scan(&held)
	}, `SELECT EXISTS (SELECT 1 FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1::bigint::oid AND objid = $2::bigint::oid)`, int64(key>>32), int64(key&0xffffffff))
	if err != nil {
		return false, t.failed("lock held", err)
	}
	return held, nil
}
