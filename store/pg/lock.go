package pg

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/store/kv"
)

// errClosed is returned by TryLock and Lock after Close.
var errClosed = errors.New("lock session is closed")

// Locks holds named locks, shared by every process, on every machine, that
// uses one store (a database and schema), as leases (lease.go): rows of
// the store's lease table that expire on the database's clock unless
// their holder renews them. A lock lasts until its unlock, Close, or its
// expiry; the end of a database session (a server restart, an idle
// timeout, a pooler, a network blip) ends none. A Locks renews all its
// leases every half second from a goroutine of its own, on a connection of
// its own that it makes again when it breaks; if it cannot renew them
// before its deadline (LeaseOptions), or finds one taken, it has lost
// them: Lost is closed, Err says why, and it takes no lock again. What its
// process did under them must stop before they expire (Reserve).
type Locks struct {
	fail func(op string, err error) error
	cfg  *pgx.ConnConfig
	sql  leaseSQL
	opts LeaseOptions
	me   holder

	// mu guards the connection and what is held.
	mu      sync.Mutex
	conn    *pgx.Conn
	held    map[string]bool
	closed  bool
	renewer chan struct{}  // closed to stop the renewer and watchdog; nil until started
	stopped sync.WaitGroup // of the renewer and the watchdog

	// state guards the deadline and the loss.
	state    sync.Mutex
	deadline time.Time // monotonic; zero while nothing is held
	since    time.Time // when the last successful renewal was sent
	lastErr  error     // the last failure to renew, cleared by a success
	lost     chan struct{}
	lostErr  error
}

// OpenLocks connects a lock session to the store at rawURL: a store
// opened with opts, whose tables (the lease table among them) it creates
// or upgrades first, like Open.
func OpenLocks(rawURL string, opts Options, lease LeaseOptions) (*Locks, error) {
	s, err := parse(rawURL, opts)
	if err != nil {
		return nil, err
	}
	if s.locks.opts, err = lease.withDefaults(); err != nil {
		return nil, s.fail("lock session", err)
	}
	if err := s.connect(); err != nil {
		return nil, err
	}
	s.pool.Close()
	l := s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lockOpTimeout)
	defer cancel()
	if err := l.connect(ctx); err != nil {
		return nil, l.fail("lock session", err)
	}
	return l, nil
}

// newLocks makes the Locks of a parsed store, with default lease options.
func newLocks(s *Store) *Locks {
	cfg := s.cfg.ConnConfig.Copy()
	// Lease statements are single statements in their own transactions,
	// whatever a site's default isolation is.
	cfg.RuntimeParams["default_transaction_isolation"] = "read committed"
	opts, _ := LeaseOptions{}.withDefaults()
	return &Locks{fail: s.fail, cfg: cfg, sql: newLeaseSQL(s.sql.schema), opts: opts, me: newHolder(),
		held: map[string]bool{}, lost: make(chan struct{})}
}

// lockKey hashes a name into the 64-bit key of a PostgreSQL advisory lock,
// apart for each schema and kind of lock (the layout's, in setup).
func lockKey(schema, kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(kind + "\x00" + schema + "\x00" + name))
	return int64(h.Sum64())
}

// connect makes the connection if there is none, or it broke; l.mu is held.
// Its error is pgx's: the caller names the operation.
func (l *Locks) connect(ctx context.Context) error {
	if l.conn != nil && !l.conn.IsClosed() {
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	l.conn = conn
	return nil
}

// do runs fn on the connection, making it first if needed, and once more
// on a new connection when the old one broke under it (a server restart,
// an idle timeout): every lease statement can run twice. l.mu is held.
func (l *Locks) do(ctx context.Context, fn func(conn *pgx.Conn) error) error {
	for try := 0; ; try++ {
		if err := l.connect(ctx); err != nil {
			return err
		}
		err := fn(l.conn)
		if err == nil || !l.conn.IsClosed() || try > 0 || ctx.Err() != nil {
			return err
		}
	}
}

// TryLock takes the lock called name if no other holder's lease holds it
// (or its holder was a process of this machine that is gone). ok is false
// when another holder, or another caller of this Locks, holds it. unlock
// releases it once; later calls do nothing.
func (l *Locks) TryLock(name string) (unlock func() error, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, false, l.fail("lock "+name, errClosed)
	case l.Err() != nil:
		return nil, false, l.fail("lock "+name, l.Err())
	case l.held[name]:
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockOpTimeout)
	defer cancel()
	sent := time.Now()
	ok, err = l.acquire(ctx, name)
	if err != nil || !ok {
		return nil, false, err
	}
	if len(l.held) == 0 {
		l.extend(sent)
	}
	l.held[name] = true
	l.startRenewer()
	done := false
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if done || !l.held[name] {
			return nil
		}
		done = true
		delete(l.held, name)
		if len(l.held) == 0 {
			l.extend(time.Time{}) // no deadline while nothing is held
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.releaseTimeout())
		defer cancel()
		if err := l.do(ctx, func(conn *pgx.Conn) error { return l.release(ctx, conn, name) }); err != nil {
			// The lease expires on its own.
			return l.fail("unlock "+name, err)
		}
		return nil
	}, true, nil
}

