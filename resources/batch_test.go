package resources

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/bases"
)

// A base's batch scripts are checked where the base is read: the action
// exists, the script is a file of the base, the handler is shell, and
// batch_max is a real bound. Each error is one line naming the base, the
// action and the file.
func TestLoadBaseBatchErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		meta string
		want []string
	}{
		{name: "unknown action", meta: "actions: {run: run.sh}\nbatch: {install: run_batch.sh}\n",
			want: []string{"base bad", "run_batch.sh", `action "install"`, "not an action of the base"}},
		{name: "script missing", meta: "actions: {run: run.sh}\nbatch: {run: run_batch.sh}\n",
			want: []string{"base bad", `action "run"`, "script run_batch.sh does not exist"}},
		{name: "empty script", meta: "actions: {run: run.sh}\nbatch: {run: \"\"}\n",
			want: []string{"base bad", `batch for action "run" has no script`}},
		{name: "ansible", meta: "handler: ansible\nactions: {run: run.sh}\nbatch: {run: run.sh}\n",
			want: []string{"base bad", `action "run" cannot be batched`, "ansible"}},
		{name: "batch_max one", meta: "actions: {run: run.sh}\nbatch: {run: run.sh}\nbatch_max: 1\n",
			want: []string{"base bad", "batch_max 1", "at least 2"}},
		{name: "batch_max alone", meta: "actions: {run: run.sh}\nbatch_max: 5\n",
			want: []string{"base bad", "batch_max but no batch scripts"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bad")
			writeFiles(t, dir, map[string]string{"meta.yaml": tt.meta, "run.sh": "exit 0\n"})
			b, err := LoadBase(dir)
			if b != nil {
				t.Errorf("got a base along with the error")
			}
			wantErr(t, err, ErrBase, tt.want...)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines; the CLI prints one line", err)
			}
		})
	}
}

// A good batch declaration is kept on the base, survives the resource
// record's JSON, and its script is part of the base's content, so that
// changing the script changes the digest.
func TestLoadBaseBatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pkg")
	writeFiles(t, dir, map[string]string{
		"meta.yaml":    "actions: {run: run.sh, remove: run.sh}\nbatch: {run: run_batch.sh}\nbatch_max: 8\n",
		"run.sh":       "exit 0\n",
		"run_batch.sh": "exit 0\n",
	})
	b := loadBase(t, dir)
	if s, ok := b.BatchScript("run"); !ok || s != "run_batch.sh" || b.BatchMax != 8 {
		t.Fatalf("batch = %v, max %d; want run: run_batch.sh, max 8", b.Batch, b.BatchMax)
	}
	if _, ok := b.BatchScript("remove"); ok {
		t.Errorf("remove has a batch script; only run declared one")
	}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var got Base
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Batch["run"] != "run_batch.sh" || got.BatchMax != 8 {
		t.Errorf("after JSON: batch %v max %d", got.Batch, got.BatchMax)
	}
	c, err := bases.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.File("run_batch.sh"); !ok {
		t.Fatalf("bases.Read left out the batch script")
	}
	writeFiles(t, dir, map[string]string{"run_batch.sh": "exit 1\n"})
	if b2 := loadBase(t, dir); b2.Digest == b.Digest {
		t.Errorf("digest unchanged after the batch script changed")
	}
}
