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

// sharedDB opens the store only while the run needs it, so that other solar
// commands (report, stop) get in while tasks run. It stays open through a
// burst of writes and closes after Idle without use; while a burst lasts
// longer than yield and another process waits for the file (DB.Waiting),
// it still closes for a moment, since that process polls the file lock and
// would otherwise wait for the whole run.
type sharedDB struct {
	path     string
	lockWait time.Duration
	idle     time.Duration
	yield    time.Duration

	mu       sync.Mutex
	db       *store.DB
	opens    uint64 // how many times the store was opened: between two, other processes may write
	users    int
	openedAt time.Time
	timer    *time.Timer
	// beforeClose runs (with mu held, db open) just before an idle close:
	// the runner flushes buffered states there.
	beforeClose func(db *store.DB)
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
	if s.db != nil && s.users == 0 && time.Since(s.openedAt) > s.yield && s.db.Waiting() {
		// Let the waiting process in: bbolt's lock wait polls every 50ms.
		s.closeLocked()
		time.Sleep(60 * time.Millisecond)
	}
	if s.db == nil {
		db, err := store.Open(s.path, store.Options{LockWait: s.lockWait, Journal: commitJournal})
		if err != nil {
			return nil, 0, err
		}
		s.db, s.openedAt = db, time.Now()
		s.opens++
	}
	s.users++
	return s.db, s.opens, nil
}

func (s *sharedDB) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users == 0 && s.db != nil {
		s.timer = time.AfterFunc(s.idle, s.idleClose)
	}
}

func (s *sharedDB) idleClose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == 0 && s.db != nil {
		s.closeLocked()
	}
}

func (s *sharedDB) closeLocked() {
	if s.beforeClose != nil {
		s.beforeClose(s.db)
	}
	_ = s.db.Close()
	s.db = nil
}

// Update runs fn in one write transaction.
func (s *sharedDB) Update(fn func(*store.Tx) error) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	return db.Update(fn)
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
