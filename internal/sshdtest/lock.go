package sshdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockMachine takes an exclusive lock shared by every process using this
// package on this machine, and returns its release. go test runs the tests
// of several packages in parallel processes; they change machine-wide
// state (the user database, network interfaces) only while holding it.
func lockMachine() (unlock func(), err error) {
	name := filepath.Join(os.TempDir(), "solar-sshdtest.lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// Closing the file releases the lock, also when the process dies.
	return func() { f.Close() }, nil
}
