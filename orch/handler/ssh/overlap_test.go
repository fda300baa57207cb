package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/orch/handler"
)

// overlapScript is an action that detects a copy of itself running at the
// same time: each copy holds a lock for as long as any of its processes
// lives, and one that cannot take it, or that finds the first copy's
// shell still alive (not a zombie), writes OVERLAP. The first copy runs
// for a minute; later ones end at once. With trapTerm it ignores SIGTERM,
// as a script that cleans up for long may.
func overlapScript(trapTerm bool) string {
	s := ""
	if trapTerm {
		s = "trap '' TERM\n"
	}
	return s + `o=$SOLAR_INPUT_OUT
exec 9>>"$o/lock"
flock -n 9 || echo "OVERLAP: the lock is held" >>"$o/overlap"
if mkdir "$o/first" 2>/dev/null; then
	echo $$ >"$o/pid.tmp"
	mv "$o/pid.tmp" "$o/pid"
	sleep 60
else
	state=$(cut -d' ' -f3 "/proc/$(cat "$o/pid")/stat" 2>/dev/null)
	if [ -n "$state" ] && [ "$state" != Z ]; then
		echo "OVERLAP: the first copy's shell lives" >>"$o/overlap"
	fi
fi
`
}

// noOverlap fails t if a copy of overlapScript ran beside another.
func noOverlap(t *testing.T, out string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(out, "overlap")); err == nil {
		t.Errorf("two copies of one resource's action ran at once:\n%s", b)
	}
}

// previousNote finds the note an attempt's log holds when it had to wait
// for, or kill, a previous attempt.
func previousNote(res handler.Result) string {
	for _, l := range res.Log {
		if l.Stream == '!' && strings.Contains(l.Text, "a previous attempt's process group left on node n1") {
			return l.Text
		}
	}
	return ""
}

// D3: the runner is killed (kill -9) while a remote script that ignores
// SIGTERM runs, and the task is started again at once, as orch resume
// does. The node's watchdog gives the orphan its grace before SIGKILL;
// the new attempt must not start before the orphan is gone.
func TestRetryAfterControllerKilledWaitsForTheOrphan(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, overlapScript(true))
	cmd := exec.Command(os.Args[0], "-test.run=^TestControllerKilled$")
	cmd.Env = append(os.Environ(), "SOLAR_SSH_CHILD=1", "CHILD_HOST="+srv.IP, "CHILD_PORT="+strconv.Itoa(srv.Port),
		"CHILD_USER="+srv.User, "CHILD_KEY="+srv.ClientKey, "CHILD_HOSTKEY="+KeyText(srv.HostKey), "CHILD_BASE="+base, "CHILD_OUT="+out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(out, "pid"), 10*time.Second)
	first := pids(t, filepath.Join(out, "pid"))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	res, err := sh.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("the attempt after the kill: %v", err)
	}
	noOverlap(t, out)
	waitDead(t, time.Second, first...)
	if note := previousNote(res); note == "" {
		t.Errorf("the log does not say a previous attempt was waited for or killed: %v", res.Log)
	} else {
		t.Log(note)
	}
}

// D4: the link to a node is cut while a script runs there. The controller
// gives up after a keepalive or two, but the node hears of it only after
// three keepalive periods without a heartbeat; a retry the moment the
// link is back must not start beside the orphan, whether it ignores
// SIGTERM or not.
func TestRetryAfterPartitionWaitsForTheOrphan(t *testing.T) {
	for _, tc := range []struct {
		name     string
		trapTerm bool
		grace    time.Duration
	}{
		{"plain", false, testGrace},
		// The default grace: the orphan outlives the node's watchdog by 2s.
		{"ignores SIGTERM", true, handler.DefaultKillGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := sshdtest.NetNS(t, "ovl")
			far := sshdtest.Start(t, sshdtest.Options{IP: link.NodeIP, NetNS: link.NS})
			out := shared(t)
			base := newBase(t, overlapScript(tc.trapTerm))
			tr := New(map[string]*Node{"n1": node("n1", far)}, nil, Config{Keepalive: time.Second, DialTimeout: 3 * time.Second})
			t.Cleanup(func() { tr.Close() })
			sh := &handler.Shell{Transport: tr, KillGrace: tc.grace}
			req := request(base, "n1")
			req.Inputs = map[string]any{"out": out}
			cut := make(chan time.Time, 1)
			go func() {
				waitFile(t, filepath.Join(out, "pid"), 10*time.Second)
				link.Cut(t)
				cut <- time.Now()
			}()
			if _, err := sh.Run(context.Background(), req); !errors.Is(err, handler.ErrFailed) || !strings.Contains(err.Error(), "connection lost") {
				t.Fatalf("the attempt during the cut: %v, want connection lost", err)
			}
			// The controller has given up; the link stays cut for 3s in all.
			time.Sleep(time.Until((<-cut).Add(3 * time.Second)))
			link.Heal(t)
			res, err := sh.Run(context.Background(), req)
			if err != nil {
				t.Fatalf("the retry after the link is back: %v", err)
			}
			noOverlap(t, out)
			// The plain orphan may be gone already: the closed connection's
			// FIN reaches the node once the link is back, and it dies at
			// once. The one that ignores SIGTERM has 2s of grace.
			if note := previousNote(res); note != "" {
				t.Log(note)
			} else if tc.trapTerm {
				t.Errorf("the log does not say a previous attempt was waited for or killed: %v", res.Log)
			}
		})
	}
}

