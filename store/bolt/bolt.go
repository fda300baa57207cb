package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/solarops/solar/store/kv"
)

// DefaultLockWait is how long Open waits for another process to release the
// file before failing with kv.ErrLocked.
const DefaultLockWait = 5 * time.Second

// Options tune Open.
type Options struct {
	// Buckets are created when missing; Meta is the one holding
	// "schema_version", which must equal Version, or be older and then
	// brought to Version by Upgrade.
	Buckets []string
	Meta    string
	Version int
	// Upgrade brings the records of a store of an older schema version
	// (from) to Version, in the transaction that then records Version. A
	// store opened read-only is first opened read-write for it. Nil
	// refuses older stores (kv.ErrSchema).
	Upgrade func(tx kv.Tx, from int) error
	// LockWait bounds the wait for another process's lock; zero means
	// DefaultLockWait.
	LockWait time.Duration
	// NoSync skips fsync on commit. Only benchmarks and throwaway stores use
	// it: a crash may then lose the last transactions.
	NoSync bool
	// ReadOnly opens for reading only, under a shared lock: Update fails,
	// and a missing file is kv.ErrNoStore rather than a new store.
	ReadOnly bool
	// Journal makes Update durable through the journal (journal.go): one
	// fdatasync per commit, folded into the file at checkpoints and on Close.
	Journal bool
}

// Store is an open bbolt file.
type Store struct {
	db   *bbolt.DB
	path string
	opts Options
	jr   *journal // nil unless Options.Journal
	from int      // the schema version found when older than Options.Version, until upgraded
	// created is set when this Open wrote the first records of the file.
	created bool
	// exposed holds the mode of a file others may read that Open could
	// not tighten; 0 when the file is private.
	exposed fs.FileMode
}

// Open opens (creating if needed, mode 0600) the store at path. With
// Options.ReadOnly it takes a shared lock instead, so readers do not wait
// for each other, and works on a read-only file system. A journal left by a
// process that died is folded into the file first.
func Open(path string, opts Options) (s *Store, err error) {
	if opts.LockWait == 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", kv.ErrNoStore, path)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	if err := checkSize(path); err != nil {
		return nil, kv.Named(path, err)
	}
	defer guard(path, debug.SetPanicOnFault(true), &err)
	b, err := openBolt(path, opts)
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("%w (%s); wait for it to finish and try again", kv.ErrLocked, path)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
			return nil, &kv.DamagedError{Path: path, Detail: err.Error()}
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s = &Store{db: b, path: path, opts: opts}
	s.exposed = tighten(path)
	err = s.init()
	if err == nil {
		err = s.openJournal()
	}
	if err == nil && s.from != 0 {
		// After the journal: a dead writer's records are of the old
		// version and must be folded in before the upgrade reads them.
		err = s.upgrade()
	}
	if err != nil {
		_ = b.Close()
		if errors.Is(err, errNeedsWrite) {
			// An older store lacks a bucket, or a dead writer left a
			// journal: bring the file up to date, then read.
			rw := opts
			rw.ReadOnly, rw.Journal = false, false
			w, err := Open(path, rw)
			if err != nil {
				return nil, err
			}
			_ = w.Close()
			return Open(path, opts)
		}
		return nil, kv.Named(path, err)
	}
	return s, nil
}

// tighten makes an existing store private: it holds secrets. Readers do it
// too: a file left 0644 by hand is exposed whoever opens it next. A file
// of another user, or one on a read-only file system, is left as it is,
// and its mode returned for the caller to warn about; 0 means private.
func tighten(path string) fs.FileMode {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return 0
	}
	if os.Chmod(path, st.Mode().Perm()&0o700) != nil {
		return st.Mode().Perm()
	}
	return 0
}

// Created reports whether this Open made the store: the file was missing
// or empty, and now holds a store of Options.Version.
func (s *Store) Created() bool { return s.created }

