package orch

import (
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// begin records that task id starts, unless another command skipped it
// since the runner last looked (see edit.go): then it returns the reason.
// The store stays acquired from the look (control.skipped) to the
// buffering of INPROGRESS, so no other process can write in between.
func (ex *execution) begin(id string, st State) (string, error) {
	db, opens, err := ex.sdb.acquireCounted()
	if err != nil {
		return "", err
	}
	defer ex.sdb.release()
	if reason, skip, err := ex.ctl.skipped(db, opens, id); err != nil || skip {
		return reason, err
	}
	return "", ex.persist(id, st)
}

// persist records a state change. Final states of tasks with side effects
// are written at once, with everything buffered before them; the rest is
// buffered.
func (ex *execution) persist(id string, st State) error {
	info := ex.infos[id]
	ex.bufMu.Lock()
	ex.bufferState(id, st)
	lazy := st.Status == StatusInProgress || info.noop || info.problem != "" || st.Status == StatusSkipped
	big, failed := len(ex.buf) >= lazyMax, ex.behindFailed
	ex.bufMu.Unlock()
	return ex.writeBuffered(!lazy, big, failed)
}

// writeBuffered writes what persist or persistBatch buffered: at once when
// a change must be durable now (eager), behind the walk when the buffer is
// full, else not yet. failed is the error of a write behind that failed,
// read with the buffer.
func (ex *execution) writeBuffered(eager, big bool, failed error) error {
	switch {
	case eager:
		return ex.flush()
	case big:
		return ex.flushBehind()
	}
	return failed
}

// lazyMax is how many changes the buffer holds before they are written
// even though none must be durable yet. Tests lower it.
var lazyMax = 4096

// lateHook, when set (by tests), wraps the durable of each eager write.
var lateHook func(durable func() error) func() error

// behindHook, when set (by tests), runs on a write behind's goroutine
// before it writes; an error fails the write.
var behindHook func() error

// persistBatch records the final states of tasks that finished together,
// in one transaction when any of them needs to be durable now (group
// commit).
func (ex *execution) persistBatch(ids []string, states []State) error {
	eager := false
	ex.bufMu.Lock()
	for i, id := range ids {
		st := states[i]
		ex.bufferState(id, st)
		info := ex.infos[id]
		if !(info.noop || info.problem != "" || st.Status == StatusSkipped) {
			eager = true
		}
	}
	big, failed := len(ex.buf) >= lazyMax, ex.behindFailed
	ex.bufMu.Unlock()
	return ex.writeBuffered(eager, big, failed)
}

// flushBehind writes the buffered changes, none of which must be durable
// before the walk goes on, in a transaction of their own on another
// goroutine: the walker keeps scheduling (a chain of 100,000 noop tasks
// spends most of its time in these writes). One such write is in flight
// at most; writes stay in the order their changes were buffered, since
// every other write waits for it first (waitBehind). A failed write fails
// the walk at the runner's next write. Only the walker's goroutine calls
// it, as it does flush.
func (ex *execution) flushBehind() error {
	if err := ex.waitBehind(); err != nil {
		return err
	}
	ex.bufMu.Lock()
	batch := ex.buf
	ex.buf = nil
	clear(ex.started)
	done := make(chan struct{})
	ex.behind = done
	ex.bufMu.Unlock()
	if len(batch) == 0 {
		ex.endBehind(done, nil)
		return nil
	}
	go func() {
		var err error
		if behindHook != nil {
			err = behindHook()
		}
		if err != nil {
			ex.endBehind(done, err)
			return
		}
		err = ex.sdb.Update(func(tx *store.Tx) error {
			if err := ex.write(tx, batch); err != nil {
				return err
			}
			return ex.ctl.checkStop(tx)
		})
		if err == nil {
			ex.written(batch)
			ex.recycle(batch)
		}
		ex.endBehind(done, err)
	}()
	return nil
}

// endBehind records how the write behind that done stands for ended.
func (ex *execution) endBehind(done chan struct{}, err error) {
	ex.bufMu.Lock()
	if err != nil && ex.behindFailed == nil {
		ex.behindFailed = err
	}
	ex.behind = nil
	ex.bufMu.Unlock()
	close(done)
}

// waitBehind waits for the write behind in flight, if any, and returns the
// error of any that failed.
func (ex *execution) waitBehind() error {
	ex.bufMu.Lock()
	done := ex.behind
	ex.bufMu.Unlock()
	if done != nil {
		<-done
	}
	return ex.behindErr()
}

// behindErr returns the error of a write behind that failed, if any.
func (ex *execution) behindErr() error {
	ex.bufMu.Lock()
	defer ex.bufMu.Unlock()
	return ex.behindFailed
}

// pendingWrite is one buffered change: task id's state st, or write.
type pendingWrite struct {
	id    string
	st    State
	write func(*store.Tx) error
}

// bufferState buffers task id's state st; the caller holds bufMu. A final
// state replaces the task's INPROGRESS one if that is still buffered: both
// would be written in one transaction, where the first is never seen.
func (ex *execution) bufferState(id string, st State) {
	if ex.buf == nil {
		ex.buf, ex.spare = ex.spare, nil
	}
	if st.Status == StatusInProgress {
		if ex.started == nil {
			ex.started = map[string]int{}
		}
		ex.started[id] = len(ex.buf)
	} else if i, ok := ex.started[id]; ok {
		ex.buf[i] = pendingWrite{}
		delete(ex.started, id)
	}
	ex.buf = append(ex.buf, pendingWrite{id: id, st: st})
}

// take empties the buffer and returns what it held, in order.
func (ex *execution) take() []pendingWrite {
	ex.bufMu.Lock()
	defer ex.bufMu.Unlock()
	batch := ex.buf
	ex.buf = nil
	clear(ex.started)
	return batch
}

// write writes batch, a buffer take returned, in tx.
func (ex *execution) write(tx *store.Tx, batch []pendingWrite) error {
	// One catalog for the batch, emptied for each task (apply): a batch
	// of noop tasks is thousands.
	cat := resources.NewCatalog(tx)
	for _, w := range batch {
		var err error
		switch {
		case w.write != nil:
			err = w.write(tx)
		case w.id != "":
			err = ex.apply(tx, cat, w.id, w.st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recycle keeps batch, written, for the buffer to reuse.
func (ex *execution) recycle(batch []pendingWrite) {
	clear(batch)
	ex.bufMu.Lock()
	ex.spare = batch[:0]
	ex.bufMu.Unlock()
}

// flush writes every buffered change in one transaction, which may become
// durable after flush returns: the walker syncs it (syncLast) before it
// starts a task that depends on others, or once it has started the tasks
// it can; the tasks that depend on it also wait for that just before
// their scripts start (gateOf).
func (ex *execution) flush() error {
	if err := ex.waitBehind(); err != nil {
		return err
	}
	batch := ex.take()
	if len(batch) == 0 {
		return nil
	}
	defer ex.recycle(batch)
	durable, err := ex.sdb.UpdateLate(func(tx *store.Tx) error {
		if err := ex.write(tx, batch); err != nil {
			return err
		}
		if ex.sdb.shared() {
			// On a shared store others write beside the run: look for
			// their edits here, which spares begin a transaction of its
			// own for the tasks that start next.
			if err := ex.ctl.lookWhileWriting(tx); err != nil {
				return err
			}
		}
		return ex.ctl.checkStop(tx)
	})
	if err == nil {
		ex.written(batch)
		if lateHook != nil {
			durable = lateHook(durable)
		}
		ex.bufMu.Lock()
		ex.durable = durable
		ex.bufMu.Unlock()
	}
	return err
}

// syncLast makes the last eager write durable, on the walker's goroutine
// (Walker.Sync): before it starts a task that waits for it in its gate,
// and when it is about to wait for tasks to end. A failed sync is
// reported by the gates and by the next write.
func (ex *execution) syncLast() {
	ex.bufMu.Lock()
	durable := ex.durable
	ex.bufMu.Unlock()
	if durable != nil {
		_ = durable()
	}
}

// gateOf returns what task t's scripts wait for before they start: the
// sync of the last transaction written, which holds the final states and
// commits of every task t depends on (they finished before it started, and
// syncs happen in order). A task that depends on none starts at once.
func (ex *execution) gateOf(t *Task) func() error {
	if len(t.In) == 0 && len(t.Earlier) == 0 {
		return nil
	}
	ex.bufMu.Lock()
	defer ex.bufMu.Unlock()
	return ex.durable
}

// written forgets the outputs and inputs of the tasks whose final states
// batch held, now written: only their commit read them, and a run of
// 100,000 tasks kept them all until it ended. (A transaction retried
// calls apply again: they are kept until it is written.)
func (ex *execution) written(batch []pendingWrite) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	for _, w := range batch {
		if w.id != "" && w.st.Status.Finished() {
			delete(ex.outputs, w.id)
			delete(ex.ran, w.id)
		}
	}
}

// flushOnClose writes buffered changes before the store closes for idling,
// so that other commands see the run as it is.
func (ex *execution) flushOnClose(db *store.DB, closing bool) {
	// Changes buffered after a write behind still in flight wait for it:
	// they must not reach the store before the older ones.
	var batch []pendingWrite
	ex.bufMu.Lock()
	if ex.behind == nil {
		batch = ex.buf
		ex.buf = nil
		clear(ex.started)
	}
	ex.bufMu.Unlock()
	// Idle checks come every few milliseconds: with nothing to write they
	// only look for a stop request, and not that often (a shared store
	// would see a transaction per check).
	now := time.Now().UnixNano()
	if !closing && len(batch) == 0 && now-ex.stopLooked.Load() < int64(stopLook) {
		return
	}
	ex.stopLooked.Store(now)
	err := db.Update(func(tx *store.Tx) error {
		// Called with the shared store held: its fence, by hand.
		if ex.sdb.fence != nil {
			if err := ex.sdb.fence(tx); err != nil {
				return err
			}
		}
		if err := ex.write(tx, batch); err != nil {
			return err
		}
		return ex.ctl.checkStop(tx)
	})
	if err == nil {
		ex.written(batch)
	}
}

// drain writes what is still buffered, inside tx; nothing if a write
// behind failed, since what it held would then be missing before it.
func (ex *execution) drain(tx *store.Tx) error {
	batch := ex.take()
	if ex.behindErr() != nil {
		return nil
	}
	return ex.write(tx, batch)
}
