package orch

import (
	"context"
	"time"

	"github.com/solarops/solar/store"
)

// followEvery is how often Follow reads a submitted plan's states.
const followEvery = 200 * time.Millisecond

// Follow watches submitted plan uid until it is settled (finished, or
// stopped with nothing running), telling progress of every task whose
// state changed since the last look, and returns the final states. It
// settles the plan itself when nothing of it runs or will (a stop with no
// runner left to see it). ctx ends the watch, not the plan.
func Follow(ctx context.Context, db *store.DB, uid string, progress func(id string, st State)) (*Record, map[string]State, error) {
	fleet, ok := db.Fleet()
	if !ok {
		return nil, nil, ErrNoFleet
	}
	var rec *Record
	last := map[string]State{}
	look := func() (map[string]State, error) {
		var states map[string]State
		err := db.View(func(tx *store.Tx) error {
			var err error
			if rec == nil {
				if rec, err = Load(tx, uid); err != nil {
					return err
				}
			}
			states, err = States(tx, rec)
			return err
		})
		if err != nil {
			return nil, err
		}
		for id, st := range states {
			// A task not seen yet was PENDING: the caller showed the plan.
			old, seen := last[id]
			if !seen {
				old = State{Status: StatusPending}
			}
			if old.Status != st.Status && progress != nil {
				progress(id, st)
			}
		}
		last = states
		return states, nil
	}
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		p, submitted, err := fleet.PlanState(ctx, uid)
		if err != nil {
			return rec, last, err
		}
		if submitted && p.Claimed == 0 && (!p.Live || p.Waiting+p.Ready == 0) {
			if _, err := Settle(db, uid, time.Now()); err != nil {
				return rec, last, err
			}
			submitted = false
		}
		states, err := look()
		if err != nil {
			return rec, last, err
		}
		if !submitted {
			return rec, states, nil
		}
		select {
		case <-ctx.Done():
			return rec, states, ctx.Err()
		case <-tick.C:
		}
	}
}