// Exposed is the permission mode of a store file that others may read or
// write and that Open could not make private (another user's file, a
// read-only file system); 0 when the file is private.
func (s *Store) Exposed() fs.FileMode { return s.exposed }

// openBolt opens the file, first without waiting. While it waits for
// another process, it holds a shared lock on a marker file, so a long
// holder (a running plan) knows to let go for a moment; see Waiting. The
// kernel drops that lock when this process ends, however it ends.
func openBolt(path string, opts Options) (*bbolt.DB, error) {
	// A large initial mmap only reserves address space; it spares big
	// transactions (a 10,000-resource composition) repeated remaps.
	o := &bbolt.Options{NoSync: opts.NoSync, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType,
		InitialMmapSize: 1 << 28, ReadOnly: opts.ReadOnly}
	o.Timeout = time.Nanosecond // one try
	b, err := bbolt.Open(path, 0o600, o)
	if err == nil || !errors.Is(err, berrors.ErrTimeout) {
		return b, err
	}
	if f, err := os.OpenFile(waitingPath(path), os.O_CREATE|os.O_RDONLY|syscall.O_CLOEXEC, 0o600); err == nil {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH) == nil {
			defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		defer f.Close()
	}
	o.Timeout = opts.LockWait
	return bbolt.Open(path, 0o600, o)
}

func waitingPath(path string) string { return path + ".waiting" }

// Waiting reports whether another process is waiting to open the store. A
// process that holds the store for long checks it between transactions and
// closes the store for a moment when it is true. A waiter that died left no
// lock behind, so a leftover marker file means nothing.
func (s *Store) Waiting() bool {
	f, err := os.OpenFile(waitingPath(s.path), os.O_RDONLY|syscall.O_CLOEXEC, 0)
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

// errNeedsWrite means a read-only open found the file needing a write:
// buckets missing, a journal to fold in, or records to upgrade.
var errNeedsWrite = errors.New("store needs a write")

// init creates missing buckets and the schema version, and notes an older
// version to upgrade. A store that is already up to date is only read, so
// commands that fail or only read leave the file byte for byte as it was.
func (s *Store) init() error {
	ready := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		for _, name := range s.opts.Buckets {
			if tx.Bucket([]byte(name)) == nil {
				return nil
			}
		}
		v := tx.Bucket([]byte(s.opts.Meta)).Get([]byte("schema_version"))
		if v == nil {
			return nil
		}
		ready = true
		return s.checkVersion(v)
	})
	if err != nil {
		return err
	}
	if ready && s.from == 0 {
		return nil
	}
	if s.db.IsReadOnly() {
		return errNeedsWrite
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range s.opts.Buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		m := tx.Bucket([]byte(s.opts.Meta))
		v := m.Get([]byte("schema_version"))
		if v == nil {
			s.created = true
			return m.Put([]byte("schema_version"), []byte(strconv.Itoa(s.opts.Version)))
		}
		return s.checkVersion(v)
	})
}

// checkVersion accepts the stored version v when it is Options.Version, or
// older with an Upgrade (noted in s.from).
func (s *Store) checkVersion(v []byte) error {
	n, err := strconv.Atoi(string(v))
	if err == nil && n == s.opts.Version {
		s.from = 0
		return nil
	}
	if err == nil && n >= 1 && n < s.opts.Version && s.opts.Upgrade != nil {
		s.from = n
		return nil
	}
	return fmt.Errorf("%w: file has version %s, this solar reads version %d", kv.ErrSchema, v, s.opts.Version)
}

// upgrade brings the records of an older store to Options.Version, and
// records that version, in one transaction.
func (s *Store) upgrade() error {
	err := s.db.Update(func(btx *bbolt.Tx) error {
		if err := s.opts.Upgrade(&tx{tx: btx}, s.from); err != nil {
			return fmt.Errorf("upgrade the store from schema version %d to %d: %w", s.from, s.opts.Version, err)
		}
		return btx.Bucket([]byte(s.opts.Meta)).Put([]byte("schema_version"), []byte(strconv.Itoa(s.opts.Version)))
	})
	if err == nil {
		s.from = 0
	}
	return err
}

