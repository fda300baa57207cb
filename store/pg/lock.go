package pg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/store/kv"
)

// errClosed is returned by TryLock and Lock on a closed Store.
var errClosed = errors.New("store is closed")

// TryLock takes the lock called name, shared by every process, on every
// machine, that uses this store's schema, if no one holds it: a
// session-level PostgreSQL advisory lock, held by a connection of the Store
// of its own. It lasts until unlock, Close, or the end of that session,
// which ends when the process dies, however it dies; so a lock never
// outlives its holder. A lost connection loses the locks with it.
//
// ok is false when another session, or another caller on this Store, holds
// it. unlock releases it once; later calls do nothing.
func (s *Store) TryLock(name string) (unlock func() error, ok bool, err error) {
	l := &s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false, s.fail("lock "+name, errClosed)
	}
	if _, held := l.held[name]; held {
		// PostgreSQL would grant it again to the same session.
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.LockWait+connectTimeout)
	defer cancel()
	if l.conn == nil || l.conn.IsClosed() {
		conn, err := pgx.ConnectConfig(ctx, s.cfg.ConnConfig.Copy())
		if err != nil {
			return nil, false, s.fail("lock "+name, err)
		}
		l.conn, l.held = conn, map[string]*pgx.Conn{}
	}
	key := s.lockKey("lock", name)
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		return nil, false, s.fail("lock "+name, err)
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
			return s.fail("unlock "+name, err)
		}
		return nil
	}, true, nil
}

// Lock waits for the lock called name (see TryLock) until it is free or ctx
// is done; then the error wraps kv.ErrLocked and ctx's error.
func (s *Store) Lock(ctx context.Context, name string) (unlock func() error, err error) {
	pause := 10 * time.Millisecond
	for {
		unlock, ok, err := s.TryLock(name)
		if err != nil || ok {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, s.fail("lock "+name, fmt.Errorf("%w: %w", kv.ErrLocked, ctx.Err()))
		case <-time.After(pause):
		}
		pause = min(pause*2, 500*time.Millisecond)
	}
}
