package orch

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// TestFleetPlanLoadsOnce: the tasks of a claim batch that start together
// share one load of their plan (each loading it would read every resource
// of the plan once per task); a load that fails is tried again by the
// next task rather than remembered.
func TestFleetPlanLoadsOnce(t *testing.T) {
	var loads atomic.Int32
	fail := atomic.Bool{}
	fail.Store(true)
	defer func(old func(*store.DB, string, *FleetRunner) (*fleetPlan, error)) { loadPlan = old }(loadPlan)
	loadPlan = func(*store.DB, string, *FleetRunner) (*fleetPlan, error) {
		loads.Add(1)
		time.Sleep(20 * time.Millisecond) // long enough for every caller to arrive
		if fail.Load() {
			return nil, errors.New("broken")
		}
		return &fleetPlan{}, nil
	}
	fr := &fleetRun{f: &FleetRunner{Name: "r1"}, plans: map[string]*fleetPlan{}}
	if _, err := fr.plan("p"); err == nil {
		t.Fatal("a failed load returned no error")
	}
	fail.Store(false)
	const callers = 16
	got := make([]*fleetPlan, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			fp, err := fr.plan("p")
			if err != nil {
				t.Error(err)
			}
			got[i] = fp
		})
	}
	wg.Wait()
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads of the plan: want 2 (the failed one, then one for %d tasks)", n, callers)
	}
	for i, fp := range got {
		if fp == nil || fp != got[0] {
			t.Fatalf("task %d got plan %p, task 0 %p: want one shared plan", i, fp, got[0])
		}
	}
}

// setCounter is a FleetTx that counts its FleetSet calls (each a round
// trip on PostgreSQL); nothing else of it is called.
type setCounter struct {
	kv.FleetTx
	sets int
}

func (s *setCounter) FleetSet(string, []string, bool) error {
	s.sets++
	return nil
}

// TestFleetReleaseOfNothingCostsNothing: a completion that frees no
// successor (an independent task, the last of a chain) sets no rows: on
// PostgreSQL each set is a round trip of the completion's transaction.
func TestFleetReleaseOfNothingCostsNothing(t *testing.T) {
	ftx := &setCounter{}
	ready, err := (&fleetGraph{}).release(nil, ftx, "p", nil, time.Now())
	if err != nil || ready != 0 {
		t.Fatalf("release of nothing: %d ready, %v", ready, err)
	}
	if ftx.sets != 0 {
		t.Errorf("release of nothing set rows %d times, want 0", ftx.sets)
	}
}
