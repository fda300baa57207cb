package proc

import (
	"os"
	"os/exec"
	"testing"
)

// TestStart: this process has a start time; a child started later has a
// later one (or the same tick); a pid that does not exist cannot be read.
func TestStart(t *testing.T) {
	self, zombie, ok := Start(os.Getpid())
	if !ok || self <= 0 || zombie {
		t.Fatalf("Start(self) = %d, %v, %v", self, zombie, ok)
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	child, _, ok := Start(cmd.Process.Pid)
	if !ok || child < self {
		t.Errorf("child start %d, ok %v; want at or after %d", child, ok, self)
	}
	if _, _, ok := Start(1 << 30); ok {
		t.Error("a pid that does not exist was read")
	}
}
