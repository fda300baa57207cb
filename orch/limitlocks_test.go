package orch

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/store"
)

// namedLocks is a store.Locks that grants every lock and records what was
// asked for, in order: a resource's lock, or a slot of a limit and how many
// slots it has.
type namedLocks struct{ names []string }

func (l *namedLocks) TryLock(name string) (func() error, bool, error) {
	l.names = append(l.names, "resource/"+name)
	return func() error { return nil }, true, nil
}
func (l *namedLocks) TrySlot(name string, n int) (func() error, bool, error) {
	l.names = append(l.names, fmt.Sprintf("slot/%s of %d", name, n))
	return func() error { return nil }, true, nil
}
func (l *namedLocks) TryClaim(string) (func() error, bool, error) {
	return func() error { return nil }, true, nil
}
func (l *namedLocks) ClaimHolder(string) (store.LockHolder, bool, error) {
	return store.LockHolder{}, false, nil
}
func (l *namedLocks) Leased() bool          { return true }
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
	task := &walk.Task{ID: "r.run#0", Limits: lims}
	before := slices.Clone(task.Limits)
	att := &attemptRunner{}
	fake := &namedLocks{}
	locks := newResLocker(fake)
	unlock, err := locks.lock(context.Background(), "r", att.limits(task))
	if err != nil {
		t.Fatal(err)
	}
	_ = unlock()
	want := []string{"resource/r", "slot/node/n1 of 2", "slot/sema/db of 2", "slot/sema/zz of 1"}
	if !slices.Equal(fake.names, want) {
		t.Errorf("locks taken %q, want %q", fake.names, want)
	}
	if !slices.Equal(task.Limits, before) {
		t.Errorf("the task's limits became %v, want them untouched (%v)", task.Limits, before)
	}
}