// A new attempt whose previous attempt's group cannot be killed (here it
// is another user's; on a real node, a process in uninterruptible sleep)
// does not run: it fails after a bound, naming the node and the group and
// saying what to do, and the record stays for the next attempt to find.
func TestPreviousAttemptThatOutlivesSIGKILL(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	n := node("n1", srv)
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	// A first attempt makes the node's record directory, as the login.
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
		t.Fatal(err)
	}
	stranger := exec.Command("sleep", "60")
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stranger.Process.Kill()
		_ = stranger.Wait()
	})
	pid := stranger.Process.Pid
	start := statFields(t, pid)[19]
	boot := strings.TrimSpace(readFile(t, "/proc/sys/kernel/random/boot_id"))
	record := filepath.Join(srv.Home, ".cache", "solar", "running", recordKey(n, "res"))
	if err := os.WriteFile(record, fmt.Appendf(nil, "run %d %d %s %s /nonexistent\n", pid, pid, start, boot), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(record) })
	uid := lookupUID(t, srv.User)
	if err := os.Chown(record, uid, uid); err != nil {
		t.Fatal(err)
	}

	req := request(newBase(t, `touch "$SOLAR_INPUT_OUT/ran"`), "n1")
	req.Inputs = map[string]any{"out": out}
	_, err := sh.Run(context.Background(), req)
	want := fmt.Sprintf("node n1 (%s): a previous attempt of this resource left process group %d, which outlives SIGKILL by 5s", srv.Addr(), pid)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "end it on the node, then retry") {
		t.Fatalf("Run: %v, want %q ... end it on the node, then retry", err, want)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
		t.Error("the script ran beside the previous attempt's group")
	}
	if _, err := os.Stat(record); err != nil {
		t.Errorf("the record of the group still alive is gone: %v", err)
	}
}

