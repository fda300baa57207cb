package orch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Two actions of one resource never run at once. Within a run the walker's
// per-resource semaphore sees to it; across runs (two plans run by two
// processes can share a task that rules pulled into both) each attempt
// holds an exclusive lock on a file named after its resource, next to the
// store. The kernel drops the lock when the runner dies, and the runner's
// scripts, whose survivors the next runner kills first, never inherit it.

// lockPoll is how often a task waiting for another run's lock looks again.
const lockPoll = 50 * time.Millisecond

// lockResource takes the lock of resource for the store at storePath,
// waiting while another process holds it, until ctx is done.
func lockResource(ctx context.Context, storePath, resource string) (unlock func(), err error) {
	dir := storePath + ".locks"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("resource lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, resource), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("resource lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("resource lock of %s: %w", resource, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
