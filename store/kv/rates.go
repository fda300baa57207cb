package kv

import (
	"context"
	"time"
)

// Rates are the rate limits shared by every process that uses one store:
// a named rate ("api", 10 starts a second) holds for all of them at once,
// on PostgreSQL across machines, on a bbolt file across the processes of
// its machine. A backend's lock client (Locks) has them when it
// implements this interface.
//
// A rate is a generic cell rate algorithm (GCRA, the token bucket seen
// from its clock): its state is one time, the theoretical arrival time
// (TAT) of the next start, kept by the store. Reserve takes n starts at
// once: on the store's clock now,
//
//	tat' = max(tat, now) + n·every
//	wait = max(0, tat' − burst·every − now)
//
// and the caller starts after wait. When every caller starts when told,
// at most burst + ⌊w/every⌋ starts fall in any window of length w: 11 in
// a second for 10/s with burst 1 (GCRATake is the same arithmetic, whose
// test checks it).
//
// The reservation is made at once, not when the wait ends: a caller that
// gives up waiting (its ctx ends) has spent its starts, which only makes
// the rate stricter. Callers naming one rate with different numbers share
// its time: each is held to its own every and burst, applied to the
// arrivals of all.
type Rates interface {
	// Reserve takes n starts (n ≥ 1) of the rate called name, one every
	// every with burst at once, and returns how long the caller must wait
	// before the first of them; the state changes in one step, exact
	// between the store's processes.
	Reserve(ctx context.Context, name string, every time.Duration, burst, n int) (wait time.Duration, err error)
}

// GCRATake is the arithmetic of Rates.Reserve: from the rate's theoretical
// arrival time tat (zero for a rate never taken) at now, the new one and
// the wait. Backends that keep the time themselves (PostgreSQL, in SQL)
// compute the same.
func GCRATake(tat, now time.Time, every time.Duration, burst, n int) (next time.Time, wait time.Duration) {
	if tat.Before(now) {
		tat = now
	}
	next = tat.Add(time.Duration(n) * every)
	wait = next.Add(-time.Duration(burst) * every).Sub(now)
	if wait < 0 {
		wait = 0
	}
	return next, wait
}
