package pg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/solarops/solar/store/kv"
)

// LayoutVersion is the version of the tables this package writes (not of
// the records in them, which is Options.Version). A store with an older
// layout is upgraded in place on Open; a newer one is refused.
const LayoutVersion = 4

// layouts[v] brings a schema from layout v-1 to v. %[1]s is the quoted
// schema. Keys are bytea, whose order is memcmp's, as in bbolt; bucket names
// are compared in the "C" collation, byte for byte.
var layouts = []string{
	1: `CREATE TABLE IF NOT EXISTS %[1]s.kv (
		bucket text COLLATE "C" NOT NULL,
		key bytea NOT NULL,
		value bytea NOT NULL,
		PRIMARY KEY (bucket, key));
	CREATE TABLE IF NOT EXISTS %[1]s.seq (
		bucket text COLLATE "C" PRIMARY KEY,
		n bigint NOT NULL)`,
	// The leases of Locks (lease.go). Renewals change no indexed column:
	// with room left in each page they are HOT updates.
	2: `CREATE TABLE IF NOT EXISTS %[1]s.lease (
		name text COLLATE "C" PRIMARY KEY,
		holder text NOT NULL,
		host text NOT NULL,
		machine text NOT NULL,
		pid integer NOT NULL,
		pid_start bigint NOT NULL,
		renewed timestamptz NOT NULL,
		expires timestamptz NOT NULL) WITH (fillfactor = 50)`,
	// The fleet's rows (fleet.go): submitted plans, their tasks, the
	// slots' mutexes, the runners, and the fences' sequence. A lease
	// renewal changes no indexed column: a HOT update, with room left in
	// each page.
	3: `CREATE TABLE IF NOT EXISTS %[1]s.fleet_plan (
		uid text COLLATE "C" PRIMARY KEY,
		epoch bigint NOT NULL,
		live boolean NOT NULL,
		concurrency integer NOT NULL,
		per_node integer NOT NULL,
		by text NOT NULL,
		submitted timestamptz NOT NULL);
	CREATE TABLE IF NOT EXISTS %[1]s.fleet_task (
		uid text COLLATE "C",
		task text COLLATE "C",
		state smallint NOT NULL,
		waiting integer NOT NULL,
		weight integer NOT NULL,
		node text NOT NULL,
		slot_names text[] NOT NULL,
		slot_counts integer[] NOT NULL,
		owner text,
		fence bigint,
		claims integer NOT NULL DEFAULT 0,
		attempts integer NOT NULL DEFAULT 0,
		lease_until timestamptz,
		PRIMARY KEY (uid, task)) WITH (fillfactor = 50);
	CREATE INDEX IF NOT EXISTS fleet_task_ready ON %[1]s.fleet_task (weight DESC, uid, task) WHERE state = 1;
	CREATE INDEX IF NOT EXISTS fleet_task_claimed ON %[1]s.fleet_task (owner) WHERE state = 2;
	CREATE TABLE IF NOT EXISTS %[1]s.fleet_slot (name text COLLATE "C" PRIMARY KEY);
	CREATE TABLE IF NOT EXISTS %[1]s.fleet_runner (
		name text COLLATE "C" PRIMARY KEY,
		host text,
		pid integer,
		version text,
		concurrency integer,
		nodes text,
		started timestamptz,
		heartbeat timestamptz NOT NULL,
		instance text);
	CREATE SEQUENCE IF NOT EXISTS %[1]s.fleet_fence`,
	// The shared rates (rates.go): each one's theoretical arrival time.
	4: `CREATE TABLE IF NOT EXISTS %[1]s.rate (
		name text COLLATE "C" PRIMARY KEY,
		tat timestamptz NOT NULL)`,
}

// DefaultLockWait is how long a transaction waits for a lock another
// session holds (PostgreSQL's lock_timeout) before failing with
// kv.ErrLocked.
const DefaultLockWait = 5 * time.Second

// maxAttempts bounds how often Update runs its function when PostgreSQL
// aborts the transaction for a serialization failure or a deadlock.
const maxAttempts = 10

