package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// writeBatchBase writes a shell base whose run is runSh and whose batch
// script for run is batchSh, with meta and batch_max lines added to its
// meta.yaml; it returns its directory.
func writeBatchBase(t testing.TB, runSh, batchSh, extra string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pkg")
	files := map[string]string{
		"meta.yaml": "handler: shell\nactions: {run: run.sh}\nbatch: {run: batch.sh}\n" + extra +
			"inputs:\n  dir: {schema: str!}\n  token: {schema: str, value: \"\", sensitive: true}\n",
		"run.sh":   runSh,
		"batch.sh": batchSh,
	}
	for name, body := range files {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The batch script of the tests: one line per call in $dir/batches, then
// r0 failed, r1 left out of the result, every other member changed with an
// output; it prints the secret token, which must be masked.
const testBatchSh = `echo call >>"$(sed 's/.*"dir":"\([^"]*\)".*/\1/' "$SOLAR_BATCH")/batches"
echo "token is s3cr3t-tok"
res=$(sed 's/{"resource":"/\n/g' "$SOLAR_BATCH" | tail -n +2 | sed -n 's/^\([^"]*\)".*/\1/p' | grep -v '^r[01]$' |
	awk '{ printf "%s\"%s\": {\"changed\": true, \"outputs\": {\"dir\": \"x\"}}", sep, $1; sep = ", " }')
printf '{"members": {"r0": {"failed": true, "error": "r0 broke s3cr3t-tok"}%s}}' "${res:+, $res}" >"$SOLAR_RESULT"
`

// One batch runs every ready member; each member then is a task of its
// own: r0, failed in the batch, retries alone through run.sh and
// succeeds; r1, missing from the result, fails "no result from batch" and
// retries alone, failing again; the others succeed, are committed, and
// their attempt records name the batch and its members.
func TestRunBatchPerMember(t *testing.T) {
	const n = 6
	dir := writeBatchBase(t, `[ "$SOLAR_RESOURCE" = r1 ] && { echo "r1 alone fails" >&2; exit 1; }
echo "$SOLAR_RESOURCE" >>"$SOLAR_INPUT_DIR/alone"
`, testBatchSh, "meta: {retry: 1}\n")
	out := t.TempDir()
	path, uid := benchStore(t, "independent", n, dir, map[string]any{"dir": out, "token": "s3cr3t-tok"})
	var mu sync.Mutex
	var notes []string
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 10, PerNode: 1,
		Note: func(m string) { mu.Lock(); notes = append(notes, m); mu.Unlock() }}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(readText(t, filepath.Join(out, "batches")), "call"); got != 1 {
		t.Errorf("batch script ran %d times, want once", got)
	}
	if got := readText(t, filepath.Join(out, "alone")); got != "r0\n" {
		t.Errorf("run.sh ran alone for %q, want r0 only (r1 fails before it writes)", got)
	}
	for i := range n {
		id := fmt.Sprintf("r%d.run#0", i)
		st := states[id]
		switch i {
		case 0:
			if st.Status != StatusSuccess || st.Attempts != 2 {
				t.Errorf("%s = %s after %d attempts; want SUCCESS after 2 (batch, then alone)", id, st.Status, st.Attempts)
			}
		case 1:
			if st.Status != StatusError || st.Attempts != 2 || !strings.Contains(st.Err, "r1 alone fails") {
				t.Errorf("%s = %s %q after %d attempts; want ERROR from its lone retry", id, st.Status, st.Err, st.Attempts)
			}
		default:
			if st.Status != StatusSuccess || st.Attempts != 1 || !st.Changed {
				t.Errorf("%s = %+v; want SUCCESS changed in one attempt", id, st)
			}
		}
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"r0.run#0 attempt 1 failed: r0 broke ********; retrying", "r1.run#0 attempt 1 failed: " + noBatchResult + "; retrying", "ran as one batch"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "s3cr3t-tok") {
		t.Errorf("a note shows the secret:\n%s", joined)
	}
	view(t, path, func(tx *store.Tx) error {
		recs, err := AttemptRecords(tx, uid)
		if err != nil {
			return err
		}
		r0 := recs["r0.run#0"]
		if len(r0) != 2 || r0[0].Batch == "" || len(r0[0].BatchMembers) != n || r0[1].Batch != "" {
			t.Errorf("r0's records = %+v; want attempt 1 in a batch of %d, attempt 2 alone", r0, n)
		}
		if r5 := recs["r5.run#0"]; len(r5) != 1 || r5[0].Batch != r0[0].Batch {
			t.Errorf("r5's records = %+v; want one, in r0's batch", r5)
		}
		lg, err := ReadLog(tx, uid, "r5.run#0", 1, 0)
		if err != nil {
			return err
		}
		text := fmt.Sprint(lg.Lines)
		if !strings.Contains(text, "batch "+r0[0].Batch+" of 6: r0, r1, r2, r3, r4, r5") || !strings.Contains(text, "[batch] token is ********") || strings.Contains(text, "s3cr3t-tok") {
			t.Errorf("r5's log = %s; want the batch's head and its masked output, marked", text)
		}
		entries, err := staging.List(tx)
		if err != nil {
			return err
		}
		if len(entries) != 1 || entries[0].Resource != "r1" {
			t.Errorf("staged after the run: %d entries; want r1's alone (every other member committed)", len(entries))
		}
		return nil
	})
}

// A batch that exits non-zero without a result fails every member with its
// exit; without retries, each ends ERROR after one attempt.
func TestRunBatchFailsWhole(t *testing.T) {
	dir := writeBatchBase(t, "exit 0\n", "echo 'pm is locked' >&2; exit 7\n", "batch_max: 3\n")
	path, uid := benchStore(t, "independent", 5, dir, map[string]any{"dir": t.TempDir()})
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 10, PerNode: 1}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	batches := map[string]int{}
	view(t, path, func(tx *store.Tx) error {
		recs, err := AttemptRecords(tx, uid)
		for id, list := range recs {
			if len(list) == 1 {
				batches[list[0].Batch]++
			} else {
				t.Errorf("%s has %d attempts", id, len(list))
			}
		}
		return err
	})
	for id, st := range states {
		if st.Status != StatusError || st.Attempts != 1 || !strings.Contains(st.Err, "exit status 7: pm is locked") {
			t.Errorf("%s = %s %q after %d; want ERROR with the batch's exit", id, st.Status, st.Err, st.Attempts)
		}
	}
	// batch_max 3: two batches, of 3 and 2 (none alone: "" absent).
	if len(batches) != 2 || batches[""] != 0 {
		t.Errorf("batches = %v; want two (3 and 2 members)", batches)
	}
}

func readText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A batch takes one start of its rate per member: a batch of 6 at
// api:5/s with burst 1 cannot start before the sixth member's start is
// due, a second after the first.
func TestRunBatchTakesARateStartPerMember(t *testing.T) {
	const n = 6
	dir := writeBatchBase(t, "exit 0\n", `printf '{"members": {}}' >/dev/null
res=$(sed 's/{"resource":"/\n/g' "$SOLAR_BATCH" | tail -n +2 | sed -n 's/^\([^"]*\)".*/\1/p' |
	awk '{ printf "%s\"%s\": {\"changed\": true}", sep, $1; sep = ", " }')
printf '{"members": {%s}}' "$res" >"$SOLAR_RESULT"
`, "meta: {rate: [\"api:5/s\"]}\n")
	path, uid := benchStore(t, "independent", n, dir, map[string]any{"dir": t.TempDir()})
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 10, PerNode: 1}
	start := time.Now()
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for id, st := range states {
		if st.Status != StatusSuccess {
			t.Errorf("%s ended %s: %s", id, st.Status, st.Err)
		}
	}
	if took < 900*time.Millisecond {
		t.Errorf("a batch of %d at 5/s (burst 1) ran in %v: its members took no starts of the rate", n, took)
	}
}
