package ssh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
)

// A base holding a huge file is refused before the file is read: a sparse
// file of 64 GiB takes no disk, and reading it whole ended the run (the
// runtime cannot allocate it) instead of failing the task.
func TestHugeBaseFileRefused(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	base := newBase(t, "true")
	f, err := os.Create(filepath.Join(base, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	var runErr error
	within(t, time.Minute, func() { _, runErr = sh.Run(context.Background(), request(base, "n1")) })
	want := fmt.Sprintf("node n1: cannot pack the base: base %s is larger than 64 MiB: bases hold scripts, not payloads", base)
	if runErr == nil || runErr.Error() != want {
		t.Fatalf("Run: %v\nwant %q", runErr, want)
	}
}
