package orch

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// A running attempt's process group is recorded with its task, so that
// when the runner dies (kill -9, a crash, the machine's OOM killer) the
// next runner can make sure nothing of it still runs before the task runs
// again. The scripts normally die with their runner (a parent-death
// signal), and what they started with them (the run directory's watchdog,
// see package handler); this is the second line, for a watchdog that was
// killed too or a group that outlived it.

func procsPrefix(uid string) string  { return "group/" + uid + "/" }
func procsKey(uid, id string) string { return procsPrefix(uid) + id }

// procsRecord is the stored record of one running attempt.
type procsRecord struct {
	Procs  handler.Procs `json:"group"`
	Runner int           `json:"runner"`         // pid of the runner that started it
	Host   string        `json:"host,omitempty"` // the machine it runs on
}

// recordProcs buffers the record of task id's running attempt; it is
// written with the next batch (at the latest when the store idles) and
// removed with the task's final state.
func (l *ledger) recordProcs(id string, g handler.Procs) {
	raw, err := json.Marshal(procsRecord{Procs: g, Runner: os.Getpid(), Host: hostname})
	if err != nil {
		return
	}
	key := procsKey(l.uid, id)
	l.bufMu.Lock()
	if l.procs == nil {
		l.procs = map[string]bool{}
	}
	l.procs[id] = true
	l.buf = append(l.buf, pendingWrite{task: id, write: func(tx *store.Tx) error { return tx.Put(store.Plans, key, raw) }})
	l.bufMu.Unlock()
}

// mayHaveProcs reports whether task id may have a record of its attempt
// in the store: one this run recorded, or any of the plan's from before.
func (l *ledger) mayHaveProcs(id string) bool {
	if l.planProcs {
		return true
	}
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	return l.procs[id]
}

// hasProcs reports whether the store holds a record of an attempt of plan
// uid, of any runner or machine.
func hasProcs(tx *store.Tx, uid string) (bool, error) {
	found := false
	err := tx.ForEach(store.Plans, procsPrefix(uid), func(string, []byte) error {
		found = true
		return store.ErrStop
	})
	return found, err
}

// orphanProcs returns the recorded attempts, of any plan, whose runner is
// no longer alive, by key. Attempts of other machines (a shared store) are
// their own machine's business: a pid means nothing here.
func orphanProcs(tx *store.Tx) (map[string]procsRecord, error) {
	out := map[string]procsRecord{}
	err := tx.ForEach(store.Plans, "group/", func(k string, v []byte) error {
		var g procsRecord
		if json.Unmarshal(v, &g) != nil {
			out[k] = procsRecord{} // unreadable: nothing to kill, drop it
			return nil
		}
		if g.Host != "" && g.Host != hostname {
			return nil
		}
		if g.Runner == os.Getpid() || !alive(g.Runner) {
			out[k] = g
		}
		return nil
	})
	return out, err
}

// sweep cleans up after the dead runners of this machine: what is left of
// their attempts' process groups dies, and their private directories go.
func (r *Runner) sweep() error {
	dirs := []string{""}
	if r.Shell != nil && r.Shell.TempDir != "" {
		dirs = append(dirs, r.Shell.TempDir)
	}
	for _, dir := range dirs {
		swept, err := handler.SweepTemp(dir)
		for _, s := range swept {
			if r.Note != nil {
				r.Note(fmt.Sprintf("killed %d leftover process(es) of %s, whose runner is gone", s.Killed, s.Task))
			}
		}
		if err != nil {
			return fmt.Errorf("%w; end them by hand, then run again", err)
		}
	}
	return nil
}

// orphanWait bounds the wait for a killed group to be gone.
const orphanWait = 10 * time.Second

// killOrphans ends what is left of the attempts of dead runners and drops
// their records. A group that will not die fails the run: starting the
// task beside it is what must never happen.
func (r *Runner) killOrphans(sdb *sharedDB, left map[string]procsRecord) error {
	if len(left) == 0 {
		return nil
	}
	for key, g := range left {
		if g.Procs.PGID == 0 {
			continue
		}
		n, err := handler.KillProcs(g.Procs, orphanWait)
		uid, task, _ := strings.Cut(strings.TrimPrefix(key, "group/"), "/")
		if err != nil {
			return fmt.Errorf("task %s of plan %s: %w; end them by hand (kill -KILL -- -%d), then run again", task, uid, err, g.Procs.PGID)
		}
		if n > 0 && r.Note != nil {
			r.Note(fmt.Sprintf("killed %d leftover process(es) of %s (plan %s), whose runner (pid %d) is gone", n, task, uid, g.Runner))
		}
	}
	return sdb.Update(func(tx *store.Tx) error {
		for key := range left {
			if err := tx.Delete(store.Plans, key); err != nil {
				return err
			}
		}
		return nil
	})
}
