package torture

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// checkOutput fails on a panic, an internal error or a secret in a
// command's output.
func checkOutput(t *testing.T, args []string, out string) {
	t.Helper()
	for _, bad := range []string{"panic:", "goroutine ", "internal error", "torture-secret-"} {
		if strings.Contains(out, bad) {
			t.Fatalf("solar %s printed %q:\n%s", strings.Join(args, " "), bad, out)
		}
	}
}

// checkOverlap fails if any script found its resource's lock taken.
func checkOverlap(t *testing.T, work string) {
	t.Helper()
	if log, bad := overlapLog(t, work); bad {
		t.Fatalf("two attempts of one resource ran at once:\n%s", log)
	}
}

// overlapLog returns the scripts' log, and whether a script found its
// resource's lock taken.
func overlapLog(t *testing.T, work string) (string, bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(work, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(raw), bytes.Contains(raw, []byte("OVERLAP"))
}

func logLen(t *testing.T, work string) int {
	raw, err := os.ReadFile(filepath.Join(work, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(raw)
}

// checkFinishedStayDone fails if a task started again after the store
// showed it finished.
func checkFinishedStayDone(t *testing.T, work string, finished map[string]int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(work, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for id, off := range finished {
		if bytes.Contains(raw[off:], []byte("start "+id+" ")) {
			t.Fatalf("%s ran again after the store showed it SUCCESS:\n%s", id, raw)
		}
	}
}

// scriptsRunning reports whether some script holds its lock now.
func scriptsRunning(work string) bool {
	locks, _ := filepath.Glob(filepath.Join(work, "*.lock"))
	for _, l := range locks {
		if held(l) {
			return true
		}
	}
	return false
}

// held reports whether another process holds an exclusive flock on name.
func held(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
