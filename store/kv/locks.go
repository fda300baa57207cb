package kv

import "time"

// Locks are the locks between the processes that use one store, as a
// backend keeps them: a run's resource locks, its slots of counted limits
// (a node's, a semaphore's) and a plan's claim by its runner. Every
// backend has them (kvtest.RunLocks checks them), named in plain terms:
// the backend decides how a name is kept (a byte of a lock file, a lease
// row). A client is one Locks, opened by one process; its locks end with
// their unlock, with Close, or with the process.
//
// What is shared depends on the backend, and Leased says which:
//   - Leased true (PostgreSQL): every lock is a lease, seen from every
//     machine, that expires on the store's clock unless its holder renews
//     it, which the Locks does on its own. A client that could not renew
//     its leases before its deadline has lost them: Lost is closed, Err
//     wraps ErrLeaseLost, and what it did under them must stop at once.
//   - Leased false (a bbolt file, whose processes share one machine):
//     resource locks are the kernel's, dropped when their holder dies, and
//     never lost. Slots and claims are granted to every client at once: a
//     run keeps its own limits, and a plan's claim is its runner's record,
//     written under the store's own lock (the file's), whose pid tells
//     whether its runner lives.
type Locks interface {
	// TryLock takes the lock of resource without waiting; ok is false
	// while another client holds it. Whether a client's second TryLock of
	// a resource it holds is granted is the backend's (callers keep their
	// own tasks apart). unlock releases it once; later calls do nothing.
	TryLock(resource string) (unlock func() error, ok bool, err error)
	// TrySlot takes one of the n slots of the limit called name without
	// waiting; ok is false while all n are held (where slots are shared:
	// see Leased).
	TrySlot(name string, n int) (unlock func() error, ok bool, err error)
	// TryClaim takes the claim called name (a plan's, by its runner)
	// without waiting; ok is false while another live client holds it
	// (where claims are shared: see Leased).
	TryClaim(name string) (release func() error, ok bool, err error)
	// ClaimHolder says who holds the claim called name now, if anyone
	// does and the backend can tell.
	ClaimHolder(name string) (h LockHolder, held bool, err error)
	// Leased reports whether the locks are leases shared by every machine
	// (see above); when it is false, a claim excludes no one by itself.
	Leased() bool
	// Lost is closed when the client could not renew its leases before
	// its deadline, or found one taken; it is never closed where locks
	// are not leases. Err then wraps ErrLeaseLost and says why.
	Lost() <-chan struct{}
	Err() error
	// Close releases every lock the client holds.
	Close() error
}

// LockHolder describes the holder of a lock: its host and pid, the time
// left until its lease expires and the time since it renewed it, on the
// store's clock.
type LockHolder struct {
	Host string
	PID  int
	// Left is the time until the lease expires, and Silent the time since
	// its holder last renewed it, both on the store's clock.
	Left, Silent time.Duration
}
