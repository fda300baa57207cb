package sshdtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Reachable lets every user traverse and list dir and each directory above
// it up to the temp root, so that the test user can reach files a test
// running as root keeps there: go test makes t.TempDir() and its parent
// 0700. It adds read and search permission and takes nothing away. dir must
// lie under os.TempDir(); Reachable never opens up directories outside it.
func Reachable(t testing.TB, dir string) {
	t.Helper()
	root := filepath.Clean(os.TempDir())
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		t.Fatalf("sshdtest: Reachable(%s): not under the temp root %s", dir, root)
	}
	for d := dir; d != root; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, fi.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid)|0o055); err != nil {
			t.Fatal(err)
		}
	}
}
