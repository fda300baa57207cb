package kv

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestGCRAWindow checks the property Rates promise: callers that start
// when told, arriving at random times and taking n starts each, never
// put more than burst + ⌊w/every⌋ starts in a window of length w.
func TestGCRAWindow(t *testing.T) {
	cases := []struct {
		every time.Duration
		burst int
		n     int
	}{
		{100 * time.Millisecond, 1, 1},
		{100 * time.Millisecond, 5, 1},
		{time.Second / 3, 2, 1},
		{10 * time.Millisecond, 1, 3},
		{time.Minute / 7, 4, 2},
	}
	for _, c := range cases {
		rng := rand.New(rand.NewPCG(uint64(c.burst), uint64(c.every)))
		var tat time.Time
		now := time.Unix(1_700_000_000, 0)
		var starts []time.Time
		for range 2000 {
			// Arrivals in bursts and lulls: sometimes many at once.
			if rng.IntN(3) == 0 {
				now = now.Add(time.Duration(rng.Int64N(int64(4 * c.every))))
			}
			var wait time.Duration
			tat, wait = GCRATake(tat, now, c.every, c.burst, c.n)
			for range c.n {
				starts = append(starts, now.Add(wait))
			}
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		for _, w := range []time.Duration{c.every, time.Second, 10 * c.every, time.Minute} {
			limit := c.burst + int(w/c.every)
			if c.n > 1 {
				// n starts are taken together: a window may catch all
				// of the last group.
				limit += c.n - 1
			}
			j := 0
			for i := range starts {
				for j < len(starts) && !starts[j].After(starts[i].Add(w)) {
					j++
				}
				if got := j - i; got > limit {
					t.Fatalf("every %s burst %d n %d: %d starts in [%s, +%s], want at most %d", c.every, c.burst, c.n, got, starts[i].Format(time.StampMicro), w, limit)
				}
			}
		}
	}
}

// TestGCRAFirstFree checks that a rate never taken lets burst starts
// through at once, and the next waits one interval.
func TestGCRAFirstFree(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var tat time.Time
	for i := range 3 {
		var wait time.Duration
		tat, wait = GCRATake(tat, now, time.Second, 3, 1)
		if wait != 0 {
			t.Fatalf("start %d of burst 3 waits %s", i+1, wait)
		}
	}
	if _, wait := GCRATake(tat, now, time.Second, 3, 1); wait != time.Second {
		t.Fatalf("4th start waits %s, want 1s", wait)
	}
}
