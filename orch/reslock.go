package orch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/store"
)

// Two actions of one resource never run at once, nor more tasks under a
// limit than it allows. Within a run the walker sees to it; across runs
// (two plans run by two processes can share a task that rules pulled into
// both, or a node, or a sema) an attempt holds its resource's lock, and a
// slot of each limit it is under (its node's --per-node, its sema), taken
// from the store's locks (store.Locks): a bbolt file's lock file next to
// it, whose locks the kernel drops when the runner dies, or a PostgreSQL
// store's leases, seen from every machine, which the run loses, and its
// tasks with them, if it cannot renew them (see claim.go). Which of them
// the store shares is the store's business (store.Locks.Leased).

// resLocker takes resource locks and limit slots for one run.
type resLocker interface {
	lock(ctx context.Context, resource string, limits []walk.Limit) (unlock func() error, err error)
	close()
}

// newResLocker returns the run's locker over the store's locks, which the
// run closes itself.
func newResLocker(locks store.Locks) resLocker { return &runLocks{locks: locks} }

// runLocks waits for the store's locks, polling every lockPoll.
type runLocks struct {
	locks store.Locks
}

func (l *runLocks) lock(ctx context.Context, resource string, limits []walk.Limit) (func() error, error) {
	// The resource first, then the limits in name order: every run takes
	// them in one order, so two runs never wait for each other in a ring.
	u, err := l.wait(ctx, resource, 0)
	if err != nil || len(limits) == 0 {
		return u, err
	}
	unlocks := []func() error{u}
	release := func() error {
		for i := len(unlocks) - 1; i >= 0; i-- {
			_ = unlocks[i]()
		}
		return nil
	}
	// A limit's slots are named after it, "slot/sema/db/0" for instance
	// (Limit.String), a name every run of every version must agree on.
	slices.SortFunc(limits, func(a, b walk.Limit) int {
		return cmp.Or(strings.Compare(a.Kind.String(), b.Kind.String()), strings.Compare(a.Name, b.Name))
	})
	for _, lim := range limits {
		u, err := l.wait(ctx, lim.String(), lim.Count)
		if err != nil {
			_ = release()
			return nil, err
		}
		unlocks = append(unlocks, u)
	}
	return release, nil
}

// wait takes the lock of resource name (n zero) or a slot of the limit
// name (n slots), looking again every lockPoll while it is held, until ctx
// is done.
func (l *runLocks) wait(ctx context.Context, name string, n int) (func() error, error) {
	for {
		var (
			unlock func() error
			ok     bool
			err    error
		)
		if n == 0 {
			unlock, ok, err = l.locks.TryLock(name)
		} else {
			unlock, ok, err = l.locks.TrySlot(name, n)
		}
		if err != nil && n == 0 {
			return nil, fmt.Errorf("resource lock of %s: %w", name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("a slot of %s: %w", name, err)
		}
		if ok {
			return unlock, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// close does nothing: the locks are the run's, closed by Run.
func (l *runLocks) close() {}

// lockPoll is how often a task waiting for another run's lock looks again.
const lockPoll = 50 * time.Millisecond
