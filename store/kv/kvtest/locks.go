package kvtest

import (
	"os"
	"testing"
	"time"

	"github.com/solarops/solar/store/kv"
)

// LocksFactory makes the stores whose locks RunLocks checks.
type LocksFactory struct {
	// New makes a new store and returns a function that opens a client
	// of its locks (kv.Locks); the suite closes what it opens.
	New func(t *testing.T) (open func() (kv.Locks, error))
	// Crash, for a backend whose locks are leases, makes a client stop
	// renewing them without releasing them, as a holder that died on
	// another machine would; its leases must then expire within
	// ExpireWithin. Without it (locks that are not leases, which end with
	// their holder) the case is not run.
	Crash        func(kv.Locks)
	ExpireWithin time.Duration
}

// RunLocks runs the lock cases of the suite, in the spirit of Terraform's
// TestBackendStateLocks: two clients b1 and b2 of one store, the second
// refused what the first holds, and granted it once the first lets go.
func RunLocks(t *testing.T, f LocksFactory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, f LocksFactory, b1, b2 kv.Locks)
	}{
		{"LockExcludesOtherClients", lockExcludes},
		{"SlotsCounted", slotsCounted},
		{"ClaimExcludesOtherClients", claimExcludes},
		{"ReleasedOnClose", releasedOnClose},
		{"RateShared", rateShared},
		{"RateExactUnderContention", rateContention},
	}
	if f.Crash != nil {
		cases = append(cases, struct {
			name string
			fn   func(t *testing.T, f LocksFactory, b1, b2 kv.Locks)
		}{"CrashedHolderExpires", crashedHolderExpires})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open := f.New(t)
			client := func() kv.Locks {
				t.Helper()
				l, err := open()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				return l
			}
			b1, b2 := client(), client()
			if b1.Leased() != b2.Leased() {
				t.Fatal("two clients of one store disagree on Leased")
			}
			c.fn(t, f, b1, b2)
			for _, l := range []kv.Locks{b1, b2} {
				if err := l.Err(); err != nil {
					t.Errorf("Err = %v, with nothing lost", err)
				}
			}
		})
	}
}

// try calls a Try method and fails the test on an error or an unexpected
// answer; it returns the unlock of a lock granted.
func try(t *testing.T, what string, want bool, fn func() (func() error, bool, error)) func() error {
	t.Helper()
	unlock, ok, err := fn()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if ok != want {
		t.Fatalf("%s: granted %v, want %v", what, ok, want)
	}
	return unlock
}

func lockExcludes(t *testing.T, _ LocksFactory, b1, b2 kv.Locks) {
	unlock := try(t, "b1 locks keystone", true, func() (func() error, bool, error) { return b1.TryLock("keystone") })
	try(t, "b2 locks keystone, held by b1", false, func() (func() error, bool, error) { return b2.TryLock("keystone") })
	other := try(t, "b2 locks haproxy", true, func() (func() error, bool, error) { return b2.TryLock("haproxy") })
	try(t, "b1 locks haproxy, held by b2", false, func() (func() error, bool, error) { return b1.TryLock("haproxy") })
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatalf("a second unlock: %v", err)
	}
	again := try(t, "b2 locks keystone after b1 let go", true, func() (func() error, bool, error) { return b2.TryLock("keystone") })
	try(t, "b1 locks keystone, now held by b2", false, func() (func() error, bool, error) { return b1.TryLock("keystone") })
	_ = again()
	_ = other()
}

// slotsCounted: where slots are shared (Leased), at most n clients hold a
// slot of a limit of n at once; elsewhere every request is granted at once.
func slotsCounted(t *testing.T, _ LocksFactory, b1, b2 kv.Locks) {
	slot := func(l kv.Locks, name string) func() (func() error, bool, error) {
		return func() (func() error, bool, error) { return l.TrySlot(name, 2) }
	}
	first := try(t, "b1 takes a slot of 2", true, slot(b1, "node/a"))
	second := try(t, "b2 takes a slot of 2", true, slot(b2, "node/a"))
	if !b1.Leased() {
		// Not shared: granted beyond n, never waited for.
		third := try(t, "b2 takes a third slot of 2, not shared", true, slot(b2, "node/a"))
		_, _, _ = first(), second(), third()
		return
	}
	try(t, "b2 takes a third slot of 2", false, slot(b2, "node/a"))
	try(t, "b1 takes a third slot of 2", false, slot(b1, "node/a"))
	other := try(t, "b2 takes a slot of another limit", true, slot(b2, "sema/b"))
	if err := first(); err != nil {
		t.Fatal(err)
	}
	third := try(t, "b2 takes the slot b1 let go", true, slot(b2, "node/a"))
	try(t, "b1 takes a slot, both held by b2", false, slot(b1, "node/a"))
	_, _, _ = second(), third(), other()
	last := try(t, "b1 takes a slot once all are free", true, slot(b1, "node/a"))
	_ = last()
}

