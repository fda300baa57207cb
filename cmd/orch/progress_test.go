package orch

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solarops/solar/orch"
)

// countingWriter records what progress writes and how many writes it took.
type countingWriter struct {
	mu     sync.Mutex
	b      strings.Builder
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.b.Write(p)
}

func (w *countingWriter) state() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String(), w.writes
}

// TestProgressBuffered checks that a run of many quick tasks does not
// cost a write per line, and that a line still shows up while the run goes
// on, within a few flush periods, not only when it ends.
func TestProgressBuffered(t *testing.T) {
	w := &countingWriter{}
	p := newProgress(w, false, false, time.Now())
	defer p.end()
	const n = 1000
	for i := range n {
		p.task("t.run#"+string(rune('0'+i%10)), orch.State{Status: orch.StatusNoop})
	}
	deadline := time.Now().Add(20 * flushEvery)
	for {
		out, writes := w.state()
		if strings.Count(out, "\n") == n {
			if writes > n/10 {
				t.Fatalf("%d lines took %d writes; want them buffered", n, writes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d progress lines written %s after the last one; want all within a few %s", strings.Count(out, "\n"), n, 20*flushEvery, flushEvery)
		}
		time.Sleep(flushEvery / 5)
	}
	p.note("a note")
	if out, _ := w.state(); !strings.HasSuffix(out, "a note\n") {
		t.Fatalf("a note waited in the buffer; output ends %q", out[max(0, len(out)-40):])
	}
}

// TestBigPlanSettings checks that only a big plan collects more often and
// has a memory limit, and never against the operator's GOGC or GOMEMLIMIT.
func TestBigPlanSettings(t *testing.T) {
	for _, setting := range []struct {
		env   string
		of    func(n int, getenv func(string) string) int64
		atBig func(n int) int64 // what a plan of n tasks, big, gets
	}{
		{"GOGC", func(n int, getenv func(string) string) int64 { return int64(gcPercentFor(n, getenv)) }, func(int) int64 { return 75 }},
		{"GOMEMLIMIT", memoryLimitFor, func(n int) int64 { return int64(n) * heapPerTask }},
	} {
		none := func(string) string { return "" }
		set := func(k string) string {
			if k == setting.env {
				return "1"
			}
			return ""
		}
		for _, tt := range []struct {
			n      int
			getenv func(string) string
			want   int64
		}{{10, none, 0}, {bigPlan - 1, none, 0}, {bigPlan, none, setting.atBig(bigPlan)}, {100000, none, setting.atBig(100000)}, {100000, set, 0}} {
			if got := setting.of(tt.n, tt.getenv); got != tt.want {
				t.Errorf("%s for %d tasks (%s=%q) = %d, want %d", setting.env, tt.n, setting.env, tt.getenv(setting.env), got, tt.want)
			}
		}
	}
}