// connectTimeout bounds a connection attempt when the URL sets none.
const connectTimeout = 10 * time.Second

// Options tune Open.
type Options struct {
	// Buckets are the bucket names transactions may use; Meta is the one
	// holding "schema_version", which must equal Version.
	Buckets []string
	Meta    string
	Version int
	// Upgrade brings the records of a store of an older schema version
	// (from) to Version, in the transaction that then records Version
	// (also when the store is opened read-only, as layouts are). Nil
	// refuses older stores (kv.ErrSchema).
	Upgrade func(tx kv.Tx, from int) error
	// ReadOnly opens for reading only: Update fails with kv.ErrReadOnly,
	// and a database without a store is kv.ErrNoStore rather than a new
	// store. (A store of an older layout is still upgraded.)
	ReadOnly bool
	// LockWait bounds the wait for a lock held by another session inside
	// a transaction; zero means DefaultLockWait.
	LockWait time.Duration
	// ConnectWait bounds how long a new connection is tried again, with a
	// growing pause, while it fails for a reason that passes (the server
	// has no connection slot free, refuses or resets the connection, is
	// starting or stopping, does not answer in time); zero means
	// DefaultConnectWait, a negative one tries once. A failed login or a
	// missing database is not tried again.
	ConnectWait time.Duration
}

// DefaultConnectWait is how long a connection that fails for a passing
// reason is tried again: long enough for another client to give back the
// last connection slot, or for a server to restart.
const DefaultConnectWait = 30 * time.Second

// Store is a solar store in a PostgreSQL schema. It is safe for concurrent
// use; each transaction has a connection of its own from a pool.
type Store struct {
	pool    *pgxpool.Pool
	cfg     *pgxpool.Config
	loc     location
	opts    Options
	buckets map[string]bool
	sql     statements
	locks   *Locks
	// connected is set once a connection succeeded (see acquire).
	connected atomic.Bool
	// created is set when this Open created the store's tables (setup).
	created bool
}

// Open opens the store at rawURL (postgres:// or postgresql://, anything
// pgx accepts, libpq's environment variables included), creating its
// schema and tables on first use. The URL's schema parameter selects the
// PostgreSQL schema (default "solar"), so that several stores share one
// database. Every error names the URL with its password redacted.
func Open(rawURL string, opts Options) (*Store, error) {
	s, err := parse(rawURL, opts)
	if err != nil {
		return nil, err
	}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

// Created reports whether this Open created the store: its schema had no
// solar tables before. Of two processes opening a new schema at once,
// exactly one sees true.
func (s *Store) Created() bool { return s.created }

// connect makes the pool of a parsed Store and readies the store.
func (s *Store) connect() error {
	var err error
	s.pool, err = pgxpool.NewWithConfig(context.Background(), s.cfg)
	if err != nil {
		return s.fail("connect", err)
	}
	if err := s.init(context.Background()); err != nil {
		s.pool.Close()
		return err
	}
	return nil
}

// parse makes a Store, not connected yet, of a URL and options.
func parse(rawURL string, opts Options) (*Store, error) {
	if opts.LockWait == 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.ConnectWait == 0 {
		opts.ConnectWait = DefaultConnectWait
	}
	loc, err := parseLocation(rawURL)
	if err != nil {
		return nil, &Error{Location: loc.display, Op: "open", Err: err, secrets: loc.secrets}
	}
	s := &Store{loc: loc, opts: opts, buckets: map[string]bool{}}
	cfg, err := pgxpool.ParseConfig(loc.conn)
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			err = pe.Unwrap()
		}
		return nil, s.fail("parse URL", fmt.Errorf("%w: %w", kv.ErrBadLocation, err))
	}
	if cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol {
		// pgx would splice every value into the statement's text, where a
		// server that logs statements keeps it, secrets included.
		return nil, s.fail("parse URL", fmt.Errorf("%w: default_query_exec_mode=simple_protocol puts the store's values, secrets among them, into the text of statements, which the server may log: use exec (or leave it out), which sends them as bind parameters", kv.ErrBadLocation))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["lock_timeout"] = strconv.FormatInt(opts.LockWait.Milliseconds(), 10)
	if rp["application_name"] == "" {
		rp["application_name"] = "solar"
	}
	s.cfg = cfg
	for _, b := range opts.Buckets {
		s.buckets[b] = true
	}
	s.sql = newStatements(pgx.Identifier{loc.schema}.Sanitize())
	s.locks = newLocks(s)
	return s, nil
}

