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

func groupPrefix(uid string) string  { return "group/" + uid + "/" }
func groupKey(uid, id string) string { return groupPrefix(uid) + id }

// groupRecord is the stored record of one running attempt.
type groupRecord struct {
	Group  handler.Group `json:"group"`
	Runner int           `json:"runner"`         // pid of the runner that started it
	Host   string        `json:"host,omitempty"` // the machine it runs on
}

// recordGroup buffers the record of task id's running attempt; it is
// written with the next batch (at the latest when the store idles) and
// removed with the task's final state.
func (l *ledger) recordGroup(id string, g handler.Group) {
	raw, err := json.Marshal(groupRecord{Group: g, Runner: os.Getpid(), Host: hostname})
	if err != nil {
		return
	}
	key := groupKey(l.uid, id)
	l.bufMu.Lock()
	if l.groups == nil {
		l.groups = map[string]bool{}
	}
	l.groups[id] = true
	l.buf = append(l.buf, pendingWrite{write: func(tx *store.Tx) error { return tx.Put(store.Plans, key, raw) }})
	l.bufMu.Unlock()
}

// mayHaveGroup reports whether task id may have a record of its attempt
// in the store: one this run recorded, or any of the plan's from before.
func (l *ledger) mayHaveGroup(id string) bool {
	if l.planGroups {
		return true
	}
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	return l.groups[id]
}

// hasGroups reports whether the store holds a record of an attempt of plan
// uid, of any runner or machine.
func hasGroups(tx *store.Tx, uid string) (bool, error) {
	found := false
	err := tx.ForEach(store.Plans, groupPrefix(uid), func(string, []byte) error {
		found = true
		return store.ErrStop
	})
	return found, err
}

// orphanGroups returns the recorded attempts, of any plan, whose runner is
// no longer alive, by key. Attempts of other machines (a shared store) are
// their own machine's business: a pid means nothing here.
func orphanGroups(tx *store.Tx) (map[string]groupRecord, error) {
	out := map[string]groupRecord{}
	err := tx.ForEach(store.Plans, "group/", func(k string, v []byte) error {
		var g groupRecord
		if json.Unmarshal(v, &g) != nil {
			out[k] = groupRecord{} // unreadable: nothing to kill, drop it
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
func (r *Runner) killOrphans(sdb *sharedDB, left map[string]groupRecord) error {
	if len(left) == 0 {
		return nil
	}
	for key, g := range left {
		if g.Group.PGID == 0 {
			continue
		}
		n, err := handler.KillGroup(g.Group, orphanWait)
		uid, task, _ := strings.Cut(strings.TrimPrefix(key, "group/"), "/")
		if err != nil {
			return fmt.Errorf("task %s of plan %s: %w; end them by hand (kill -KILL -- -%d), then run again", task, uid, err, g.Group.PGID)
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
