package orch

import (
	"github.com/solarops/solar/store"
)

// Stopping a run is a request written in the store, which the runner acts
// on wherever it runs: on a store that notifies (PostgreSQL) the request's
// transaction notifies stopTopic with the plan's uid, which the runner
// listens for (control.listen); it also looks for the request in its own
// writes and, idle, on a timer (control.pollEvery). A bbolt file cannot
// notify: a runner of this machine is sent SIGTERM once the request is
// committed, so that it acts at once, if and only if the process is the
// runner the record names (signalRunner). "orch stop" never signals any
// other process.

// stopKill is the value of a stop request that also kills running tasks.
const stopKill = "kill"

// stopTopic is the topic of the notifications of stop requests; their key
// is the plan's uid.
const stopTopic = "stop"

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
	// PID and Host name the plan's runner, when Running.
	PID  int
	Host string
	// Fleet is true when the plan was submitted to the fleet's runners,
	// which stop it wherever they run.
	Fleet bool
	// Signalled is true when the runner, a process of this machine, was
	// also sent SIGTERM (a store that cannot notify).
	Signalled bool
}

// Stop asks the runner of the plan ref names ("last", "last~N" or a uid) to
// stop: running tasks finish (or, with kill, are killed), the others end
// SKIPPED. The request is committed in one transaction of db, which
// notifies the runner where the store can; where it cannot, a runner of
// this machine that the record names by pid and start time is signalled
// to read it at once.
func Stop(db *store.DB, ref string, kill bool) (StopResult, error) {
	var (
		res StopResult
		rr  runnerRecord
	)
	err := db.Update(func(tx *store.Tx) error {
		var err error
		if res.UID, err = Resolve(tx, ref); err != nil {
			return err
		}
		submitted, err := fleetStop(tx, res.UID, kill)
		if err != nil {
			return err
		}
		if submitted {
			// The fleet's runners act on the plan's row; the plan
			// settles once nothing of it runs (settle).
			res.Running, res.Fleet = true, true
			return nil
		}
		var ok bool
		if rr, ok = liveRunner(tx, res.UID); !ok {
			return nil
		}
		res.Running, res.PID, res.Host = true, rr.PID, rr.Host
		var v []byte
		if kill {
			v = []byte(stopKill)
		}
		if err := tx.Put(store.Plans, stopKey(res.UID), v); err != nil {
			return err
		}
		return tx.Notify(stopTopic, res.UID)
	})
	if err != nil || !res.Running || db.CanNotify() {
		if err == nil && res.Fleet {
			// Nothing of it may run any more: then it settles now.
			_, err = settleIdle(db, res.UID)
		}
		return res, err
	}
	res.Signalled = signalRunner(rr)
	return res, nil
}
