package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/orch/handler"
)

// within runs each of fns at once and waits for all of them, failing the
// test if one still runs after d: a key read that blocks (a FIFO) must
// fail the test, not hang it.
func within(t *testing.T, d time.Duration, fns ...func()) {
	t.Helper()
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v: a key read blocks", d)
	}
}

// An ssh_key that is a device, a huge (sparse) file or a FIFO fails its
// own node's attempts and checks at once, naming the node and the file,
// while a node with a good key works beside them. The whole key used to be
// read: /dev/zero and a 3 GiB file until memory ran out, killing the run;
// a FIFO blocked forever.
func TestBadKeyFileFailsOnlyItsNode(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A FIFO in the place of a default key, with no agent: the key is
	// found by HOME, not by ssh_key.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	defaultKey := filepath.Join(home, ".ssh", "id_ed25519")
	if err := syscall.Mkfifo(defaultKey, 0o600); err != nil {
		t.Fatal(err)
	}
	const fix = ": give the path of a private key file"
	cases := []struct{ name, key, want string }{
		{"zero", "/dev/zero", "node zero: ssh_key /dev/zero: not a regular file (a device)" + fix},
		{"big", big, fmt.Sprintf("node big: ssh_key %s: too large: %d bytes, more than 65536: a private key is a few KiB; give the path of a private key file", big, 3<<30)},
		{"fifo", fifo, fmt.Sprintf("node fifo: ssh_key %s: not a regular file (a FIFO)%s", fifo, fix)},
		{"default", "", fmt.Sprintf("node default: no key to log in with: set the node's ssh_key, load a key into ssh-agent, or create ~/.ssh/id_ed25519; %s: not a regular file (a FIFO)%s", defaultKey, fix)},
	}
	nodes := map[string]*Node{"good": node("good", srv)}
	for _, c := range cases {
		n := node(c.name, srv)
		n.KeyPath = c.key
		nodes[c.name] = n
	}
	env := map[string]string{"HOME": home}
	tr, sh := newTransport(t, nodes, Config{Getenv: func(k string) string { return env[k] }})

	runErrs := make([]error, len(cases))
	checkErrs := make([]error, len(cases))
	var goodRun, goodCheck error
	fns := []func(){
		func() { _, goodRun = sh.Run(context.Background(), request(newBase(t, "true"), "good")) },
		func() { _, _, goodCheck = tr.Check(context.Background(), nodes["good"]) },
	}
	for i, c := range cases {
		fns = append(fns,
			func() { _, runErrs[i] = sh.Run(context.Background(), request(newBase(t, "true"), c.name)) },
			func() { _, _, checkErrs[i] = tr.Check(context.Background(), nodes[c.name]) })
	}
	within(t, time.Minute, fns...)

	if goodRun != nil || goodCheck != nil {
		t.Errorf("the node with a good key: run %v, check %v", goodRun, goodCheck)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := runErrs[i]; err == nil || err.Error() != c.want || !errors.Is(err, ErrLogin) || !errors.Is(err, handler.ErrFailed) {
				t.Errorf("Run: %v\nwant %q", err, c.want)
			}
			if err := checkErrs[i]; err == nil || err.Error() != c.want {
				t.Errorf("Check: %v\nwant %q", err, c.want)
			}
		})
	}
}
