package pg

import (
	"strconv"

	"github.com/solarops/solar/store/kv"
)

// StoreLocks is a lock session seen as kv.Locks: a run's resource locks,
// its slots and its plan's claim, each a lease of the session, named
// resource/NAME, slot/NAME/I (I from 0 to n-1) and plan/NAME. The names
// are the lease table's rows, which runners of every version of solar
// sharing a store must agree on.
type StoreLocks struct {
	l *Locks
}

var _ kv.Locks = StoreLocks{}

// OpenStoreLocks connects a lock session (OpenLocks) and returns it as
// kv.Locks.
func OpenStoreLocks(rawURL string, opts Options, lease LeaseOptions) (StoreLocks, error) {
	l, err := OpenLocks(rawURL, opts, lease)
	if err != nil {
		return StoreLocks{}, err
	}
	return StoreLocks{l: l}, nil
}

// Session returns the lock session below (tests).
func (s StoreLocks) Session() *Locks { return s.l }

// claimLease names the lease of the claim called name.
func claimLease(name string) string { return "plan/" + name }

// TryLock takes the lease resource/NAME.
func (s StoreLocks) TryLock(resource string) (func() error, bool, error) {
	return s.l.TryLock("resource/" + resource)
}

// TrySlot takes the first free lease of slot/NAME/0 to slot/NAME/n-1; one
// this session holds is passed over without a round trip.
func (s StoreLocks) TrySlot(name string, n int) (func() error, bool, error) {
	prefix := "slot/" + name + "/"
	for i := 0; i < n; i++ {
		unlock, ok, err := s.l.TryLock(prefix + strconv.Itoa(i))
		if err != nil || ok {
			return unlock, ok, err
		}
	}
	return nil, false, nil
}

// TryClaim takes the lease plan/NAME.
func (s StoreLocks) TryClaim(name string) (func() error, bool, error) {
	return s.l.TryLock(claimLease(name))
}

// ClaimHolder says who holds the lease plan/NAME.
func (s StoreLocks) ClaimHolder(name string) (kv.LockHolder, bool, error) {
	return s.l.Holder(claimLease(name))
}

// Leased is true: every lock is a lease.
func (s StoreLocks) Leased() bool { return true }

// Lost is the session's (Locks.Lost).
func (s StoreLocks) Lost() <-chan struct{} { return s.l.Lost() }

// Err is the session's (Locks.Err).
func (s StoreLocks) Err() error { return s.l.Err() }

// Close releases every lease of the session and ends it.
func (s StoreLocks) Close() error { return s.l.Close() }

// ClaimHeld reports whether any holder, this process included, holds the
// claim called name (see LockHeld).
func (t *tx) ClaimHeld(name string) (bool, error) { return t.LockHeld(claimLease(name)) }
