package orch

import (
	"os"
	"syscall"

	"github.com/solarops/solar/store"
)

// Stopping a run is a request written in the store, where the runner reads
// it between tasks, from any machine. A runner on this
// machine is also sent SIGTERM once the request is committed, so that it
// acts at once rather than at its next write; "orch stop" never signals
// a process itself.

// stopKill is the value of a stop request that also kills running tasks.
const stopKill = "kill"

// Running reports the pid of the live process running plan uid, if any.
// The process may run on another machine (see liveRunner).
func Running(tx *store.Tx, uid string) (int, bool) {
	rr, ok := liveRunner(tx, uid)
	return rr.PID, ok
}

// StopResult is what Stop did.
type StopResult struct {
	// UID is the plan Stop's ref named.
	UID string
	// Running is false when no live process runs the plan: then nothing
	// was written.
	Running bool
	// PID is the pid of the plan's runner, when Running.
	PID int
}

// Stop asks the runner of the plan ref names ("last", "last~N" or a uid) to
// stop: running tasks finish (or, with kill, are killed), the others end
// SKIPPED. The request is committed in one transaction of db; then a runner
// of this machine is signalled to read it at once.
func Stop(db *store.DB, ref string, kill bool) (StopResult, error) {
	var (
		res   StopResult
		local bool
	)
	err := db.Update(func(tx *store.Tx) error {
		var err error
		if res.UID, err = Resolve(tx, ref); err != nil {
			return err
		}
		rr, ok := liveRunner(tx, res.UID)
		if !ok {
			return nil
		}
		res.Running, res.PID, local = true, rr.PID, rr.local()
		var v []byte
		if kill {
			v = []byte(stopKill)
		}
		return tx.Put(store.Plans, stopKey(res.UID), v)
	})
	if err != nil || !local {
		return res, err
	}
	// A pid names a process of this machine only: a runner elsewhere reads
	// the request at its next write.
	if p, err := os.FindProcess(res.PID); err == nil {
		_ = p.Signal(syscall.SIGTERM)
	}
	return res, nil
}
