package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version written into every store. Bump it when
// a bucket's encoding changes incompatibly.
const SchemaVersion = 1

// Bucket names. Each domain package owns the encoding of its own bucket.
const (
	Resources   = "resources"   // resource name -> resources.Record
	Connections = "connections" // receiver\x00emitter -> resources.Connection
	Events      = "events"      // seq -> events rule text
	Staged      = "staged"      // resource.action -> staging.Entry
	StagedTags  = "staged_tags" // tag\x00key -> "" (index for --tag selections)
	History     = "history"     // uid -> staging.HistoryEntry
	Committed   = "committed"   // resource name -> staging.Snapshot
	Plans       = "plans"       // uid/... -> plan graph and task records
	Refreshes   = "refreshes"   // resource.action -> pending refresh
	Effective   = "effective"   // resource name -> its effective inputs (a cache kept by resources)
	HostKeys    = "host_keys"   // node name -> nodes.Trusted (the host key trusted for it)
	meta        = "meta"
)

var allBuckets = []string{Resources, Connections, Events, Staged, StagedTags, History, Committed, Plans, Refreshes, Effective, HostKeys, meta}

// Errors returned by Open and by transactions.
var (
	// ErrLocked means another solar process holds the store and did not
	// release it within the wait time.
	ErrLocked = errors.New("store is in use by another solar process")
	// ErrSchema means the file was written by an incompatible solar.
	ErrSchema = errors.New("store schema version is not supported")
	// ErrNotFound is returned by Tx.Get for a missing key.
	ErrNotFound = errors.New("not found")
	// ErrReadOnly is returned by writes inside a View transaction.
	ErrReadOnly = errors.New("write in a read-only transaction")
)

// DefaultLockWait is how long Open waits for another process to release the
// file before failing with ErrLocked.
const DefaultLockWait = 5 * time.Second

// DB is an open store.
type DB struct {
	bolt *bolt.DB
	path string
}

// Options tune Open.
type Options struct {
	// LockWait bounds the wait for another process's lock; zero means
	// DefaultLockWait.
	LockWait time.Duration
	// NoSync skips fsync on commit. Only benchmarks and throwaway stores use
	// it: a crash may then lose the last transactions.
	NoSync bool
	// ReadOnly opens for reading only, under a shared lock: Update fails,
	// and a missing file is ErrNoStore rather than a new store.
	ReadOnly bool
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

// Open opens (creating if needed, mode 0600) the store at path. With
// Options.ReadOnly it takes a shared lock instead, so readers do not wait
// for each other, and works on a read-only file system.
func Open(path string, opts Options) (db *DB, err error) {
	wait := opts.LockWait
	if wait == 0 {
		wait = DefaultLockWait
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", ErrNoStore, path)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	if err := checkSize(path); err != nil {
		return nil, named(path, err)
	}
	defer guard(path, debug.SetPanicOnFault(true), &err)
	b, err := openBolt(path, wait, opts)
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("%w (%s); wait for it to finish and try again", ErrLocked, path)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
			return nil, &DamagedError{Path: path, Detail: err.Error()}
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db = &DB{bolt: b, path: path}
	if !opts.ReadOnly {
		tighten(path)
	}
	if err := db.init(); err != nil {
		_ = b.Close()
		if errors.Is(err, errNeedsWrite) {
			// An older store lacks a bucket: add it, then read.
			rw := opts
			rw.ReadOnly = false
			return Open(path, rw)
		}
		return nil, named(path, err)
	}
	return db, nil
}

// ErrNoStore means a read-only command was pointed at a file that does not
// exist; it does not create one.
var ErrNoStore = errors.New("no store")

// tighten makes an existing store private: it holds secrets. A file of
// another user, or one on a read-only file system, is left as it is.
func tighten(path string) {
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(path, st.Mode().Perm()&0o700)
	}
}

// openBolt opens the file, first without waiting. While it waits for
// another process, it holds a shared lock on a marker file, so a long
// holder (a running plan) knows to let go for a moment; see Waiting. The
// kernel drops that lock when this process ends, however it ends.
func openBolt(path string, wait time.Duration, opts Options) (*bolt.DB, error) {
	// A large initial mmap only reserves address space; it spares big
	// transactions (a 10,000-resource composition) repeated remaps.
	o := &bolt.Options{NoSync: opts.NoSync, NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
		InitialMmapSize: 1 << 28, ReadOnly: opts.ReadOnly}
	o.Timeout = time.Nanosecond // one try
	b, err := bolt.Open(path, 0o600, o)
	if err == nil || !errors.Is(err, berrors.ErrTimeout) {
		return b, err
	}
	if f, err := os.OpenFile(waitingPath(path), os.O_CREATE|os.O_RDONLY|syscall.O_CLOEXEC, 0o600); err == nil {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH) == nil {
			defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		defer f.Close()
	}
	o.Timeout = wait
	return bolt.Open(path, 0o600, o)
}

func waitingPath(path string) string { return path + ".waiting" }

