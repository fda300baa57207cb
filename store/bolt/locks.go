package bolt

import (
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/solarops/solar/store/kv"
)

// Two actions of one resource never run at once. Within a run the walker
// keeps them apart; across runs (two plans run by two processes can share
// a task that rules pulled into both) each attempt holds an exclusive lock
// on the resource's byte in one file next to the store,
// <store>.locks/resources. The kernel drops the lock when the runner dies,
// and the runner's scripts, whose survivors the next runner kills first,
// never inherit it (the file is opened close-on-exec).
//
// The locks are open file description locks (fcntl F_OFD_SETLK) on one
// byte each, at an offset hashed from the resource's name: one file serves
// every resource, where a file per resource cost its creation (about half
// a millisecond on ext4) at each new resource's first run. Two resources
// whose names hash alike merely exclude each other across runs.
//
// A bbolt file's processes share one machine: slots and claims are not
// kept here (kv.Locks, Leased false). A run keeps its own limits, and a
// plan's claim is its runner's record, written under the file's lock.

// fOFDSetLK is F_OFD_SETLK, the same on every Linux architecture; the
// syscall package does not name it.
const fOFDSetLK = 37

// LockFileName is the file, inside <store>.locks, that holds the locks.
const LockFileName = "resources"

// Locks are the resource locks of one client (a run) of the store at a
// path. Its locks belong to its open file description, so they never
// exclude each other: the walker keeps the tasks of a run apart, and
// holders counts the tasks of this client on each offset so that a hash
// collision inside the run does not unlock another task's resource.
type Locks struct {
	storePath string
	never     chan struct{} // Lost: never closed

	mu      sync.Mutex
	f       *os.File
	holders map[int64]int
}

var _ kv.Locks = (*Locks)(nil)

// OpenLocks returns a lock client of the store at path. The lock file is
// made on first use: a run of noop tasks never makes it.
func OpenLocks(path string) *Locks {
	return &Locks{storePath: path, never: make(chan struct{})}
}

// lockOffset is the byte that stands for resource in the lock file.
func lockOffset(resource string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(resource))
	// 62 bits: the kernel refuses ranges that reach past the largest
	// file offset.
	return int64(h.Sum64() >> 2)
}

// file opens the lock file on first use; l.mu is held.
func (l *Locks) file() (*os.File, error) {
	if l.f != nil {
		return l.f, nil
	}
	dir := l.storePath + ".locks"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, LockFileName), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
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

// TryLock takes the lock of resource for one more task of this client;
// ok is false when another process (or another client) holds it.
func (l *Locks) TryLock(resource string) (unlock func() error, ok bool, err error) {
	off := lockOffset(resource)
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.file()
	if err != nil {
		return nil, false, err
	}
	if l.holders[off] == 0 {
		err := setLock(f, off, syscall.F_WRLCK)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	l.holders[off]++
	var once sync.Once
	return func() error {
		once.Do(func() { l.unlock(off) })
		return nil
	}, true, nil
}

func (l *Locks) unlock(off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return // closed: the locks went with the file
	}
	if l.holders[off]--; l.holders[off] > 0 {
		return
	}
	delete(l.holders, off)
	_ = setLock(l.f, off, syscall.F_UNLCK)
}

// granted is the release of a slot or a claim, which hold nothing here.
func granted() error { return nil }

// TrySlot grants the slot at once: runs of a bbolt file share no limits
// (each keeps its own).
func (l *Locks) TrySlot(string, int) (func() error, bool, error) { return granted, true, nil }

// TryClaim grants the claim at once: a plan's claim is its runner's record,
// written under the file's lock.
func (l *Locks) TryClaim(string) (func() error, bool, error) { return granted, true, nil }

// ClaimHolder knows no holder: see TryClaim.
func (l *Locks) ClaimHolder(string) (kv.LockHolder, bool, error) { return kv.LockHolder{}, false, nil }

// Leased is false: the kernel's locks end with their holder, and are never
// lost.
func (l *Locks) Leased() bool { return false }

// Lost is never closed.
func (l *Locks) Lost() <-chan struct{} { return l.never }

// Err is always nil.
func (l *Locks) Err() error { return nil }

// Close drops every lock of the client.
func (l *Locks) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