// fail wraps err as an Error of this store: one line, the password scrubbed.
// A failure to connect keeps only the reason.
func (s *Store) fail(op string, err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		r := reason{ce: ce}
		if rt := (*retried)(nil); errors.As(err, &rt) {
			r.tried = rt.took
		}
		op, err = "cannot connect", r
	}
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "55P03" {
		err = fmt.Errorf("%w: %w", kv.ErrLocked, err)
	}
	return &Error{Location: s.loc.display, Op: op, Err: err, secrets: s.loc.secrets}
}

// reason is a ConnectError without pgx's prefix, which repeats the user and
// database the URL names.
type reason struct {
	ce    *pgconn.ConnectError
	tried time.Duration // how long it was tried again, if it was
}

func (r reason) Error() string {
	if r.tried > 0 {
		return fmt.Sprintf("%s (tried for %s)", reason{ce: r.ce}.Error(), r.tried)
	}
	err := r.ce.Unwrap()
	if err == nil {
		return r.ce.Error()
	}
	// pgx tries each address (and TLS, then not) and joins the failures:
	// say each different one once.
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		many, ok := e.(interface{ Unwrap() []error })
		if !ok {
			continue
		}
		var parts []string
		for _, p := range many.Unwrap() {
			if m := p.Error(); !slices.Contains(parts, m) {
				parts = append(parts, m)
			}
		}
		return strings.Replace(msg, e.Error(), strings.Join(parts, "; "), 1)
	}
	return msg
}

func (r reason) Unwrap() error { return r.ce }

// Location returns the store's URL, its password redacted.
func (s *Store) Location() string { return s.loc.display }

// Schema returns the PostgreSQL schema the store lives in.
func (s *Store) Schema() string { return s.loc.schema }

// Close releases the pool and the session holding the locks, which
// releases them.
func (s *Store) Close() error {
	err := s.locks.Close()
	s.pool.Close()
	return err
}

func isCode(err error, codes ...string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	for _, c := range codes {
		if pe.Code == c {
			return true
		}
	}
	return false
}

// init checks the layout and the schema version in one query, and creates
// or upgrades the tables when that is needed.
func (s *Store) init(ctx context.Context) error {
	var layout *int32
	var version []byte
	conn, err := s.acquire(ctx, "open")
	if err != nil {
		return err
	}
	err = conn.QueryRow(ctx, s.sql.ready, s.opts.Meta).Scan(&layout, &version)
	conn.Release()
	switch {
	case isCode(err, "42P01", "3F000"): // undefined table, undefined schema
	case err != nil:
		return s.fail("open", err)
	case layout != nil && int(*layout) > LayoutVersion:
		return s.fail("open", s.newerLayout(int(*layout)))
	case layout != nil && int(*layout) == LayoutVersion && version != nil:
		from, err := s.checkVersion(version)
		if err != nil || from == 0 {
			return err
		}
		return s.upgrade()
	}
	return s.setup(ctx)
}

func (s *Store) newerLayout(v int) error {
	return fmt.Errorf("%w: its tables have layout %d, this solar knows layouts up to %d; upgrade solar", kv.ErrSchema, v, LayoutVersion)
}

// checkVersion accepts the stored version v when it is Options.Version
// (from is 0), or older with an Upgrade (from is v).
func (s *Store) checkVersion(v []byte) (from int, err error) {
	n, err := strconv.Atoi(string(v))
	switch {
	case err == nil && n == s.opts.Version:
		return 0, nil
	case err == nil && n >= 1 && n < s.opts.Version && s.opts.Upgrade != nil:
		return n, nil
	}
	return 0, s.fail("open", fmt.Errorf("%w: it has version %s, this solar reads version %d", kv.ErrSchema, v, s.opts.Version))
}

