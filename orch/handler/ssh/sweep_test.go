package ssh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
)

// nodeProcess is a process of the node's login user, in a group of its
// own, that lives until the test ends.
type nodeProcess struct {
	pid, group, start int
}

func startNodeProcess(t *testing.T, login string) nodeProcess {
	t.Helper()
	u, err := user.Lookup(login)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	f := statFields(t, cmd.Process.Pid)
	return nodeProcess{pid: cmd.Process.Pid, group: mustAtoi(f[2]), start: mustAtoi(f[19])}
}

// randomHex is a name no other test uses on the shared node account.
func randomHex(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// The setup of a run on a node sweeps what attempts and uploads that died
// left in ~/.cache/solar more than an hour ago: an upload cut short whose
// setup shell is gone, the records of attempts with no live process
// left, with the notes of their stops, and notes with no record. What is
// younger, an upload whose shell lives, and the record of an attempt
// whose shell or group lives (a stop's note marking a later member of the
// group as a stranger's), stay. Before, all of it stayed until the next
// attempt of the same resource, or for ever.
func TestSetupSweepsOldLeftovers(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	run := func() {
		t.Helper()
		// A new Transport is a new run: the node's setup runs again.
		_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
		if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
			t.Fatal(err)
		}
	}
	// The first run makes the cache's directories as the node's user.
	run()
	cache := filepath.Join(srv.Home, ".cache", "solar")
	uid := lookupUID(t, srv.User)
	boot := strings.TrimSpace(readFile(t, "/proc/sys/kernel/random/boot_id"))
	live := startNodeProcess(t, srv.User)
	const dead = 999999999 // above any pid_max
	old := time.Now().Add(-2 * time.Hour)

	type entry struct {
		path, content string // content "" is a directory
		old, gone     bool
	}
	var entries []entry
	add := func(path, content string, old, gone bool) {
		entries = append(entries, entry{path, content, old, gone})
	}
	upload := filepath.Join(cache, "bases", ".upload-"+randomHex(t))
	add(upload+fmt.Sprintf(".%d.aaaaaa", dead), "", true, true)
	add(upload+fmt.Sprintf(".%d.aaaaaa.err", dead), "tar: unexpected end of file\n", true, true)
	add(upload+".Zq81xB", "", true, true) // named before names held the pid
	add(upload+fmt.Sprintf(".%d.bbbbbb", dead), "", false, false)
	add(upload+fmt.Sprintf(".%d.cccccc", live.pid), "", true, false)

	record := func(state string, group, pid, start int, boot string) string {
		return fmt.Sprintf("%s %d %d %d %s /nonexistent/solar-%d-00\n", state, group, pid, start, boot, pid)
	}
	end := func(killed, group, pid, start int) string {
		return fmt.Sprintf("%d %d %d %d %s /nonexistent/solar-%d-00\n", killed, group, pid, start, boot, pid)
	}
	running := func() string { return filepath.Join(cache, "running", randomHex(t)) }
	// Gone: the shell has ended, and its group has no member left.
	k := running()
	add(k, record("done", dead, dead, 100, boot), true, true)
	k = running()
	add(k, record("run", dead, dead, 100, boot), true, true)
	add(k+".end", end(300, dead, dead, 100), true, true)
	// Gone: of another boot, whatever its numbers name now.
	add(running(), record("run", live.group, live.pid, live.start, "another-boot"), true, true)
	// Gone: the group's live member started 2s after the stop killed the
	// group: a stranger's.
	k = running()
	add(k, record("run", live.group, dead, live.start-400, boot), true, true)
	add(k+".end", end(live.start-200, live.group, dead, live.start-400), true, true)
	// Gone: a stop's note that is damaged does not end the sweep.
	k = running()
	add(k, record("run", dead, dead, 100, boot), true, true)
	add(k+".end", "1x "+end(300, dead, dead, 100)[4:], true, true)
	// Gone: a record cut short, and a stop's note with no record.
	add(running(), "run 12", true, true)
	add(running()+".end", end(300, dead, dead, 100), true, true)
	// Stays: young.
	add(running(), record("done", dead, dead, 100, boot), false, false)
	add(running()+".end", end(300, dead, dead, 100), false, false)
	// Stays: its shell lives (an attempt running for hours).
	k = running()
	add(k, record("run", live.group, live.pid, live.start, boot), true, false)
	// Stays: a note whose KEY has a record.
	add(k+".end", end(300, dead, dead, 100), true, false)
	// Stays: the shell has ended but its group has a member that started
	// after it: a finished attempt's service, or a killed attempt's
	// survivor of SIGKILL (it started before the stop killed the group).
	add(running(), record("done", live.group, dead, live.start-100, boot), true, false)
	k = running()
	add(k, record("run", live.group, dead, live.start-100, boot), true, false)
	add(k+".end", end(live.start+500, live.group, dead, live.start-100), true, false)

	for _, e := range entries {
		t.Cleanup(func() {
			_ = filepath.WalkDir(e.path, func(p string, _ os.DirEntry, _ error) error { return os.Chmod(p, 0o700) })
			_ = os.RemoveAll(e.path)
		})
		if e.content == "" {
			// A cut upload, partly unpacked; tar left a directory that is
			// not writable (a base's own mode).
			sub := filepath.Join(e.path, "actions")
			if err := os.MkdirAll(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "run.sh"), []byte("true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Join(sub, "run.sh"), sub, e.path} {
				if err := os.Chown(p, uid, uid); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(sub, 0o555); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := os.WriteFile(e.path, []byte(e.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(e.path, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		if e.old {
			if err := os.Chtimes(e.path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}

	run()
	for _, e := range entries {
		_, err := os.Lstat(e.path)
		switch {
		case e.gone && err == nil:
			t.Errorf("left on the node: %s %q", filepath.Base(e.path), e.content)
		case !e.gone && err != nil:
			t.Errorf("swept from the node: %s %q: %v", filepath.Base(e.path), e.content, err)
		}
	}
}

// An upload under way is never swept, however old its directory looks (a
// slow line, a big base): its name carries the pid of the setup shell
// that unpacks it, and the sweep spares it while that shell lives. Here
// a base crawls to one node at 256 kbit while a run on another server of
// the same account (the same node, for the cache) sweeps.
func TestSetupSweepSparesAnUploadUnderWay(t *testing.T) {
	link := sshdtest.NetNS(t, "sweepup")
	slow := sshdtest.Start(t, sshdtest.Options{IP: link.NodeIP, NetNS: link.NS})
	near := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	link.Shape(t, "256kbit")
	base := newBase(t, "true")
	payload := make([]byte, 1<<20) // half a minute at 256 kbit
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "payload"), payload, 0o644); err != nil {
		t.Fatal(err)
	}
	partial := partialUpload(t, slow, base)
	tr, sh := newTransport(t, map[string]*Node{"slow": node("slow", slow)}, Config{Keepalive: 2 * time.Second, DialTimeout: 10 * time.Second})
	ended := make(chan error, 1)
	go func() {
		_, err := sh.Run(context.Background(), request(base, "slow"))
		ended <- err
	}()
	t.Cleanup(func() {
		// Closing the connection ends the upload, as a cut would.
		tr.Close()
		<-ended
	})
	// The payload, the last of the base's top-level entries, is being
	// unpacked: the directory changes no more until it is renamed.
	dir := uploadUnderWay(t, partial, ended)
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	_, nearSh := newTransport(t, map[string]*Node{"near": node("near", near)}, Config{})
	if _, err := nearSh.Run(context.Background(), request(newBase(t, "true"), "near")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "payload")); err != nil {
		t.Fatalf("the sweep removed an upload under way: %v", err)
	}
	select {
	case err := <-ended:
		t.Fatalf("the upload ended before the sweep was over: %v", err)
	default:
	}
}
