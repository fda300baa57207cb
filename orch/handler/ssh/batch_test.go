package ssh

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/orch/handler"
)

// A batch runs on a node as one attempt: its script finds the document in
// SOLAR_BATCH, the file SOLAR_INPUTS names too, with every member's
// inputs, and its result comes back by member.
func TestRemoteBatch(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `[ -n "$SOLAR_BATCH" ] && [ "$SOLAR_BATCH" = "$SOLAR_INPUTS" ] || { echo "SOLAR_BATCH is not the inputs file" >&2; exit 3; }
cp "$SOLAR_BATCH" "$(cat "$SOLAR_BATCH" | sed -n 's/.*"out":"\([^"]*\)".*/\1/p' | head -n 1)/doc.json"
printf '{"members": {"p1": {"changed": true}, "p2": {"failed": true, "error": "broken"}}}' >"$SOLAR_RESULT"
`)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Resource, req.Task = "", "batch-1"
	req.Members = []handler.Member{
		{Resource: "p1", Task: "p1.run", Inputs: map[string]any{"out": out, "name": "vim"}},
		{Resource: "p2", Task: "p2.run", Inputs: map[string]any{"out": out, "name": "git"}},
	}
	res, err := sh.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, res.Stderr)
	}
	doc := readFile(t, filepath.Join(out, "doc.json"))
	if !strings.Contains(doc, `"resource":"p1"`) || !strings.Contains(doc, `"name":"git"`) {
		t.Errorf("document = %s; want both members with their inputs", doc)
	}
	if p1, p2 := res.Members["p1"], res.Members["p2"]; !p1.Changed || p1.Failed || !p2.Failed || p2.Error != "broken" {
		t.Errorf("members = %+v; want p1 changed, p2 failed \"broken\"", res.Members)
	}
}

// A login shell that runs POSIX sh (sh, dash, bash) takes the wrapper's
// text itself; any other has it run by /bin/sh. Both run the attempt.
func TestWrapperUnderEitherLoginShell(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		direct      bool
	}{
		{"sh", "", true},
		{"other", "SetEnv SHELL=/usr/bin/fish", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2", Extra: tt.extra})
			out := shared(t)
			base := newBase(t, `echo ran >"$SOLAR_INPUT_OUT/ran"
`)
			tr, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
			req := request(base, "n1")
			req.Inputs = map[string]any{"out": out}
			if _, err := sh.Run(context.Background(), req); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := strings.TrimSpace(readFile(t, filepath.Join(out, "ran"))); got != "ran" {
				t.Errorf("the script wrote %q", got)
			}
			p := tr.pool(node("n1", srv))
			p.mu.Lock()
			direct := len(p.conns) == 1 && bytes.Equal(p.conns[0].guard.wrapper, wrapperDirect)
			p.mu.Unlock()
			if direct != tt.direct {
				t.Errorf("the login shell ran the wrapper itself: %v, want %v", direct, tt.direct)
			}
		})
	}
}
