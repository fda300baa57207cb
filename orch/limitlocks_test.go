package orch

import (
	"context"
	"slices"
	"testing"

	"github.com/solarops/solar/store"
)

// namedLocks is a store.Locks that grants every lock and records the names
// asked for, in order.
type namedLocks struct{ names []string }

func (l *namedLocks) TryLock(name string) (func() error, bool, error) {
	l.names = append(l.names, name)
	return func() error { return nil }, true, nil
}
func (l *namedLocks) Holder(string) (store.LockHolder, bool, error) {
	return store.LockHolder{}, false, nil
}
func (l *namedLocks) Lost() <-chan struct{} { return nil }
func (l *namedLocks) Err() error            { return nil }
func (l *namedLocks) Close() error          { return nil }

// TestSharedLockNamesOfLimits pins the names a task's limits are locked
// under on a shared store, which runs of every version must agree on: the
// resource's lock first, then a slot of each other limit, node before sema,
// by name; the task's own limits are left as they were.
func TestSharedLockNamesOfLimits(t *testing.T) {
	info := &taskInfo{location: "n1", semaList: []string{"zz:1", "db:2"}}
	lims, err := taskLimits(nil, "r.run#0", "r", info, 2)
	if err != nil {
		t.Fatal(err)
	}
	task := &Task{ID: "r.run#0", Limits: lims}
	before := slices.Clone(task.Limits)
	ex := &execution{}
	fake := &namedLocks{}
	locks := &sharedResLocks{locks: fake, held: map[string]bool{}}
	unlock, err := locks.lock(context.Background(), "r", ex.limits(task))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	want := []string{"resource/r", "slot/node/n1/0", "slot/sema/db/0", "slot/sema/zz/0"}
	if !slices.Equal(fake.names, want) {
		t.Errorf("locks taken %q, want %q", fake.names, want)
	}
	if !slices.Equal(task.Limits, before) {
		t.Errorf("the task's limits became %v, want them untouched (%v)", task.Limits, before)
	}
}