// upgrade brings the records of an older store to Options.Version, and
// records that version, in one transaction; a process that finds another
// one did it first does nothing.
func (s *Store) upgrade() error {
	err := s.retry(func(tx kv.Tx) error {
		v, err := tx.Get(s.opts.Meta, "schema_version")
		if err != nil {
			return err
		}
		from, err := s.checkVersion(v)
		if err != nil || from == 0 {
			return err
		}
		if err := s.opts.Upgrade(tx, from); err != nil {
			return fmt.Errorf("upgrade the store from schema version %d to %d: %w", from, s.opts.Version, err)
		}
		return tx.Put(s.opts.Meta, "schema_version", []byte(strconv.Itoa(s.opts.Version)))
	})
	if e := (*Error)(nil); err != nil && !errors.As(err, &e) {
		return s.fail("open", err)
	}
	return err
}

// setup creates the schema and tables, or upgrades them, in one
// transaction under an advisory lock, so that two first uses do not race.
func (s *Store) setup(ctx context.Context) error {
	conn, err := s.acquire(ctx, "open")
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return s.fail("open", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(s.loc.schema, "layout", "")); err != nil {
		return s.fail("open", err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", s.sql.schema+".solar_layout").Scan(&exists); err != nil {
		return s.fail("open", err)
	}
	if !exists && s.opts.ReadOnly {
		return &Error{Location: s.loc.display, Op: "open", Err: fmt.Errorf("%w at %s", kv.ErrNoStore, s.loc.display), secrets: s.loc.secrets}
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA IF NOT EXISTS %[1]s;
		CREATE TABLE IF NOT EXISTS %[1]s.solar_layout (version integer NOT NULL)`, s.sql.schema)); err != nil {
		return s.fail("create schema", err)
	}
	var layout *int32
	if err := tx.QueryRow(ctx, "SELECT max(version) FROM "+s.sql.schema+".solar_layout").Scan(&layout); err != nil {
		return s.fail("open", err)
	}
	v := 0
	if layout == nil {
		if _, err := tx.Exec(ctx, "INSERT INTO "+s.sql.schema+".solar_layout VALUES (0)"); err != nil {
			return s.fail("create schema", err)
		}
	} else {
		v = int(*layout)
	}
	if v > LayoutVersion {
		return s.fail("open", s.newerLayout(v))
	}
	for ; v < LayoutVersion; v++ {
		if _, err := tx.Exec(ctx, fmt.Sprintf(layouts[v+1], s.sql.schema)); err != nil {
			return s.fail(fmt.Sprintf("upgrade layout to %d", v+1), err)
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE "+s.sql.schema+".solar_layout SET version = $1", v); err != nil {
		return s.fail("open", err)
	}
	var version []byte
	upgrade := false
	err = tx.QueryRow(ctx, s.sql.get, s.opts.Meta, []byte("schema_version")).Scan(&version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := tx.Exec(ctx, s.sql.put1, s.opts.Meta, []byte("schema_version"), []byte(strconv.Itoa(s.opts.Version))); err != nil {
			return s.fail("open", err)
		}
	case err != nil:
		return s.fail("open", err)
	default:
		from, err := s.checkVersion(version)
		if err != nil {
			return err
		}
		upgrade = from != 0
	}
	if err := tx.Commit(ctx); err != nil {
		return s.fail("open", err)
	}
	// Under the layout lock only one of two first uses finds no tables.
	s.created = !exists
	if upgrade {
		return s.upgrade()
	}
	return nil
}

// Update runs fn in one SERIALIZABLE transaction, committed if fn returns
// nil and rolled back otherwise. Writes are buffered and sent at commit, in
// a few statements. When PostgreSQL aborts the transaction for a
// serialization failure or a deadlock (another session wrote what this one
// read), or its connection is lost before the commit is sent (a server
// restart), fn runs again, from the start, in a new transaction, up to 10
// times with a growing, jittered pause: fn must not have effects outside
// the transaction that a second run would repeat wrongly. A connection
// lost during the commit is reported: whether it committed is unknown.
func (s *Store) Update(fn func(kv.Tx) error) error {
	if s.opts.ReadOnly {
		return kv.ErrReadOnly
	}
	return s.retry(fn)
}

// retry runs fn in update's transaction, again while PostgreSQL aborts it
// for a serialization failure or a deadlock, or its connection is lost
// before its commit was sent (a server restart, a session ended by the
// server): nothing of it was committed then, and the next attempt connects
// anew (acquire waits for a server that is coming back).
func (s *Store) retry(fn func(kv.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.update(fn)
		var lost *lostBeforeCommit
		if errors.As(err, &lost) {
			if attempt >= maxAttempts {
				return lost.err
			}
			continue
		}
		if attempt >= maxAttempts || !isCode(err, "40001", "40P01") {
			return err
		}
		pause := time.Duration(1<<min(attempt, 7)) * time.Millisecond
		time.Sleep(pause/2 + rand.N(pause))
	}
}

func (s *Store) update(fn func(kv.Tx) error) error {
	ctx := context.Background()
	conn, err := s.acquire(ctx, "begin")
	if err != nil {
		return err
	}
	defer conn.Release()
	t := newTx(s, ctx, conn.Conn(), true)
	defer t.end()
	err = fn(t)
	if err == nil {
		// fn ignored a failed read (Has cannot report one).
		err = t.err
	}
	if err != nil {
		if conn.Conn().IsClosed() {
			return &lostBeforeCommit{err: err}
		}
		return err
	}
	if err := t.commit(); err != nil {
		return s.fail("commit", err)
	}
	return nil
}

// lostBeforeCommit is the error of a transaction whose connection was lost
// before its commit was sent: it certainly did not commit, and may run
// again.
type lostBeforeCommit struct{ err error }

func (e *lostBeforeCommit) Error() string { return e.err.Error() }
func (e *lostBeforeCommit) Unwrap() error { return e.err }

// View runs fn in a read-only REPEATABLE READ transaction: fn sees one
// snapshot of the store. The transaction ends after View returns: its
// connection rolls back in the background, then goes back to the pool
// (Close waits for it).
func (s *Store) View(fn func(kv.Tx) error) error {
	ctx := context.Background()
	conn, err := s.acquire(ctx, "begin")
	if err != nil {
		return err
	}
	t := newTx(s, ctx, conn.Conn(), false)
	defer func() {
		if t.begin != "" {
			conn.Release() // nothing began on the server
			return
		}
		go func() {
			t.end()
			conn.Release()
		}()
	}()
	if err := fn(t); err != nil {
		return err
	}
	return t.err
}

// Info describes a store, for solar store info.
type Info struct {
	Backend       string           `json:"backend"`
	Location      string           `json:"location"`
	Schema        string           `json:"schema"`
	LayoutVersion int              `json:"layout_version"`
	Keys          map[string]int64 `json:"keys"` // per bucket, every bucket listed
}

// Info counts the keys of every bucket, in one snapshot.
func (s *Store) Info() (Info, error) {
	in := Info{Backend: "postgresql", Location: s.loc.display, Schema: s.loc.schema, Keys: map[string]int64{}}
	for b := range s.buckets {
		in.Keys[b] = 0
	}
	ctx := context.Background()
	conn, err := s.acquire(ctx, "info")
	if err != nil {
		return Info{}, err
	}
	defer conn.Release()
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT version FROM "+s.sql.schema+".solar_layout").Scan(&in.LayoutVersion); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT bucket, count(*) FROM "+s.sql.schema+".kv GROUP BY bucket")
		if err != nil {
			return err
		}
		var b string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&b, &n}, func() error {
			in.Keys[b] = n
			return nil
		})
		return err
	})
	if err != nil {
		return Info{}, s.fail("info", err)
	}
	return in, nil
}