// Path returns the file the store lives in.
func (s *Store) Path() string { return s.path }

// Close folds the journal into the file and releases the file lock.
func (s *Store) Close() error {
	var err error
	if s.jr != nil {
		err = s.closeJournal()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// Update runs fn in a read-write transaction, committed if fn returns nil and
// rolled back otherwise. A damaged file or record comes back as a
// DamagedError naming the file, never as a panic.
func (s *Store) Update(fn func(kv.Tx) error) (err error) {
	if s.db.IsReadOnly() {
		return kv.ErrReadOnly
	}
	defer guard(s.path, debug.SetPanicOnFault(true), &err)
	if s.jr != nil {
		_, err := s.journaled(fn, false)
		return kv.Named(s.path, err)
	}
	return kv.Named(s.path, s.db.Update(func(btx *bbolt.Tx) error { return fn(&tx{tx: btx}) }))
}

// UpdateLate is Update whose journal record is synced later
// (kv.LateSyncer): by durable, or by any transaction after it that is
// synced, or by Close. Without the journal it is Update.
func (s *Store) UpdateLate(fn func(kv.Tx) error) (durable func() error, err error) {
	if s.jr == nil {
		return syncedNow, s.Update(fn)
	}
	if s.db.IsReadOnly() {
		return nil, kv.ErrReadOnly
	}
	defer guard(s.path, debug.SetPanicOnFault(true), &err)
	n, err := s.journaled(fn, true)
	if err != nil {
		return nil, kv.Named(s.path, err)
	}
	j := s.jr
	return func() error { return j.syncTo(n) }, nil
}

// syncedNow is the durable of a transaction durable on return.
func syncedNow() error { return nil }

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(kv.Tx) error) (err error) {
	defer guard(s.path, debug.SetPanicOnFault(true), &err)
	var layers []*overlay
	if s.jr != nil {
		// Before the bbolt transaction: a checkpoint holding the lock
		// may need to remap the file, which waits for open transactions.
		s.jr.mu.RLock()
		defer s.jr.mu.RUnlock()
		if s.jr.pending.Len() > 0 {
			layers = append(layers, &s.jr.pending)
		}
		if s.jr.fold != nil {
			// Done or not, its writes are the file's or on their way.
			layers = append(layers, s.jr.fold.w)
		}
	}
	return kv.Named(s.path, s.db.View(func(btx *bbolt.Tx) error {
		if layers != nil {
			return fn(&overlayTx{base: &tx{tx: btx}, layers: layers})
		}
		return fn(&tx{tx: btx})
	}))
}

// Check verifies the file's internal consistency (used by tests).
func (s *Store) Check() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
}

// SetSchemaVersion overwrites the stored schema version (tests of the
// version check use it).
func (s *Store) SetSchemaVersion(v string) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(s.opts.Meta)).Put([]byte("schema_version"), []byte(v))
	})
}

// tx is a bbolt transaction seen through kv.Tx.
type tx struct {
	tx *bbolt.Tx
	// open holds the buckets this transaction has opened: bbolt finds
	// one by hashing its name, a lookup that cost as much as a read of a
	// small record. The buckets are made once, when the store opens.
	open  [16]openBucket
	nOpen int
}

type openBucket struct {
	name string
	b    *bbolt.Bucket
	c    *bbolt.Cursor // for lookups; made by the first
}

func (t *tx) bucket(name string) *bbolt.Bucket { return t.opened(name).b }

