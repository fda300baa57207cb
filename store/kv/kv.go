// Package kv is the seam between solar's store and the backends that hold
// it: the embedded bbolt file (store/bolt) and a PostgreSQL database shared
// by a team (store/pg). A backend keeps named buckets of byte-ordered keys;
// domain packages never see it, only store.Tx, which wraps a kv.Tx.
//
// Contracts every backend keeps (kvtest.Run checks them):
//   - Update runs its function in one transaction that commits entirely when
//     the function returns nil and leaves nothing behind otherwise; View runs
//     a read-only one, in which writes fail with ErrReadOnly.
//   - Keys of a bucket are visited in byte order; ForEach and Last look only
//     at keys with the given prefix; ErrStop ends a ForEach without error.
//   - Get returns a copy, or ErrNotFound; values passed to a ForEach
//     callback are valid during the call only.
//   - NextSequence is strictly increasing per bucket and survives restarts.
//   - A record or file that is not what solar wrote is an error wrapping
//     ErrDamaged, never a panic.
//
// Every backend also keeps the locks between the processes that use one
// store (Locks, locks.go), which kvtest.RunLocks checks with two clients.
package kv

import (
	"bytes"
	"errors"
	"fmt"
)

// Backend is an open store.
type Backend interface {
	// Update runs fn in a read-write transaction.
	Update(fn func(Tx) error) error
	// View runs fn in a read-only transaction.
	View(fn func(Tx) error) error
	// Close releases the backend (its file lock, its connections).
	Close() error
}

// Tx is one transaction of a Backend.
type Tx interface {
	Writable() bool
	Get(bucket, key string) ([]byte, error)
	Has(bucket, key string) bool
	Put(bucket, key string, value []byte) error
	Delete(bucket, key string) error
	ForEach(bucket, prefix string, fn func(key string, value []byte) error) error
	Last(bucket, prefix string) (string, []byte, error)
	NextSequence(bucket string) (uint64, error)
	// Sequence returns the bucket's counter (the last NextSequence);
	// SetSequence sets it (store copy makes an exact replica).
	Sequence(bucket string) (uint64, error)
	SetSequence(bucket string, n uint64) error
}

// Peeker is a Tx that can return a value without copying it: Peek is Get
// whose bytes may be the backend's own, valid only until the transaction
// writes or ends, never to be changed.
type Peeker interface {
	Peek(bucket, key string) ([]byte, error)
}

// LateSyncer is a Backend whose write transactions can be made durable
// after they return. UpdateLate is Update, except that when it returns nil
// the transaction's writes are seen by every later transaction but may not
// be on disk yet: durable makes them so (or waits for a sync in flight
// that does), or says why they never will be; any later transaction that
// is durable, and Close, make them durable too. Syncs happen in order.
// Once a sync has failed, every later transaction fails.
type LateSyncer interface {
	UpdateLate(fn func(Tx) error) (durable func() error, err error)
}

// Errors every backend returns in the same situations.
var (
	// ErrNotFound is returned by Get and Last for a missing key.
	ErrNotFound = errors.New("not found")
	// ErrReadOnly is returned by writes inside a View transaction.
	ErrReadOnly = errors.New("write in a read-only transaction")
	// ErrStop may be returned by a ForEach callback to end the iteration
	// early without error.
	ErrStop = errors.New("stop iteration")
	// ErrLocked means another solar process holds the store and did not
	// release it within the wait time.
	ErrLocked = errors.New("store is in use by another solar process")
	// ErrSchema means the store was written by an incompatible solar.
	ErrSchema = errors.New("store schema version is not supported")
	// ErrNoStore means a read-only open found no store; it creates none.
	ErrNoStore = errors.New("no store")
	// ErrBadLocation means a store location that cannot be used as
	// given: a URL that does not parse, a bad parameter.
	ErrBadLocation = errors.New("bad store location")
	// ErrDamaged means the store, or a record in it, is not what solar
	// wrote: truncated, overwritten, or edited by hand.
	ErrDamaged = errors.New("damaged")
	// ErrLeaseLost means a process could not renew the leases it held on
	// a shared store in time (or another process took one after it
	// expired): what it did under them must stop.
	ErrLeaseLost = errors.New("lease lost")
)

// Damagedf returns an error wrapping ErrDamaged that names the damaged
// record. A transaction adds the store's location to it (Named).
func Damagedf(format string, args ...any) error {
	return &recordError{msg: fmt.Sprintf(format, args...)}
}

type recordError struct{ msg string }

func (e *recordError) Error() string { return e.msg }
func (e *recordError) Unwrap() error { return ErrDamaged }

// DamagedError is a damaged store, named by its location.
type DamagedError struct {
	Path   string
	Detail string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("store %s is damaged: %s; restore it from a copy", e.Path, e.Detail)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// Named turns an error wrapping ErrDamaged into a DamagedError naming the
// store at location, once.
func Named(location string, err error) error {
	var de *DamagedError
	if err == nil || !errors.Is(err, ErrDamaged) || errors.As(err, &de) {
		return err
	}
	return &DamagedError{Path: location, Detail: err.Error()}
}

// Key names a key of a bucket.
type Key struct{ Bucket, Key string }

// PrefixEnd returns the least key greater than every key with prefix p, or
// nil when there is none (p empty or all 0xff): a scan of the prefix then
// has no upper bound.
func PrefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
