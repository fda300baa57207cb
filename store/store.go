package store

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/solarops/solar/store/bolt"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

// SchemaVersion is the layout version written into every store. Bump it when
// a bucket's encoding changes incompatibly, with the upgrade of an older
// store (upgrade.go), which opening it read-write runs in place.
const SchemaVersion = 4

// Bucket names. Each domain package owns the encoding of its own bucket.
const (
	Resources   = "resources"   // resource name -> resources.Record
	Connections = "connections" // receiver\x00emitter -> resources.Connection
	Events      = "events"      // r/seq -> events rule text, u/resource\x00other -> seqs (package events)
	Staged      = "staged"      // resource.action -> staging.Entry
	StagedTags  = "staged_tags" // tag\x00key -> "" (index for --tag selections)
	History     = "history"     // uid -> staging.HistoryEntry
	Committed   = "committed"   // resource name -> staging.Snapshot
	Plans       = "plans"       // uid/... -> plan graph and task records
	Refreshes   = "refreshes"   // resource.action -> pending refresh
	Effective   = "effective"   // resource name -> its effective inputs (a cache kept by resources)
	HostKeys    = "host_keys"   // node name -> nodes.Trusted (the host key trusted for it)
	Bases       = "bases"       // content/<digest> -> a base's files, info/<digest> -> bases.Info, missing/<resource> -> directory
	meta        = "meta"
)

// Buckets lists every bucket, for backends that create them.
var Buckets = []string{Resources, Connections, Events, Staged, StagedTags, History, Committed, Plans, Refreshes, Effective, HostKeys, Bases, meta}

// MetaBucket holds the schema version ("schema_version").
const MetaBucket = meta

// Errors returned by Open and by transactions, whatever the backend.
var (
	ErrLocked   = kv.ErrLocked
	ErrSchema   = kv.ErrSchema
	ErrNotFound = kv.ErrNotFound
	ErrReadOnly = kv.ErrReadOnly
	ErrNoStore  = kv.ErrNoStore
	ErrStop     = kv.ErrStop
	ErrDamaged  = kv.ErrDamaged
	// ErrBadLocation is a location (a URL) that cannot be used as given.
	ErrBadLocation = kv.ErrBadLocation
)

// DamagedError is a damaged store, named by its location.
type DamagedError = kv.DamagedError

// Damagedf returns an error wrapping ErrDamaged that names the damaged
// record. A transaction adds the store's location to it.
func Damagedf(format string, args ...any) error { return kv.Damagedf(format, args...) }

// DefaultLockWait is how long Open waits for another process to release the
// store before failing with ErrLocked.
const DefaultLockWait = bolt.DefaultLockWait

// DB is an open store.
type DB struct {
	be       kv.Backend
	location string // fit to print
	kind     string
	created  bool
	exposed  fs.FileMode
}

// Options tune Open.
type Options struct {
	// LockWait bounds the wait for another process's lock; zero means
	// DefaultLockWait.
	LockWait time.Duration
	// NoSync skips fsync on commit. Only benchmarks and throwaway stores use
	// it: a crash may then lose the last transactions.
	NoSync bool
	// ReadOnly opens for reading only: Update fails, and a missing store is
	// ErrNoStore rather than a new store.
	ReadOnly bool
	// Journal asks for the cheapest durable commit the backend has, for a
	// process that commits many small transactions (the runner). The bbolt
	// backend then appends each commit to a journal, fsynced once.
	Journal bool
}