// Waiting reports whether another process is waiting to open the store at
// path. A process that holds the store for long checks it between
// transactions and closes the store for a moment when it is true. A
// waiter that died left no lock behind, so a leftover marker file means
// nothing.
func Waiting(path string) bool {
	f, err := os.OpenFile(waitingPath(path), os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// errNeedsWrite means a read-only open found the buckets incomplete.
var errNeedsWrite = errors.New("store needs its buckets created")

// init creates missing buckets and the schema version. A store that is
// already up to date is only read, so commands that fail or only read leave
// the file byte for byte as it was.
func (db *DB) init() error {
	ready := false
	err := db.bolt.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if tx.Bucket([]byte(name)) == nil {
				return nil
			}
		}
		v := tx.Bucket([]byte(meta)).Get([]byte("schema_version"))
		if v != nil && string(v) != fmt.Sprint(SchemaVersion) {
			return fmt.Errorf("%w: file has version %s, this solar reads version %d", ErrSchema, v, SchemaVersion)
		}
		ready = v != nil
		return nil
	})
	if err != nil || ready {
		return err
	}
	if db.bolt.IsReadOnly() {
		return errNeedsWrite
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		m := tx.Bucket([]byte(meta))
		v := m.Get([]byte("schema_version"))
		if v == nil {
			return m.Put([]byte("schema_version"), []byte(fmt.Sprint(SchemaVersion)))
		}
		if string(v) != fmt.Sprint(SchemaVersion) {
			return fmt.Errorf("%w: file has version %s, this solar reads version %d", ErrSchema, v, SchemaVersion)
		}
		return nil
	})
}

// Path returns the file the store lives in.
func (db *DB) Path() string { return db.path }

// Close releases the file lock.
func (db *DB) Close() error { return db.bolt.Close() }

// Update runs fn in a read-write transaction, committed if fn returns nil and
// rolled back otherwise. A damaged file or record comes back as a
// DamagedError naming the file, never as a panic.
func (db *DB) Update(fn func(*Tx) error) (err error) {
	if db.bolt.IsReadOnly() {
		return ErrReadOnly
	}
	defer guard(db.path, debug.SetPanicOnFault(true), &err)
	return named(db.path, db.bolt.Update(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) }))
}

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(*Tx) error) (err error) {
	defer guard(db.path, debug.SetPanicOnFault(true), &err)
	return named(db.path, db.bolt.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) }))
}

// Check verifies the file's internal consistency (used by tests).
func (db *DB) Check() error {
	return db.bolt.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
}

// Tx is one transaction. Its methods address a top-level bucket by name.
// Values returned by Get are copies and stay valid after the transaction.
type Tx struct {
	tx *bolt.Tx
}

func (t *Tx) bucket(name string) *bolt.Bucket {
	b := t.tx.Bucket([]byte(name))
	if b == nil {
		panic("store: unknown bucket " + name)
	}
	return b
}

// Writable reports whether the transaction may write.
func (t *Tx) Writable() bool { return t.tx.Writable() }

// Get returns a copy of the value at key, or ErrNotFound.
func (t *Tx) Get(bucket, key string) ([]byte, error) {
	v := t.bucket(bucket).Get([]byte(key))
	if v == nil {
		return nil, ErrNotFound
	}
	return bytes.Clone(v), nil
}

// Has reports whether key exists in bucket.
func (t *Tx) Has(bucket, key string) bool {
	return t.bucket(bucket).Get([]byte(key)) != nil
}

// Put stores value at key.
func (t *Tx) Put(bucket, key string, value []byte) error {
	if !t.tx.Writable() {
		return ErrReadOnly
	}
	return t.bucket(bucket).Put([]byte(key), value)
}

// Delete removes key; a missing key is not an error.
func (t *Tx) Delete(bucket, key string) error {
	if !t.tx.Writable() {
		return ErrReadOnly
	}
	return t.bucket(bucket).Delete([]byte(key))
}

// ErrStop may be returned by a ForEach callback to end the iteration early
// without error.
var ErrStop = errors.New("stop iteration")

// ForEach calls fn for every key with the given prefix, in byte order. The
// value slice is only valid during the call. Deleting keys from the bucket
// inside fn is not allowed; collect them and delete afterwards.
func (t *Tx) ForEach(bucket, prefix string, fn func(key string, value []byte) error) error {
	c := t.bucket(bucket).Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if err := fn(string(k), v); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
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
func (t *Tx) Last(bucket, prefix string) (string, []byte, error) {
	c := t.bucket(bucket).Cursor()
	p := []byte(prefix)
	// Seek just past the prefix range, then step back.
	end := append(bytes.Clone(p), 0xff)
	var k, v []byte
	if k, _ = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k != nil && bytes.HasPrefix(k, p) {
		return string(k), bytes.Clone(v), nil
	}
	return "", nil, ErrNotFound
}

// NextSequence returns a new, strictly increasing number for bucket. It is
// used for ordering (staging order, rule order) and survives restarts.
func (t *Tx) NextSequence(bucket string) (uint64, error) {
	if !t.tx.Writable() {
		return 0, ErrReadOnly
	}
	return t.bucket(bucket).NextSequence()
}

// SeqKey renders a sequence number as a fixed-width key that sorts in
// numeric order.
func SeqKey(n uint64) string {
	return fmt.Sprintf("%016x", n)
}
