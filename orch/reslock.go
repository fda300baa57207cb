package orch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/solarops/solar/store"
)

// Two actions of one resource never run at once. Within a run the walker's
// per-resource semaphore sees to it; across runs (two plans run by two
// processes can share a task that rules pulled into both) each attempt
// holds an exclusive lock on the resource's byte in one file next to the
// store, <store>.locks/resources. The kernel drops the lock when the
// runner dies, and the runner's scripts, whose survivors the next runner
// kills first, never inherit it (the file is opened close-on-exec).
//
// The locks are open file description locks (fcntl F_OFD_SETLK) on one
// byte each, at an offset hashed from the resource's name: one file serves
// every resource, where a file per resource cost its creation (about half a
// millisecond on ext4) at each new resource's first run. Two resources whose
// names hash alike merely exclude each other across runs.

// resLocker takes resource locks for one run: a bbolt store's lock file, or
// a shared store's locks (PostgreSQL leases, seen from every machine, which
// the run loses, and its tasks with them, if it cannot renew them: see
// claim.go). On a shared store an attempt also takes a slot of each limit it
// is under (its node's --per-node, its sema), so that runs of different
// plans, from any machine, keep them together.
type resLocker interface {
	lock(ctx context.Context, resource string, limits []Limit) (unlock func(), err error)
	close()
}

func newResLocker(storePath string, shared store.Locks) resLocker {
	if shared != nil {
		return &sharedResLocks{locks: shared, held: map[string]bool{}}
	}
	return &resourceLocks{storePath: storePath}
}

// sharedResLocks are the resource locks and limit slots of a shared store.
// The run remembers which slots its own tasks hold and tries another, not
// spending a round trip on a lock it knows it has.
type sharedResLocks struct {
	locks store.Locks
	mu    sync.Mutex
	held  map[string]bool // slot lock names this run holds
}

func (l *sharedResLocks) lock(ctx context.Context, resource string, limits []Limit) (func(), error) {
	var unlocks []func() error
	release := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			_ = unlocks[i]()
		}
	}
	// The resource first, then the limits in name order: every run takes
	// them in one order, so two runs never wait for each other in a ring.
	u, err := l.wait(ctx, []string{"resource/" + resource}, "resource lock of "+resource)
	if err != nil {
		return nil, err
	}
	unlocks = append(unlocks, u)
	// A limit's slots are named after it, "slot/sema/db/0" for instance
	// (Limit.String), a name every run of every version must agree on.
	slices.SortFunc(limits, func(a, b Limit) int {
		return cmp.Or(strings.Compare(a.Kind.String(), b.Kind.String()), strings.Compare(a.Name, b.Name))
	})
	for _, lim := range limits {
		names := make([]string, lim.Count)
		for i := range names {
			names[i] = fmt.Sprintf("slot/%s/%d", lim, i)
		}
		u, err := l.wait(ctx, names, "a slot of "+lim.String())
		if err != nil {
			release()
			return nil, err
		}
		unlocks = append(unlocks, u)
	}
	return release, nil
}

// wait takes the first free lock of names, looking again every lockPoll
// while all are held, until ctx is done.
func (l *sharedResLocks) wait(ctx context.Context, names []string, what string) (func() error, error) {
	for {
		for _, name := range names {
			l.mu.Lock()
			if l.held[name] {
				l.mu.Unlock()
				continue
			}
			unlock, ok, err := l.locks.TryLock(name)
			if err != nil {
				l.mu.Unlock()
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if ok {
				l.held[name] = true
				l.mu.Unlock()
				return func() error {
					l.mu.Lock()
					defer l.mu.Unlock()
					delete(l.held, name)
					return unlock()
				}, nil
			}
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

func (l *sharedResLocks) close() {}

// lockPoll is how often a task waiting for another run's lock looks again.
const lockPoll = 50 * time.Millisecond

// fOFDSetLK is F_OFD_SETLK, the same on every Linux architecture; the
// syscall package does not name it.
const fOFDSetLK = 37

// lockFileName is the file, inside <store>.locks, that holds the locks.
const lockFileName = "resources"

// resourceLocks are the resource locks of one run. Its locks belong to its
// open file description, so they never exclude each other: the walker keeps
// the tasks of a run apart, and holders counts the tasks of this run on each
// offset so that a hash collision inside the run does not unlock another
// task's resource.
type resourceLocks struct {
	storePath string

	mu      sync.Mutex
	f       *os.File
	holders map[int64]int
}

// lockOffset is the byte that stands for resource in the lock file.
func lockOffset(resource string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(resource))
	// 62 bits: the kernel refuses ranges that reach past the largest
	// file offset.
	return int64(h.Sum64() >> 2)
}

// file opens the lock file on first use; a run of noop tasks never makes it.
func (l *resourceLocks) file() (*os.File, error) {
	if l.f != nil {
		return l.f, nil
	}
	dir := l.storePath + ".locks"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	l.f, l.holders = f, map[int64]int{}
	return f, nil
}

// setLock takes (typ F_WRLCK) or drops (F_UNLCK) the byte at off without
// waiting.
func setLock(f *os.File, off int64, typ int16) error {
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: off, Len: 1}
	return syscall.FcntlFlock(f.Fd(), fOFDSetLK, &lk)
}

// tryLock takes the lock of the byte at off for one more task of the run;
// busy means another process holds it.
func (l *resourceLocks) tryLock(off int64) (busy bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.file()
	if err != nil {
		return false, err
	}
	if l.holders[off] == 0 {
		err := setLock(f, off, syscall.F_WRLCK)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	l.holders[off]++
	return false, nil
}

func (l *resourceLocks) unlock(off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holders[off]--; l.holders[off] > 0 {
		return
	}
	delete(l.holders, off)
	_ = setLock(l.f, off, syscall.F_UNLCK)
}

// lock takes the lock of resource, waiting while another process holds
// it, until ctx is done.
func (l *resourceLocks) lock(ctx context.Context, resource string, _ []Limit) (unlock func(), err error) {
	off := lockOffset(resource)
	for {
		busy, err := l.tryLock(off)
		if err != nil {
			return nil, fmt.Errorf("resource lock of %s: %w", resource, err)
		}
		if !busy {
			return func() { l.unlock(off) }, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// close drops every lock of the run.
func (l *resourceLocks) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