// acquire runs the acquire statement, and takes over from a holder of this
// machine that is gone; l.mu is held.
func (l *Locks) acquire(ctx context.Context, name string) (bool, error) {
	me, ttl := l.me, l.opts.TTL.Milliseconds()
	var (
		got                  bool
		token, host, machine *string
		pid                  *int32
		start                *int64
	)
	err := l.do(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, l.sql.acquire, name, me.token, me.host, me.machine, me.pid, me.start, ttl).
			Scan(&got, &token, &host, &machine, &pid, &start)
	})
	if err != nil {
		return false, l.fail("lock "+name, err)
	}
	if got || token == nil || !gone(*host, *machine, int(*pid), *start) {
		return got, nil
	}
	err = l.do(ctx, func(conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, l.sql.takeOver, name, me.token, me.host, me.machine, me.pid, me.start, ttl, *token)
		got = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, l.fail("lock "+name, err)
	}
	return got, nil
}

// release deletes this holder's leases of names, without waiting for the
// server's WAL flush: the batch is one implicit transaction, to which the
// setting applies.
func (l *Locks) release(ctx context.Context, conn *pgx.Conn, names ...string) error {
	b := &pgx.Batch{}
	b.Queue("SELECT set_config('synchronous_commit', 'off', true)")
	b.Queue(l.sql.release, l.me.token, names)
	return conn.SendBatch(ctx, b).Close()
}

// releaseTimeout bounds a release: briefly once the leases are lost, most
// likely with the store, so that their holder is not held up stopping.
func (l *Locks) releaseTimeout() time.Duration {
	if l.Err() != nil {
		return time.Second
	}
	return lockOpTimeout
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

// Holder returns who holds the lock called name now, if anyone does; a
// holder of this machine that is gone holds nothing.
func (l *Locks) Holder(name string) (h Holder, held bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Holder{}, false, l.fail("lock "+name, errClosed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockOpTimeout)
	defer cancel()
	var (
		machine       string
		pid           int32
		start         int64
		left, silence int64
	)
	err = l.do(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, l.sql.holderOf, name).Scan(&h.Host, &machine, &pid, &start, &left, &silence)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Holder{}, false, nil
	case err != nil:
		return Holder{}, false, l.fail("lock "+name, err)
	case gone(h.Host, machine, int(pid), start):
		return Holder{}, false, nil
	}
	h.PID, h.Left, h.Silent = int(pid), time.Duration(left)*time.Millisecond, time.Duration(silence)*time.Millisecond
	return h, true, nil
}

// Lost is closed once this Locks has lost its leases (Err says why).
func (l *Locks) Lost() <-chan struct{} { return l.lost }

// Err is nil until the leases are lost; then it is a *LeaseLostError.
func (l *Locks) Err() error {
	l.state.Lock()
	defer l.state.Unlock()
	return l.lostErr
}

// extend moves the deadline to a renewal (or first acquire) sent at sent;
// a zero sent means nothing is held, and no deadline.
func (l *Locks) extend(sent time.Time) {
	l.state.Lock()
	defer l.state.Unlock()
	if sent.IsZero() {
		l.deadline = time.Time{}
		return
	}
	l.deadline, l.since, l.lastErr = sent.Add(l.opts.TTL-l.opts.Reserve), sent, nil
}

// lose records the loss once, and closes Lost.
func (l *Locks) lose(taken bool) {
	l.state.Lock()
	defer l.state.Unlock()
	if l.lostErr != nil {
		return
	}
	l.lostErr = &LeaseLostError{Since: l.since, Taken: taken, Err: l.lastErr}
	close(l.lost)
}

