package orch

import (
	"testing"
	"time"

	"github.com/solarops/solar/store"
)

// TestControlStopRequest checks the control watcher's stop contract: a
// stop request in the store stops the walk, and says so once unless the
// caller's stop channel did (a signal, whose handler said so); one that
// asks for a kill also kills running tasks, once however often it is
// seen; no request does neither.
func TestControlStopRequest(t *testing.T) {
	path, uid := noopStack(t, []string{"a"})
	for _, tt := range []struct {
		name      string
		request   []byte // nil: no request
		signalled bool   // the caller's stop channel is closed
		wantStop  bool
		wantKill  int
		wantNotes int
	}{
		{"no request", nil, false, false, 0, 0},
		{"soft", []byte{}, false, true, 0, 1},
		{"kill", []byte(stopKill), false, true, 1, 2},
		{"soft, signalled", []byte{}, true, true, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kills, notes := 0, 0
			var c *control
			update(t, path, func(tx *store.Tx) error {
				rec, err := Load(tx, uid)
				if err != nil {
					return err
				}
				userStop := make(chan struct{})
				if tt.signalled {
					close(userStop)
				}
				c = newControl(&sharedDB{store: store.NewHandle(path)}, rec, func(string) { notes++ }, userStop, func() { kills++ }, 0)
				if tt.request != nil {
					if err := tx.Put(store.Plans, stopKey(uid), tt.request); err != nil {
						return err
					}
				}
				// Every write of the ledger looks: the second look must
				// not kill again.
				for range 2 {
					if err := c.checkStop(tx); err != nil {
						return err
					}
				}
				return tx.Delete(store.Plans, stopKey(uid))
			})
			stopped := false
			select {
			case <-c.stopped:
				stopped = true
			default:
			}
			if stopped != tt.wantStop || kills != tt.wantKill || notes != tt.wantNotes {
				t.Errorf("stopped %v, killed %d times, noted %d; want stopped %v, killed %d, noted %d",
					stopped, kills, notes, tt.wantStop, tt.wantKill, tt.wantNotes)
			}
		})
	}
}

// TestControlSkipped checks the control watcher's edit contract on a
// store of one machine: a task another command skipped (or marked NOOP)
// ends in that state once the store was let go (opened again) since the
// runner last looked, and the runner does not read the store for it while
// it kept the store open (no other process could write).
func TestControlSkipped(t *testing.T) {
	path, uid := noopStack(t, []string{"a", "b", "c"})
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rec *Record
	if err := db.View(func(tx *store.Tx) error {
		rec, err = Load(tx, uid)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c := newControl(&sharedDB{store: store.NewHandle(path)}, rec, nil, nil, func() {}, 0)
	c.opens = 1
	if err := db.Update(func(tx *store.Tx) error {
		states, err := States(tx, rec)
		if err != nil {
			return err
		}
		if err := skipTasks(tx, uid, []string{"b.run#0"}, states, ReasonFiltered, time.Now()); err != nil {
			return err
		}
		_, err = MarkNoop(tx, rec, []string{"c.run"}, time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		opens  uint64
		id     string
		status Status // "" for a task the runner is to start
		reason string
	}{
		{"store kept open: not looked for", 1, "b.run#0", "", ""},
		{"store opened again: seen", 2, "b.run#0", StatusSkipped, ReasonFiltered},
		{"marked noop: seen", 2, "c.run#0", StatusNoop, ReasonMarkedNoop},
		{"a task nobody skipped", 2, "a.run#0", "", ""},
	} {
		end, err := c.ended(db, tt.opens, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if end.Status != tt.status || end.Reason != tt.reason {
			t.Errorf("%s: ended %s (%q), want %s (%q)", tt.name, end.Status, end.Reason, tt.status, tt.reason)
		}
	}
}
