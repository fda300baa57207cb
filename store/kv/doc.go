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
// A backend may also notify (Notifier, notify.go): a transaction's
// notification reaches the store's listeners when it commits. It is an
// optional capability, and best effort: listeners poll as well.
//
// Every backend also keeps the locks between the processes that use one
// store (Locks, locks.go), which kvtest.RunLocks checks with two clients,
// and, through the same clients, the rates they share (Rates, rates.go: a
// GCRA per named rate, whose cases RunLocks runs too).
package kv
