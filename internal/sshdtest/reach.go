package sshdtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Reachable lets the test user traverse dir and its parents up to the
// test's own temp root (go test makes both 0700).
func Reachable(t testing.TB, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