// overdue reports whether leases are held past the deadline.
func (l *Locks) overdue(now time.Time) bool {
	l.state.Lock()
	defer l.state.Unlock()
	return !l.deadline.IsZero() && !now.Before(l.deadline)
}

// startRenewer starts the renewer and the watchdog once; l.mu is held.
func (l *Locks) startRenewer() {
	if l.renewer != nil {
		return
	}
	l.renewer = make(chan struct{})
	l.stopped.Add(2)
	go l.renewLoop(l.renewer)
	go l.watchdog(l.renewer)
}

// renewLoop renews the leases every renewEvery until quit is closed or
// they are lost. It waits its turn for the connection behind acquires and
// releases: the watchdog, not it, keeps the deadline.
func (l *Locks) renewLoop(quit <-chan struct{}) {
	defer l.stopped.Done()
	tick := time.NewTicker(renewEvery)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-l.lost:
			return
		case <-tick.C:
		}
		l.mu.Lock()
		taken := !l.closed && l.renewHeld()
		l.mu.Unlock()
		if taken {
			l.lose(true)
			return
		}
	}
}

// watchdog declares the leases lost once they are held past the deadline,
// whatever the renewer is waiting for.
func (l *Locks) watchdog(quit <-chan struct{}) {
	defer l.stopped.Done()
	tick := time.NewTicker(renewEvery / 5)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		if l.overdue(time.Now()) {
			l.lose(false)
			return
		}
	}
}

// renewHeld renews every held lease in one statement; taken reports that
// one of them was found in another holder's hands. l.mu is held.
func (l *Locks) renewHeld() (taken bool) {
	if len(l.held) == 0 {
		return false
	}
	names := slices.Collect(maps.Keys(l.held))
	ctx, cancel := context.WithTimeout(context.Background(), renewTimeout)
	defer cancel()
	l.state.Lock()
	if d := l.deadline; !d.IsZero() {
		// Past the deadline an answer changes nothing.
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	l.state.Unlock()
	sent := time.Now()
	var n int64
	err := l.do(ctx, func(conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, l.sql.renew, l.me.token, l.opts.TTL.Milliseconds(), names)
		n = tag.RowsAffected()
		return err
	})
	switch {
	case err != nil:
		if l.conn != nil && !l.conn.IsClosed() && ctx.Err() != nil {
			// A connection that did not answer in time is dropped: the
			// next renewal makes another.
			_ = l.conn.Close(context.Background())
		}
		l.state.Lock()
		l.lastErr = l.fail("renew leases", err)
		l.state.Unlock()
		return false
	case n < int64(len(names)):
		return true
	}
	l.extend(sent)
	return false
}

// Close releases every lease this Locks holds and ends its session.
func (l *Locks) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	quit := l.renewer
	l.mu.Unlock()
	if quit != nil {
		close(quit)
		l.stopped.Wait()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	var err error
	if len(l.held) > 0 {
		// Released here, they are free when Close returns, for the next
		// runner of the plan to take at once.
		ctx, cancel := context.WithTimeout(context.Background(), l.releaseTimeout())
		b := &pgx.Batch{}
		b.Queue("SELECT set_config('synchronous_commit', 'off', true)")
		b.Queue(l.sql.releaseAll, l.me.token)
		err = l.conn.SendBatch(ctx, b).Close()
		cancel()
	}
	l.held = nil
	if cerr := l.conn.Close(context.Background()); err == nil {
		err = cerr
	}
	l.conn = nil
	if err != nil {
		return l.fail("release locks", err)
	}
	return nil
}

// TryLock takes a lock of the store's own lock session (see Locks), which
// connects on first use.
func (s *Store) TryLock(name string) (unlock func() error, ok bool, err error) {
	return s.locks.TryLock(name)
}

// Lock waits for a lock of the store's lock session (see Locks.Lock).
func (s *Store) Lock(ctx context.Context, name string) (unlock func() error, err error) {
	return s.locks.Lock(ctx, name)
}

// LockHeld reports whether any holder, this process included, holds the
// lock called name (TryLock, Locks): a lease not expired on the database's
// clock, whose holder is not a process of this machine that is gone.
func (t *tx) LockHeld(name string) (bool, error) {
	var (
		found   bool
		host    string
		machine string
		pid     int32
		start   int64
	)
	err := t.read(func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		found = true
		return rows.Scan(&host, &machine, &pid, &start)
	}, t.s.locks.sql.held, name)
	if err != nil {
		return false, t.failed("lock held", err)
	}
	return found && !gone(host, machine, int(pid), start), nil
}
