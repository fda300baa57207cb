package orch

import (
	"runtime/debug"
	"testing"
)

// TestGCSettings checks that a small plan collects less often than Go's
// default and a big one more often, each with a soft memory limit, and
// never against the operator's GOGC or GOMEMLIMIT.
func TestGCSettings(t *testing.T) {
	none := func(string) string { return "" }
	setTo := func(name string) func(string) string {
		return func(k string) string {
			if k == name {
				return "1"
			}
			return ""
		}
	}
	for _, tt := range []struct {
		n         int
		getenv    func(string) string
		percent   int
		limit     int64
		operators string
	}{
		{10, none, 400, minMemoryLimit, ""},
		{bigPlan - 1, none, 400, minMemoryLimit, ""},
		{bigPlan, none, 75, minMemoryLimit, ""},
		{100000, none, 75, 100000 * heapPerTask, ""},
		{100000, setTo("GOGC"), 0, 100000 * heapPerTask, "GOGC"},
		{10, setTo("GOMEMLIMIT"), 400, 0, "GOMEMLIMIT"},
	} {
		percent, limit := GCSettings(tt.n, tt.getenv)
		if percent != tt.percent || limit != tt.limit {
			t.Errorf("GCSettings(%d tasks, operator set %q) = %d, %d; want %d, %d", tt.n, tt.operators, percent, limit, tt.percent, tt.limit)
		}
	}
}

func TestTuneGCRestores(t *testing.T) {
	before, beforeLimit := debug.SetGCPercent(123), debug.SetMemoryLimit(1<<40)
	defer func() {
		debug.SetGCPercent(before)
		debug.SetMemoryLimit(beforeLimit)
	}()
	restore := TuneGC(10, func(string) string { return "" })
	if got := debug.SetGCPercent(-2); got != 400 {
		t.Errorf("GOGC while tuned = %d, want 400", got)
	}
	restore()
	if got := debug.SetGCPercent(-2); got != 123 {
		t.Errorf("GOGC after restore = %d, want 123", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("memory limit after restore = %d, want %d", got, int64(1<<40))
	}
}
