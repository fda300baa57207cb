package ssh

import (
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
