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