// opened returns the bucket's entry in open, opening it there if there is
// room (else in an entry of its own).
func (t *tx) opened(name string) *openBucket {
	for i := range t.open[:t.nOpen] {
		if t.open[i].name == name {
			return &t.open[i]
		}
	}
	b := t.tx.Bucket(keyBytes(name))
	if b == nil {
		panic("store: unknown bucket " + name)
	}
	b.FillPercent = fillPercent
	if t.nOpen == len(t.open) {
		return &openBucket{name: name, b: b}
	}
	t.open[t.nOpen] = openBucket{name: name, b: b}
	t.nOpen++
	return &t.open[t.nOpen-1]
}

// lookup is bbolt's Bucket.Get through one cursor per bucket: a new
// cursor's path down the tree is a new slice every time (a fifth of
// bbolt's allocations in a 100,000-task run), a cursor sought again
// reuses it. Seeking repositions a cursor, so writes in between are fine.
func (t *tx) lookup(bucket, key string) []byte {
	ob := t.opened(bucket)
	if ob.c == nil {
		ob.c = ob.b.Cursor()
	}
	kb := keyBytes(key)
	k, v := ob.c.Seek(kb)
	if v == nil || !bytes.Equal(k, kb) {
		return nil
	}
	return v
}

// fillPercent is how full bbolt fills a page when it splits a node. Its
// default (half) left the file about twice its data; solar's big writes
// (compositions, checkpoints) put keys in order, where full pages cost
// nothing, and a page that later grows past full is split again anyway.
const fillPercent = 0.9

func (t *tx) Writable() bool { return t.tx.Writable() }

// keyBytes returns the bytes of key without a copy. bbolt only reads a key
// it is given (Put stores a copy of its own), so a transaction that writes
// a million keys is spared a million copies.
func keyBytes(key string) []byte { return unsafe.Slice(unsafe.StringData(key), len(key)) }

func (t *tx) Get(bucket, key string) ([]byte, error) {
	v, err := t.Peek(bucket, key)
	return bytes.Clone(v), err
}

// Peek returns bbolt's own bytes: the file's, mapped, or a node's.
func (t *tx) Peek(bucket, key string) ([]byte, error) {
	v := t.lookup(bucket, key)
	if v == nil {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

func (t *tx) Has(bucket, key string) bool {
	return t.lookup(bucket, key) != nil
}

func (t *tx) Put(bucket, key string, value []byte) error {
	if !t.tx.Writable() {
		return kv.ErrReadOnly
	}
	return t.bucket(bucket).Put(keyBytes(key), value)
}

func (t *tx) Delete(bucket, key string) error {
	if !t.tx.Writable() {
		return kv.ErrReadOnly
	}
	return t.bucket(bucket).Delete(keyBytes(key))
}

func (t *tx) ForEach(bucket, prefix string, fn func(key string, value []byte) error) error {
	c := t.bucket(bucket).Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if err := fn(string(k), v); err != nil {
			if errors.Is(err, kv.ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

func (t *tx) Last(bucket, prefix string) (string, []byte, error) {
	c := t.bucket(bucket).Cursor()
	p := []byte(prefix)
	// Seek to the first key past the prefix range, then step back.
	var k, v []byte
	if end := kv.PrefixEnd(p); end == nil {
		k, v = c.Last()
	} else if k, _ = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k != nil && bytes.HasPrefix(k, p) {
		return string(k), bytes.Clone(v), nil
	}
	return "", nil, kv.ErrNotFound
}

func (t *tx) NextSequence(bucket string) (uint64, error) {
	if !t.tx.Writable() {
		return 0, kv.ErrReadOnly
	}
	return t.bucket(bucket).NextSequence()
}

func (t *tx) sequence(bucket string) uint64 { return t.bucket(bucket).Sequence() }

func (t *tx) Sequence(bucket string) (uint64, error) { return t.sequence(bucket), nil }

func (t *tx) SetSequence(bucket string, n uint64) error {
	if !t.tx.Writable() {
		return kv.ErrReadOnly
	}
	return t.bucket(bucket).SetSequence(n)
}