// Path resolves the store location: the explicit flag value, else $SOLAR_DB,
// else $XDG_STATE_HOME/solar/solar.db, else ~/.local/state/solar/solar.db.
func Path(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := getenv("SOLAR_DB"); p != "" {
		return p, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "solar", "solar.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot locate the store: set --db or SOLAR_DB: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "solar", "solar.db"), nil
}

// IsURL reports whether a store location names a database server rather
// than a bbolt file.
func IsURL(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// Redact returns location fit to print: a URL's password is replaced, and
// of a location CheckLocation refuses only its scheme is left.
func Redact(location string) string {
	switch {
	case IsURL(location):
		return pg.Redact(location)
	case CheckLocation(location) != nil:
		return shown(location)
	}
	return location
}

// Open opens the store at location: a bbolt file (created if needed, mode
// 0600), the default, or a PostgreSQL schema for a postgres:// URL
// (store/pg; Options.Journal and NoSync do not apply there). A location
// CheckLocation refuses is an error wrapping ErrBadLocation.
func Open(location string, opts Options) (*DB, error) {
	if err := CheckLocation(location); err != nil {
		return nil, err
	}
	if IsURL(location) {
		p, err := pg.Open(location, pg.Options{
			Buckets: Buckets, Meta: meta, Version: SchemaVersion, Upgrade: upgrade,
			LockWait: opts.LockWait, ReadOnly: opts.ReadOnly,
		})
		if err != nil {
			return nil, err
		}
		return &DB{be: p, location: p.Location(), kind: "postgresql", created: p.Created()}, nil
	}
	b, err := bolt.Open(location, bolt.Options{
		Buckets: Buckets, Meta: meta, Version: SchemaVersion, Upgrade: upgrade,
		LockWait: opts.LockWait, NoSync: opts.NoSync, ReadOnly: opts.ReadOnly, Journal: opts.Journal,
	})
	if err != nil {
		return nil, err
	}
	return &DB{be: b, location: location, kind: "bbolt", created: b.Created(), exposed: b.Exposed()}, nil
}

// Created reports whether Open made a new store (a bbolt file that was
// missing or empty, a PostgreSQL schema without solar's tables): a user
// who mistyped a location learns it from the first write, not later from
// a store that seems to have lost everything.
func (db *DB) Created() bool { return db.created }

// Exposed is the permission mode of a bbolt store file that others may
// read or write and that Open could not make private because the file is
// not this user's (or its file system is read-only); 0 when it is private
// and always for PostgreSQL. A store holds secrets: the caller warns.
func (db *DB) Exposed() fs.FileMode { return db.exposed }

// Kind names the backend: "bbolt" or "postgresql".
func (db *DB) Kind() string { return db.kind }

// Location returns where the store lives, fit to print.
func (db *DB) Location() string { return db.location }

// Path returns where the store lives (a URL without its password).
func (db *DB) Path() string { return db.location }

// Backend returns the backend below the store (tests, store commands).
func (db *DB) Backend() kv.Backend { return db.be }

// Waiting reports whether another process waits for this one to let go of
// the store (backends with one writer at a time, as a bbolt file).
func (db *DB) Waiting() bool {
	w, ok := db.be.(interface{ Waiting() bool })
	return ok && w.Waiting()
}

// Exclusive reports whether one process at a time holds the store (a
// bbolt file's lock), so that what it reads stays true while it holds it.
func (db *DB) Exclusive() bool { return db.kind == "bbolt" }

// Close releases the store.
func (db *DB) Close() error { return db.be.Close() }

// Update runs fn in a read-write transaction, committed if fn returns nil and
// rolled back otherwise. A damaged store or record comes back as a
// DamagedError naming the store, never as a panic.
func (db *DB) Update(fn func(*Tx) error) error {
	return db.be.Update(func(t kv.Tx) error { return fn(&Tx{t: t}) })
}

// UpdateLate is Update that may return before the transaction is durable,
// on a backend that can tell it later (kv.LateSyncer; on others it is
// durable when UpdateLate returns). What it wrote is seen by every later
// transaction at once; durable waits until it is on disk. A runner uses it
// to get the next task ready while its predecessor's commit syncs, and
// starts the task only once durable returns nil.
func (db *DB) UpdateLate(fn func(*Tx) error) (durable func() error, err error) {
	wrap := func(t kv.Tx) error { return fn(&Tx{t: t}) }
	if ls, ok := db.be.(kv.LateSyncer); ok {
		return ls.UpdateLate(wrap)
	}
	return durableNow, db.be.Update(wrap)
}

// durableNow is the durable of a transaction that was durable on return.
func durableNow() error { return nil }

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(*Tx) error) error {
	return db.be.View(func(t kv.Tx) error { return fn(&Tx{t: t}) })
}

// Check verifies the store's internal consistency (used by tests).
func (db *DB) Check() error {
	if c, ok := db.be.(interface{ Check() error }); ok {
		return c.Check()
	}
	return nil
}

// Tx is one transaction. Its methods address a top-level bucket by name.
// Values returned by Get are copies and stay valid after the transaction.
type Tx struct {
	t kv.Tx
}

// Writable reports whether the transaction may write.
func (t *Tx) Writable() bool { return t.t.Writable() }

// Get returns a copy of the value at key, or ErrNotFound.
func (t *Tx) Get(bucket, key string) ([]byte, error) { return t.t.Get(bucket, key) }

// Peek is Get for a caller that decodes the value at once: the bytes may
// be the store's own, valid only until the transaction writes or ends, and
// must not be changed. It spares a copy of every record a run reads.
func (t *Tx) Peek(bucket, key string) ([]byte, error) {
	if p, ok := t.t.(kv.Peeker); ok {
		return p.Peek(bucket, key)
	}
	return t.t.Get(bucket, key)
}

// Has reports whether key exists in bucket.
func (t *Tx) Has(bucket, key string) bool { return t.t.Has(bucket, key) }

// Put stores value at key.
func (t *Tx) Put(bucket, key string, value []byte) error { return t.t.Put(bucket, key, value) }

// Delete removes key; a missing key is not an error.
func (t *Tx) Delete(bucket, key string) error { return t.t.Delete(bucket, key) }

// ForEach calls fn for every key with the given prefix, in byte order. The
// value slice is only valid during the call. Deleting keys from the bucket
// inside fn is not allowed; collect them and delete afterwards. A callback
// returning ErrStop ends the iteration without error.
func (t *Tx) ForEach(bucket, prefix string, fn func(key string, value []byte) error) error {
	return t.t.ForEach(bucket, prefix, fn)
}

// DeletePrefix removes every key with the given prefix.
func (t *Tx) DeletePrefix(bucket, prefix string) error {
	var keys []string
	if err := t.ForEach(bucket, prefix, func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := t.Delete(bucket, k); err != nil {
			return err
		}
	}
	return nil
}

// Last returns the greatest key with the given prefix and its value, or
// ErrNotFound.
func (t *Tx) Last(bucket, prefix string) (string, []byte, error) { return t.t.Last(bucket, prefix) }

// NextSequence returns a new, strictly increasing number for bucket. It is
// used for ordering (staging order, rule order) and survives restarts.
func (t *Tx) NextSequence(bucket string) (uint64, error) { return t.t.NextSequence(bucket) }

// Key names a key of a bucket.
type Key = kv.Key

// Prefetch tells the store that the transaction is about to read keys, so
// that a backend whose reads cost a round trip each (PostgreSQL) fetches
// them at once. It changes nothing that reads return.
func (t *Tx) Prefetch(keys ...Key) error {
	if p, ok := t.t.(interface{ Prefetch(keys ...kv.Key) error }); ok {
		return p.Prefetch(keys...)
	}
	return nil
}

// ClaimHeld reports whether some process holds the claim called name
// (Locks.TryClaim); known is false when the backend cannot tell (bbolt:
// its claims are granted to all, its processes share a machine, and the
// pid a runner records tells).
func (t *Tx) ClaimHeld(name string) (held, known bool) {
	l, ok := t.t.(interface {
		ClaimHeld(name string) (bool, error)
	})
	if !ok {
		return false, false
	}
	held, err := l.ClaimHeld(name)
	return held, err == nil
}

// SeqKey renders a sequence number as a fixed-width key that sorts in
// numeric order.
func SeqKey(n uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[n&0xf]
		n >>= 4
	}
	return string(b[:])
}