// What a script leaves running in its group after it exited 0 (a service
// it started) belongs to no attempt: the next attempt of the resource does
// not kill it.
func TestNextAttemptSparesWhatAFinishedOneLeft(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	service := newBase(t, `if [ ! -e "$SOLAR_INPUT_OUT/service" ]; then
	sleep 60 </dev/null >/dev/null 2>&1 &
	echo $! >"$SOLAR_INPUT_OUT/service"
fi
`)
	req := request(service, "n1")
	req.Inputs = map[string]any{"out": out}
	for i := range 3 {
		res, err := sh.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if note := previousNote(res); note != "" {
			t.Errorf("attempt %d: %s", i, note)
		}
	}
	for _, p := range pids(t, filepath.Join(out, "service")) {
		if !alive(p) {
			t.Errorf("the service the first attempt left (pid %d) was killed", p)
		}
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// statFields returns the fields of /proc/PID/stat after the command name:
// [0] is the state, [2] the process group, [19] the start time.
func statFields(t *testing.T, pid int) []string {
	t.Helper()
	stat := readFile(t, fmt.Sprintf("/proc/%d/stat", pid))
	return strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
}

// A record left by an attempt that its stop killed names a group number
// that may since belong to a stranger: here the service another resource's
// attempt left behind, in a group whose number the record names. The
// stop noted when it killed the group; the stranger started later, so the
// next attempt of the record's resource leaves it alone.
func TestStrangerInAReusedGroupNumberIsSpared(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	n := node("n1", srv)
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	req := request(newBase(t, `sleep 60 </dev/null >/dev/null 2>&1 &
echo $! >"$SOLAR_INPUT_OUT/service"
`), "n1")
	req.Inputs = map[string]any{"out": out}
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	service := pids(t, filepath.Join(out, "service"))[0]
	t.Cleanup(func() { _ = syscall.Kill(service, syscall.SIGKILL) })
	f := statFields(t, service)
	group := f[2]
	started, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil || started < 400 {
		t.Fatalf("start time of the service: %v", f)
	}
	// The record of an attempt of "other" whose shell had the number of
	// the service's group, started 4s and killed 2s before the service.
	boot := strings.TrimSpace(readFile(t, "/proc/sys/kernel/random/boot_id"))
	identity := fmt.Sprintf("%s %s %d %s /nonexistent", group, group, started-400, boot)
	record := filepath.Join(srv.Home, ".cache", "solar", "running", recordKey(n, "other"))
	uid := lookupUID(t, srv.User)
	for name, line := range map[string]string{record: "run " + identity, record + ".end": fmt.Sprint(started-200, " ", identity)} {
		if err := os.WriteFile(name, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(name) })
		if err := os.Chown(name, uid, uid); err != nil {
			t.Fatal(err)
		}
	}

	other := request(newBase(t, `touch "$SOLAR_INPUT_OUT/ran"`), "n1")
	other.Resource = "other"
	other.Inputs = map[string]any{"out": out}
	res, err := sh.Run(context.Background(), other)
	if err != nil {
		t.Fatalf("the attempt of other: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err != nil {
		t.Error("the script of other did not run")
	}
	if !alive(service) {
		t.Error("the service in a group whose number a stale record names was killed")
	}
	if note := previousNote(res); note != "" {
		t.Errorf("the attempt waited for a stranger: %s", note)
	}
}

// A check-mode attempt changes nothing, so it may run beside an attempt of
// the same resource: it neither waits for it nor kills it.
func TestCheckAttemptLeavesARunningOneAlone(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	base := newBase(t, `if [ -n "$SOLAR_CHECK" ]; then exit 0; fi
echo $$ >"$SOLAR_INPUT_OUT/pid"
sleep 60
`)
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := sh.Run(ctx, req)
		done <- err
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFile(t, filepath.Join(out, "pid"), 10*time.Second)
	check := req
	check.Check = true
	res, err := sh.Run(context.Background(), check)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if note := previousNote(res); note != "" {
		t.Errorf("check: %s", note)
	}
	select {
	case err := <-done:
		t.Fatalf("the running attempt ended during the check: %v", err)
	default:
	}
	for _, p := range pids(t, filepath.Join(out, "pid")) {
		if !alive(p) {
			t.Errorf("the running attempt's script (pid %d) was killed", p)
		}
	}
}

// The wrapper's note that it waited for a previous attempt comes before
// the script's output, behind the marker: it reaches the log as a note,
// not as output, and the start of the script is still found, however the
// stream is cut into writes; after it, output (even a forged marker)
// passes through.
func TestTrailerNoteBeforeOutput(t *testing.T) {
	stream := "\x1eabc note ended 190\n\x1eabc start\nhello\n\x1eabc nobase\n"
	for _, size := range []int{1, 3, len(stream)} {
		var out strings.Builder
		var notes []string
		tw := newTrailerWriter(&out, "abc")
		tw.note = func(what string, waited time.Duration) { notes = append(notes, fmt.Sprint(what, " ", waited)) }
		for i := 0; i < len(stream); i += size {
			if _, err := tw.Write([]byte(stream[i:min(i+size, len(stream))])); err != nil {
				t.Fatal(err)
			}
		}
		started, nobase := tw.state()
		if out.String() != "hello\n\x1eabc nobase\n" || len(notes) != 1 || notes[0] != "ended 1.9s" || !started || nobase {
			t.Errorf("writes of %d bytes: output %q, notes %q, started %v, nobase %v; want hello and the line after it, one note ended 1.9s, started", size, out.String(), notes, started, nobase)
		}
	}
}

// A damaged note of when a previous attempt's group was killed (K.end)
// bounds nothing, and does not end the next attempt's wrapper: the
// attempt, whose predecessor is gone, runs.
func TestDamagedKillNoteIsIgnored(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	n := node("n1", srv)
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	// A first attempt makes the node's record directory, as the login.
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
		t.Fatal(err)
	}
	// The previous attempt: a shell that is gone.
	dead := exec.Command("true")
	dead.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	start := statFields(t, pid)[19]
	if err := dead.Wait(); err != nil {
		t.Fatal(err)
	}
	boot := strings.TrimSpace(readFile(t, "/proc/sys/kernel/random/boot_id"))
	record := filepath.Join(srv.Home, ".cache", "solar", "running", recordKey(n, "res"))
	uid := lookupUID(t, srv.User)
	for name, text := range map[string]string{
		record:          fmt.Sprintf("run %d %d %s %s /nonexistent\n", pid, pid, start, boot),
		record + ".end": fmt.Sprintf("12.5 %d %d %s x\n", pid, pid, start),
	} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(name) })
		if err := os.Chown(name, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	req := request(newBase(t, `touch "$SOLAR_INPUT_OUT/ran"`), "n1")
	req.Inputs = map[string]any{"out": out}
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run after a damaged kill note: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err != nil {
		t.Errorf("the script did not run: %v", err)
	}
}
