package handler

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// batchRequest is a batch of two members, pkg1 (whose pw is secret) and
// pkg2, for a batch script of body.
func batchRequest(t *testing.T, body string) Request {
	req := newRequest(t, body)
	req.Resource, req.Task = "", "batch-1"
	req.Members = []Member{
		{Resource: "pkg1", Task: "pkg1.run", Inputs: map[string]any{"name": "vim", "pw": "hunter2secret"}, Sensitive: map[string]bool{"pw": true}},
		{Resource: "pkg2", Task: "pkg2.run", Inputs: map[string]any{"name": "git", "n": int64(3)}},
	}
	return req
}

// The batch script gets the document in the file SOLAR_BATCH (and
// SOLAR_INPUTS) names, every member's inputs with secrets, no
// SOLAR_INPUT_* variables; what it prints is masked with every member's
// secrets, and its result comes back by member.
func TestShellBatch(t *testing.T) {
	req := batchRequest(t, `
[ "$SOLAR_BATCH" = "$SOLAR_INPUTS" ] || { echo "SOLAR_BATCH differs" >&2; exit 3; }
env | grep -q '^SOLAR_INPUT_' && { echo "has input vars" >&2; exit 4; }
cp "$SOLAR_BATCH" doc.json
echo "installing with pw hunter2secret"
cat >"$SOLAR_RESULT" <<'J'
{"members": {"pkg1": {"changed": false, "outputs": {"version": 2}}, "pkg2": {"failed": true, "error": "no git for hunter2secret"}}}
J
`)
	res, err := (&Shell{}).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var doc struct {
		Action  string `json:"action"`
		Members []struct {
			Resource, Task string
			Inputs         map[string]any
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(req.BaseDir, "doc.json"))), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Action != "run" || len(doc.Members) != 2 || doc.Members[0].Resource != "pkg1" || doc.Members[0].Task != "pkg1.run" ||
		doc.Members[0].Inputs["pw"] != "hunter2secret" || doc.Members[1].Inputs["n"] != float64(3) {
		t.Errorf("document = %+v", doc)
	}
	if strings.Contains(res.Stdout, "hunter2secret") || !strings.Contains(res.Stdout, "installing with pw ********") {
		t.Errorf("stdout not masked: %q", res.Stdout)
	}
	p1, p2 := res.Members["pkg1"], res.Members["pkg2"]
	if p1.Failed || p1.Changed || p1.Outputs["version"] != int64(2) {
		t.Errorf("pkg1 = %+v; want unchanged with version 2", p1)
	}
	if !p2.Failed || p2.Error != "no git for ********" {
		t.Errorf("pkg2 = %+v; want failed with a masked error", p2)
	}
}

// A batch that exits non-zero with a result still reports its members; one
// that exits non-zero without one fails with its exit, members nil; a
// result naming a stranger is a bad result.
func TestShellBatchEnds(t *testing.T) {
	for _, tt := range []struct {
		name, body  string
		wantErr     error
		wantMembers int
	}{
		{"exit with result", `echo '{"members": {"pkg1": {"changed": true}}}' >"$SOLAR_RESULT"; exit 1`, ErrFailed, 1},
		{"exit without result", `exit 2`, ErrFailed, 0},
		{"no result", `exit 0`, nil, 0},
		{"stranger", `echo '{"members": {"pkg9": {}}}' >"$SOLAR_RESULT"`, ErrBadResult, 0},
		{"unknown field", `echo '{"members": {"pkg1": {"chnged": true}}}' >"$SOLAR_RESULT"`, ErrBadResult, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := (&Shell{}).Run(context.Background(), batchRequest(t, tt.body))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			}
			if len(res.Members) != tt.wantMembers {
				t.Errorf("members = %v; want %d", res.Members, tt.wantMembers)
			}
		})
	}
}

// A host that cannot run batches gets none: the caller runs the members
// one by one.
func TestShellBatchNeedsBatchHost(t *testing.T) {
	_, err := (&Shell{Transport: plainTransport{}}).Run(context.Background(), batchRequest(t, `exit 0`))
	if !errors.Is(err, ErrNoBatch) {
		t.Fatalf("err = %v; want ErrNoBatch", err)
	}
}

// plainTransport opens a Host that is not a BatchHost.
type plainTransport struct{}

type plainHost struct{ Host }

func (plainTransport) Open(ctx context.Context, loc string) (Host, error) {
	h, _ := defaultLocal.Open(ctx, loc)
	return plainHost{h}, nil
}
