package ssh

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
)

// A base upload on a slow, lossless line takes many keepalive periods,
// and a keepalive sent meanwhile waits behind the upload's bytes: the
// connection is alive as long as the node keeps answering, and the task
// succeeds. Declaring it dead when one keepalive went unanswered for a
// period made such a base impossible to ship (issue 27, D6: a 1 MiB base
// at 256 kbit with 10 s keepalives).
func TestSlowLinkUpload(t *testing.T) {
	link := sshdtest.NetNS(t, "slow")
	srv := sshdtest.Start(t, sshdtest.Options{IP: link.NodeIP, NetNS: link.NS})
	link.Shape(t, "256kbit")
	out := shared(t)
	base := newBase(t, `wc -c <payload >"$SOLAR_INPUT_OUT/size"`)
	// Random bytes: nothing on the way can make them smaller. At 256 kbit
	// they take about 17 s, eight keepalive periods, and a keepalive waits
	// behind 3 to 6 s of them.
	payload := make([]byte, 512<<10)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "payload"), payload, 0o644); err != nil {
		t.Fatal(err)
	}
	partialUpload(t, srv, base)
	_, sh := newTransport(t, map[string]*Node{"slow": node("slow", srv)}, Config{Keepalive: 2 * time.Second, DialTimeout: 10 * time.Second})
	req := request(base, "slow")
	req.Inputs = map[string]any{"out": out}
	start := time.Now()
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run after %v: %v", time.Since(start), err)
	}
	t.Logf("the upload and the task took %v", time.Since(start))
	if got := readFile(t, filepath.Join(out, "size")); got != "524288\n" {
		t.Errorf("the node's payload has %q bytes, want 524288", got)
	}
}

// A slow line cut in the middle of an upload is still a dead connection:
// the bytes stop arriving, the keepalive goes unanswered, and the attempt
// fails naming the node, as on a fast line.
func TestSlowLinkCutDuringUpload(t *testing.T) {
	link := sshdtest.NetNS(t, "slowcut")
	srv := sshdtest.Start(t, sshdtest.Options{IP: link.NodeIP, NetNS: link.NS})
	link.Shape(t, "256kbit")
	base := newBase(t, "true")
	payload := make([]byte, 1<<20) // half a minute at 256 kbit
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "payload"), payload, 0o644); err != nil {
		t.Fatal(err)
	}
	_, sh := newTransport(t, map[string]*Node{"slow": node("slow", srv)}, Config{Keepalive: 2 * time.Second, DialTimeout: 10 * time.Second})
	ended := make(chan error, 1)
	go func() {
		_, err := sh.Run(context.Background(), request(base, "slow"))
		ended <- err
	}()
	// The node is unpacking this base's payload: the upload is under way.
	uploadUnderWay(t, partialUpload(t, srv, base), ended)
	link.Cut(t)
	select {
	case err := <-ended:
		want := fmt.Sprintf("node slow (%s): connection lost: no answer to a keepalive", srv.Addr())
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Run: %v, want %q", err, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cut went unnoticed for a minute")
	}
}

// partialUpload is the pattern of the directories an upload of base to srv
// unpacks into before it is complete. An upload cut short leaves them on
// the node: they are removed when t ends.
// uploadUnderWay waits until the node unpacks the payload, the last of a
// base's top-level entries, in a partial upload directory matching
// partial, and returns that directory; it fails the test if the attempt
// (whose error ended gives) ends first, or after 30 s.
func uploadUnderWay(t *testing.T, partial string, ended <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(partial, "payload")); len(m) > 0 {
			return filepath.Dir(m[0])
		}
		select {
		case err := <-ended:
			t.Fatalf("Run ended before the upload was seen: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no upload under way after 30s (%s)", partial)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func partialUpload(t *testing.T, srv *sshdtest.Server, base string) string {
	t.Helper()
	packed, err := packBase(base)
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(srv.Home, ".cache", "solar", "bases", ".upload-"+packed.hash+".*")
	t.Cleanup(func() {
		m, _ := filepath.Glob(partial)
		for _, d := range m {
			os.RemoveAll(d)
		}
	})
	return partial
}
