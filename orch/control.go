package orch

import (
	"errors"
	"time"

	"github.com/solarops/solar/store"
)

func stopKey(uid string) string { return "stop/" + uid }

func (ex *execution) closeStop() { ex.stopOnce.Do(func() { close(ex.stopped) }) }

// watchStop turns the caller's stop channel into the walker's.
func (ex *execution) watchStop() {
	if ex.userStop == nil {
		return
	}
	select {
	case <-ex.userStop:
		ex.closeStop()
		// "orch stop" signals after writing its request: whether it
		// asks for running tasks to be killed is in the store.
		_ = ex.sdb.View(ex.checkStop)
	case <-ex.stopped:
	}
}

// stopLook is how often an idle runner looks for a stop request.
const stopLook = 250 * time.Millisecond

// lookFresh is how long a look for edits made while writing stands in for
// the look begin would make on a shared store.
const lookFresh = 20 * time.Millisecond

func (ex *execution) checkStop(tx *store.Tx) error {
	v, err := tx.Get(store.Plans, stopKey(ex.rec.UID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	ex.closeStop()
	if string(v) == stopKill && !ex.killing.Swap(true) {
		if ex.r.Note != nil {
			ex.r.Note("orch stop --kill: killing running tasks")
		}
		ex.kill() // as a second Ctrl-C does
	}
	return nil
}

// begin records that task id starts, unless another command skipped it
// since the runner last looked (see edit.go): then it returns the reason.
// The store stays acquired from the look to the buffering of INPROGRESS,
// so no other process can write in between.
func (ex *execution) begin(id string, st State) (string, error) {
	db, opens, err := ex.sdb.acquireCounted()
	if err != nil {
		return "", err
	}
	defer ex.sdb.release()
	if opens != ex.opens {
		ex.opens = opens
		if !ex.sdb.shared() || time.Since(ex.looked) > lookFresh {
			if err := db.View(ex.lookForEdits); err != nil {
				return "", err
			}
		}
	}
	if reason, ok := ex.external[id]; ok {
		return reason, nil
	}
	return "", ex.persist(id, st)
}

// lookForEdits reads the tasks other commands skipped, when the plan's
// edit count moved.
func (ex *execution) lookForEdits(tx *store.Tx) error {
	n := editCount(tx, ex.rec.UID)
	if n == ex.edits {
		return nil
	}
	ex.edits = n
	states, err := States(tx, ex.rec)
	if err != nil {
		return err
	}
	for id, st := range states {
		if st.Status == StatusSkipped {
			ex.external[id] = st.Reason
		}
	}
	return nil
}
