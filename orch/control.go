package orch

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/solarops/solar/store"
)

func stopKey(uid string) string { return "stop/" + uid }

// control watches what reaches a run from outside while it goes on: stop
// requests (the caller's stop channel, and "orch stop" records in the
// store, which may ask for running tasks to be killed) and the live edits
// other commands make to the plan (tasks they skipped or marked NOOP: see
// edit.go).
//
// It owns the walker's stop channel (stopped), closed once whoever asks
// first, and the kill of running tasks (kill, killing). Its stop side is
// safe on any goroutine: watchStop runs on its own, checkStop in every
// write of the ledger (the walker's goroutine, the write behind's, the
// store's idle timer), closeStop from Run and the lease watcher. Its edit
// side (ended, lookForEdits, lookWhileWriting) belongs to the walker's
// goroutine, the only one that begins tasks or writes eagerly; finalStates
// reads what it found once the walk has ended.
//
// It guarantees that a stop request seen anywhere stops the walk (soft),
// that one asking for a kill kills running tasks once, and that a task
// another command skipped or marked NOOP before it began is not begun.
type control struct {
	sdb  *sharedDB
	rec  *Record
	note func(msg string) // Runner.Note, may be nil

	userStop <-chan struct{}    // the caller's stop channel, may be nil
	stopped  chan struct{}      // the walker's stop channel
	stopOnce sync.Once          // closes stopped
	kill     context.CancelFunc // kills running tasks: orch stop --kill
	killing  atomic.Bool
	// listening is set while the store notifies the control of stop
	// requests; endListen ends that (listen).
	listening atomic.Bool
	endListen func()
	// requested is set once a stop request was found in the store, and
	// onRequest (Runner.StopRequested, may be nil) told of it.
	requested atomic.Bool
	onRequest func()

	// Seen only by the walker's goroutine: how many times the store had
	// been opened, and when a write last looked for edits (shared stores),
	// when the runner last looked; the plan's edit count then, and the
	// final states other commands gave tasks (SKIPPED, or NOOP marked).
	opens    uint64
	looked   time.Time
	edits    uint64
	external map[string]State
}

// newControl returns the control of a run of rec whose plan had edits
// edits when it was claimed; kill cancels the context its tasks run with.
func newControl(sdb *sharedDB, rec *Record, note func(string), userStop <-chan struct{}, kill context.CancelFunc, edits uint64) *control {
	return &control{sdb: sdb, rec: rec, note: note, userStop: userStop, stopped: make(chan struct{}), kill: kill,
		edits: edits, external: map[string]State{}}
}

// closeStop closes the walker's stop channel, and reports whether this
// call did.
func (c *control) closeStop() (first bool) {
	c.stopOnce.Do(func() { close(c.stopped); first = true })
	return first
}

// watchStop turns the caller's stop channel into the walker's.
func (c *control) watchStop() {
	if c.userStop == nil {
		return
	}
	select {
	case <-c.userStop:
		c.closeStop()
		// "orch stop" signals after writing its request: whether it
		// asks for running tasks to be killed is in the store.
		_ = c.sdb.View(c.checkStop)
	case <-c.stopped:
	}
}

// stopLook is how often an idle runner looks for a stop request in the
// store; stopLookListening how often when the store notifies it of them
// (listen): then the look is only for a notification lost with a
// connection.
const (
	stopLook          = 250 * time.Millisecond
	stopLookListening = time.Second
)

// lookFresh is how long a look for edits made while writing stands in for
// the look begin would make on a shared store.
const lookFresh = 20 * time.Millisecond

// checkStop stops the walk if the store holds a stop request for the plan,
// and kills running tasks (once) if the request asks for it.
func (c *control) checkStop(tx *store.Tx) error {
	v, err := tx.Get(store.Plans, stopKey(c.rec.UID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	if c.closeStop() && c.note != nil && !c.userStopped() {
		// Seen in the store first: nobody else tells the operator.
		c.note("stop requested: running tasks finish, no new task starts")
	}
	if !c.requested.Swap(true) && c.onRequest != nil {
		c.onRequest()
	}
	if string(v) == stopKill && !c.killing.Swap(true) {
		if c.note != nil {
			c.note("orch stop --kill: killing running tasks")
		}
		c.kill() // as a second Ctrl-C does
	}
	return nil
}

// ended is begin's look for edits (ledger.begin): the final state another
// command gave task id (skipped it, or marked it NOOP) since the runner
// last looked, or the zero State. db is the store begin holds, opened
// opens times so far: other processes may have written only if that count
// moved.
func (c *control) ended(db *store.DB, opens uint64, id string) (State, error) {
	if opens != c.opens {
		c.opens = opens
		if !c.sdb.shared() || time.Since(c.looked) > lookFresh {
			if err := db.View(c.lookForEdits); err != nil {
				return State{}, err
			}
		}
	}
	return c.external[id], nil
}

// lookForEdits reads the tasks other commands skipped or marked NOOP,
// when the plan's edit count moved.
func (c *control) lookForEdits(tx *store.Tx) error {
	n := editCount(tx, c.rec.UID)
	if n == c.edits {
		return nil
	}
	c.edits = n
	states, err := States(tx, c.rec)
	if err != nil {
		return err
	}
	for id, st := range states {
		if st.Status == StatusSkipped || MarkedNoop(st) {
			c.external[id] = st
		}
	}
	return nil
}

// lookWhileWriting is lookForEdits in one of the ledger's eager writes on
// a shared store, where others write beside the run: for lookFresh it
// spares begin a transaction of its own for the tasks that start next.
func (c *control) lookWhileWriting(tx *store.Tx) error {
	if err := c.lookForEdits(tx); err != nil {
		return err
	}
	c.looked = time.Now()
	return nil
}

// finalStates returns the task states as stored once the walk has ended
// with states (its view) and walkErr. The store, not the walker's view,
// decides: a task another command skipped (or marked NOOP) stays so.
// When the walk ended well and no command has skipped tasks since the
// runner last looked, the store holds the walker's states and the skips it
// saw, and is not read back (a third of a second at 100,000 tasks).
func (c *control) finalStates(tx *store.Tx, states map[string]State, walkErr error) (map[string]State, error) {
	if walkErr != nil || editCount(tx, c.rec.UID) != c.edits {
		return States(tx, c.rec)
	}
	if len(c.external) == 0 {
		return states, nil
	}
	final := maps.Clone(states)
	for id, st := range c.external {
		final[id] = st
	}
	return final, nil
}
