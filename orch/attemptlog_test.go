package orch

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// TestAttemptRecords: the end records of a plan come back by task in the
// order of their numbers (attempt 1000 after 999, though its key sorts
// first), with who ran each; an older store's empty end mark is an attempt
// that knows only its number; LastRun keeps the latest attempt's run.
func TestAttemptRecords(t *testing.T) {
	path := testStorePath(t)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var uid string
	update(t, path, func(tx *store.Tx) error {
		uid = savePlan(t, tx, t0, stagedNode("a", "run"), stagedNode("b", "run"))
		for _, a := range []AttemptRecord{
			{Number: 999, Actor: "alice@laptop", Host: "laptop", Run: "r1", Start: t0, End: t0.Add(time.Second)},
			{Number: 1000, Actor: "bob@desk", Host: "desk", Run: "r2", Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)},
			{Number: 1001, Actor: "bob@desk", Host: "desk", Run: "r2"},
		} {
			if err := finalLog(tx, uid, "a.run#0", a.Number, nil, a); err != nil {
				return err
			}
		}
		// Before attempts had records, an attempt's end was an empty value.
		return tx.Put(store.Plans, logEndKey(uid, "b.run#0", 1), nil)
	})
	view(t, path, func(tx *store.Tx) error {
		recs, err := AttemptRecords(tx, uid)
		if err != nil {
			return err
		}
		a := recs["a.run#0"]
		if got := numbers(a); !slices.Equal(got, []int{999, 1000, 1001}) {
			t.Errorf("a's attempts = %v, want [999 1000 1001]", got)
		}
		if len(a) == 3 && (a[0].Actor != "alice@laptop" || a[0].Host != "laptop" || !a[0].Start.Equal(t0) || a[1].Actor != "bob@desk") {
			t.Errorf("a's records = %+v: want alice on laptop at %s first, then bob", a, t0)
		}
		if got := numbers(LastRun(a)); !slices.Equal(got, []int{1000, 1001}) {
			t.Errorf("LastRun = %v, want [1000 1001]", got)
		}
		if b := recs["b.run#0"]; len(b) != 1 || !reflect.DeepEqual(b[0], AttemptRecord{Number: 1}) {
			t.Errorf("b's attempts = %+v, want one bare attempt 1", b)
		}
		one, err := TaskAttemptRecords(tx, uid, "b.run#0")
		if err != nil || len(one) != 1 {
			t.Errorf("TaskAttemptRecords(b) = %+v, %v; want attempt 1", one, err)
		}
		return nil
	})
	update(t, path, func(tx *store.Tx) error {
		return tx.Put(store.Plans, logEndKey(uid, "b.run#0", 2), []byte("{not json"))
	})
	view(t, path, func(tx *store.Tx) error {
		if _, err := AttemptRecords(tx, uid); !errors.Is(err, store.ErrDamaged) {
			t.Errorf("a garbled record: err = %v, want store.ErrDamaged", err)
		}
		return nil
	})
}

func numbers(list []AttemptRecord) []int {
	out := []int{}
	for _, a := range list {
		out = append(out, a.Number)
	}
	return out
}

// TestAttemptBases: a run numbers a task's attempts after its latest one,
// whether that attempt ended (its end record) or a dead runner left it
// running (its streamed lines only, the task INPROGRESS); a task that never
// ran starts at 1.
func TestAttemptBases(t *testing.T) {
	path := testStorePath(t)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var uid string
	update(t, path, func(tx *store.Tx) error {
		uid = savePlan(t, tx, t0, stagedNode("a", "run"), stagedNode("b", "run"), stagedNode("c", "run"))
		for n := 1; n <= 2; n++ {
			if err := finalLog(tx, uid, "a.run#0", n, nil, AttemptRecord{Number: n}); err != nil {
				return err
			}
		}
		if err := finalLog(tx, uid, "b.run#0", 1, nil, AttemptRecord{Number: 1}); err != nil {
			return err
		}
		_, err := putLog(tx, uid, "b.run#0", 2, 0, []handler.Line{{At: t0, Stream: 'o', Text: "half way"}})
		return err
	})
	view(t, path, func(tx *store.Tx) error {
		states := map[string]State{"a.run#0": {Status: StatusPending}, "b.run#0": {Status: StatusInProgress}, "c.run#0": {}}
		bases, err := attemptBases(tx, uid, states)
		if err != nil {
			return err
		}
		if bases["a.run#0"] != 2 || bases["b.run#0"] != 2 || bases["c.run#0"] != 0 {
			t.Errorf("bases = %v, want a 2, b 2 (its unended attempt), c 0", bases)
		}
		return nil
	})
}

// TestControlStopRequested: a stop request found in the store, however
// many writes find it, tells Runner.StopRequested once; a walk stopped
// otherwise (the caller's channel, no request) does not.
func TestControlStopRequested(t *testing.T) {
	path := testStorePath(t)
	var uid string
	update(t, path, func(tx *store.Tx) error {
		uid = savePlan(t, tx, time.Now(), stagedNode("a", "run"))
		return nil
	})
	for _, tc := range []struct {
		name    string
		request bool
		want    int
	}{{"no request", false, 0}, {"request", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			told := 0
			update(t, path, func(tx *store.Tx) error {
				rec, err := Load(tx, uid)
				if err != nil {
					return err
				}
				c := newControl(&sharedDB{store: store.NewHandle(path)}, rec, nil, nil, func() {}, 0)
				c.onRequest = func() { told++ }
				if tc.request {
					if err := tx.Put(store.Plans, stopKey(uid), []byte{}); err != nil {
						return err
					}
				} else {
					c.closeStop()
				}
				for range 3 {
					if err := c.checkStop(tx); err != nil {
						return err
					}
				}
				return tx.Delete(store.Plans, stopKey(uid))
			})
			if told != tc.want {
				t.Errorf("StopRequested told %d times, want %d", told, tc.want)
			}
		})
	}
}