// Locks are the locks between the processes that use one store (kv.Locks):
// resource locks, slots of counted limits and plan claims. On PostgreSQL
// each is a lease (store/pg) that expires on the store's clock unless its
// holder renews it, which Locks does on its own, so that no lock outlives
// its holder for more than the lease time, and none ends with a database
// session while its holder lives. On a bbolt file, whose processes share
// one machine, resource locks are the kernel's (store/bolt), and slots
// and claims are granted to all: see kv.Locks.
type Locks = kv.Locks

// LockHolder describes the holder of a lock: its host and pid, the time
// left until its lease expires and the time since it renewed it, on the
// store's clock.
type LockHolder = kv.LockHolder

// LockOptions say how long a lock's lease lasts (TTL; zero is
// DefaultLeaseTTL) and how long before it expires its holder gives it up
// (Reserve: the time it needs to stop what it does under it). A bbolt
// file's locks, which are not leases, need none.
type LockOptions = pg.LeaseOptions

// DefaultLeaseTTL is the lease time of Locks when LockOptions.TTL is zero.
const DefaultLeaseTTL = pg.DefaultLeaseTTL

// MinLeaseTTL is the shortest lease time a holder that needs reserve
// accepts.
func MinLeaseTTL(reserve time.Duration) time.Duration { return pg.MinLeaseTTL(reserve) }

// ErrLeaseLost is the error of Locks that lost their leases.
var ErrLeaseLost = kv.ErrLeaseLost

// OpenLocks opens a lock client of the store at location: a lock session
// of a PostgreSQL store, or the lock file of a bbolt file
// (<store>.locks/resources, made on first use).
func OpenLocks(location string, opts LockOptions) (Locks, error) {
	if err := CheckLocation(location); err != nil {
		return nil, err
	}
	if !IsURL(location) {
		return bolt.OpenLocks(location), nil
	}
	l, err := pg.OpenStoreLocks(location, pg.Options{
		Buckets: Buckets, Meta: meta, Version: SchemaVersion, Upgrade: upgrade,
	}, opts)
	if err != nil {
		return nil, err
	}
	return l, nil
}