// claimExcludes: where claims are shared (Leased), a claim held by one
// client is refused to the other, which is told who holds it; elsewhere
// every client is granted it, and no holder is known.
func claimExcludes(t *testing.T, _ LocksFactory, b1, b2 kv.Locks) {
	claim := func(l kv.Locks, name string) func() (func() error, bool, error) {
		return func() (func() error, bool, error) { return l.TryClaim(name) }
	}
	release := try(t, "b1 claims plan 1", true, claim(b1, "1"))
	h, held, err := b2.ClaimHolder("1")
	if err != nil {
		t.Fatal(err)
	}
	if !b1.Leased() {
		if held {
			t.Errorf("ClaimHolder = %+v where claims are not shared", h)
		}
		again := try(t, "b2 claims plan 1, not shared", true, claim(b2, "1"))
		_, _ = release(), again()
		return
	}
	host, _ := os.Hostname()
	if !held || h.PID != os.Getpid() || h.Host != host || h.Left <= 0 {
		t.Errorf("ClaimHolder = %+v %v, want pid %d on %s", h, held, os.Getpid(), host)
	}
	try(t, "b2 claims plan 1, held by b1", false, claim(b2, "1"))
	other := try(t, "b2 claims plan 2", true, claim(b2, "2"))
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, held, err := b2.ClaimHolder("1"); held || err != nil {
		t.Errorf("ClaimHolder after the release: %v %v", held, err)
	}
	again := try(t, "b2 claims plan 1 after b1 let go", true, claim(b2, "1"))
	try(t, "b1 claims plan 1, now held by b2", false, claim(b1, "1"))
	_, _ = again(), other()
}

// releasedOnClose: what a client holds is free once it is closed.
func releasedOnClose(t *testing.T, _ LocksFactory, b1, b2 kv.Locks) {
	try(t, "b1 locks keystone", true, func() (func() error, bool, error) { return b1.TryLock("keystone") })
	try(t, "b1 takes the slot of 1", true, func() (func() error, bool, error) { return b1.TrySlot("node/a", 1) })
	try(t, "b1 claims plan 1", true, func() (func() error, bool, error) { return b1.TryClaim("1") })
	try(t, "b2 locks keystone, held by b1", false, func() (func() error, bool, error) { return b2.TryLock("keystone") })
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	try(t, "b2 locks keystone after b1 closed", true, func() (func() error, bool, error) { return b2.TryLock("keystone") })
	try(t, "b2 takes the slot of 1 after b1 closed", true, func() (func() error, bool, error) { return b2.TrySlot("node/a", 1) })
	try(t, "b2 claims plan 1 after b1 closed", true, func() (func() error, bool, error) { return b2.TryClaim("1") })
	select {
	case <-b2.Lost():
		t.Fatal("Lost closed with nothing lost")
	default:
	}
}

// crashedHolderExpires: the leases of a client that stopped renewing them
// (Crash) are refused to others until they expire, then granted.
func crashedHolderExpires(t *testing.T, f LocksFactory, b1, b2 kv.Locks) {
	try(t, "b1 locks keystone", true, func() (func() error, bool, error) { return b1.TryLock("keystone") })
	try(t, "b1 claims plan 1", true, func() (func() error, bool, error) { return b1.TryClaim("1") })
	f.Crash(b1)
	crashed := time.Now()
	try(t, "b2 claims plan 1 of a crashed holder", false, func() (func() error, bool, error) { return b2.TryClaim("1") })
	for {
		_, ok, err := b2.TryClaim("1")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Since(crashed) > f.ExpireWithin {
			t.Fatalf("the claim of a crashed holder did not expire within %s", f.ExpireWithin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	try(t, "b2 locks keystone of a crashed holder, expired", true, func() (func() error, bool, error) { return b2.TryLock("keystone") })
}
