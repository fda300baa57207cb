package kvtest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/solarops/solar/store/kv"
)

// rates returns the clients' kv.Rates: every backend's locks have them.
func rates(t *testing.T, ls ...kv.Locks) []kv.Rates {
	t.Helper()
	var out []kv.Rates
	for _, l := range ls {
		r, ok := l.(kv.Rates)
		if !ok {
			t.Fatalf("%T has no shared rates (kv.Rates)", l)
		}
		out = append(out, r)
	}
	return out
}

func reserve(t *testing.T, r kv.Rates, name string, every time.Duration, burst, n int) time.Duration {
	t.Helper()
	w, err := r.Reserve(context.Background(), name, every, burst, n)
	if err != nil {
		t.Fatalf("Reserve %s: %v", name, err)
	}
	return w
}

// rateShared checks that two clients take from one rate: the burst goes
// at once, whoever takes it, and the next start of either waits for the
// starts of both; another name is another rate.
func rateShared(t *testing.T, _ LocksFactory, b1, b2 kv.Locks) {
	rs := rates(t, b1, b2)
	const every = 10 * time.Second // far longer than the test takes
	if w := reserve(t, rs[0], "api", every, 2, 1); w != 0 {
		t.Fatalf("first start of a fresh rate waits %s", w)
	}
	if w := reserve(t, rs[1], "api", every, 2, 1); w != 0 {
		t.Fatalf("second start of burst 2, from the other client, waits %s", w)
	}
	// The third start waits about one interval; the fourth, taking two
	// starts at once (a batch), about three.
	if w := reserve(t, rs[0], "api", every, 2, 1); w < every-time.Second || w > every {
		t.Fatalf("third start waits %s, want about %s", w, every)
	}
	if w := reserve(t, rs[1], "api", every, 2, 2); w < 3*every-time.Second || w > 3*every {
		t.Fatalf("two more starts wait %s, want about %s", w, 3*every)
	}
	if w := reserve(t, rs[1], "other", every, 1, 1); w != 0 {
		t.Fatalf("another rate's first start waits %s", w)
	}
}

// rateContention checks that starts taken at once from two clients, from
// many goroutines, are spaced by the rate: sorted, each wait is at least
// one interval after the one before, less the time the calls took.
func rateContention(t *testing.T, _ LocksFactory, b1, b2 kv.Locks) {
	rs := rates(t, b1, b2)
	const every, n = 200 * time.Millisecond, 16
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		wg.Go(func() {
			w, err := rs[i%2].Reserve(context.Background(), "busy", every, 1, 1)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			starts = append(starts, time.Now().Add(w))
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(began)
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	if len(starts) != n {
		t.Fatalf("%d reservations of %d", len(starts), n)
	}
	// A start is told after its call returns: the spacing seen here can
	// be short by the time the calls took at most.
	for i := 1; i < n; i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < every-took {
			t.Fatalf("starts %d and %d are %s apart, want %s (calls took %s)", i, i+1, gap, every, took)
		}
	}
	if span := starts[n-1].Sub(starts[0]); span < (n-1)*every-took {
		t.Fatalf("%d starts span %s, want at least %s", n, span, (n-1)*every)
	}
}
