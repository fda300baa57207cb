package orch

import (
	"sync"
	"time"

	"github.com/solarops/solar/store"
)

// commitJournal makes the runner commit through the store's journal: one
// fdatasync per commit instead of bbolt's two (store/bolt/journal.go).
// Benchmarks turn it off to compare.
var commitJournal = true

// sharedDB keeps the store open for the run while no other process wants
// it, and lets go as soon as one does, so that other solar commands
// (report, stop) get in while tasks run. Idle, it looks every idle for a
// process waiting for the file (DB.Waiting) and closes the store when
// there is one; while a burst of writes lasts longer than yield it still
// closes for a moment, since that process polls the file lock and would
// otherwise wait for the whole burst. Staying open matters: closing folds
// the journal into the file (two more fsyncs) and costs a PostgreSQL
// backend a new connection. A shared store (store.Handle.Shared:
// PostgreSQL) never asks to be let go; other processes write beside the
// runner, so every acquire counts as a new open (see acquireCounted).
type sharedDB struct {
	store    *store.Handle
	lockWait time.Duration
	idle     time.Duration
	yield    time.Duration

	mu       sync.Mutex
	db       *store.DB
	opens    uint64 // how many times the store was opened: between two, other processes may write
	users    int
	openedAt time.Time
	timer    *time.Timer
	gen      uint64 // of the idle check armed last
	// beforeClose runs (with mu held, db open) just before a close
	// (closing true), and at every idle check: the runner flushes buffered
	// states there.
	beforeClose func(db *store.DB, closing bool)
	// fence, when set, checks in every write transaction that this
	// runner still owns its plan (claim.go).
	fence func(tx *store.Tx) error
	// lookedWaiting is when acquire last looked for a waiting process.
	lookedWaiting time.Time
}

// waitLook is how often acquire looks for a process waiting for the store:
// a look opens a file, and a chain of shell tasks acquired the store three
// times per task. The waiting process polls the lock every 50 ms.
const waitLook = 5 * time.Millisecond

// waitingNow reports whether another process waits for the store, looking
// at most every waitLook; s.mu is held.
func (s *sharedDB) waitingNow() bool {
	now := time.Now()
	if now.Sub(s.lookedWaiting) < waitLook {
		return false
	}
	s.lookedWaiting = now
	return s.db.Waiting()
}

func (s *sharedDB) acquire() (*store.DB, error) {
	db, _, err := s.acquireCounted()
	return db, err
}

// acquireCounted is acquire that also tells how many times the store has
// been opened so far.
func (s *sharedDB) acquireCounted() (*store.DB, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.db != nil && s.users == 0 && time.Since(s.openedAt) > s.yield && s.waitingNow() {
		// Let the waiting process in: bbolt's lock wait polls every 50ms.
		s.closeLocked()
		time.Sleep(60 * time.Millisecond)
	}
	if s.db == nil {
		db, err := s.store.Open(store.Options{LockWait: s.lockWait, Journal: commitJournal})
		if err != nil {
			return nil, 0, err
		}
		s.db, s.openedAt = db, time.Now()
		s.opens++
	} else if !s.db.Exclusive() {
		s.opens++ // others may have written since
	}
	s.users++
	return s.db, s.opens, nil
}

func (s *sharedDB) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users == 0 && s.db != nil {
		s.arm()
	}
}

// arm starts a new idle check; a check armed before it does nothing.
func (s *sharedDB) arm() {
	s.gen++
	gen := s.gen
	s.timer = time.AfterFunc(s.idle, func() { s.idleClose(gen) })
}

// idleClose closes the idle store if another process waits for it, and
// otherwise looks again after idle.
func (s *sharedDB) idleClose(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen || s.users != 0 || s.db == nil || s.timer == nil {
		return
	}
	if s.db.Waiting() {
		s.closeLocked()
		s.timer = nil
		return
	}
	// Idle is when the runner writes what it buffered (as it would before
	// closing): the records of started attempts must reach the store soon.
	if s.beforeClose != nil {
		s.beforeClose(s.db, false)
	}
	s.arm()
}

func (s *sharedDB) closeLocked() {
	if s.beforeClose != nil {
		s.beforeClose(s.db, true)
	}
	_ = s.db.Close()
	s.db = nil
}

// shared reports whether other processes may write beside the runner
// while it has the store open (a PostgreSQL store).
func (s *sharedDB) shared() bool { return s.store.Shared() }

// Update runs fn in one write transaction, after the fence, if set.
func (s *sharedDB) Update(fn func(*store.Tx) error) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	return db.Update(s.fenced(fn))
}

// UpdateLate is Update that may return before the transaction is durable
// (store.DB.UpdateLate); durable waits until it is. Closing the store
// makes it durable too.
func (s *sharedDB) UpdateLate(fn func(*store.Tx) error) (durable func() error, err error) {
	db, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.release()
	return db.UpdateLate(s.fenced(fn))
}

// fenced is fn after the fence, if set.
func (s *sharedDB) fenced(fn func(*store.Tx) error) func(*store.Tx) error {
	if s.fence == nil {
		return fn
	}
	return func(tx *store.Tx) error {
		if err := s.fence(tx); err != nil {
			return err
		}
		return fn(tx)
	}
}

// View runs fn in one read transaction.
func (s *sharedDB) View(fn func(*store.Tx) error) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	return db.View(fn)
}

// Close closes the store now.
func (s *sharedDB) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.db != nil {
		s.closeLocked()
	}
}
