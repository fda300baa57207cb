package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/internal/sshdtest"
)

// The test of this file runs a fleet across "machines": runner a in a
// network namespace and a UTS namespace of its own (host name machine-a),
// reaching PostgreSQL by TCP across a veth pair, and runner b on this
// machine through the server's socket. Cutting the pair is a partition
// between a and the database that neither side is told of.

// netLease is the runners' lease: the shortest a runner takes (a script's
// kill grace and a margin), so that the test is short too.
const netLease = 5 * time.Second

// netBase is the tasks' base: run logs its start (fence, host, its own pid
// and its sleep's) and, unless killed first, its end, each with the time.
var netBase = map[string]string{
	"meta.yaml": `handler: shell
version: 1.0.0
actions:
  run: run.sh
inputs:
  out: {schema: str!}
  secs: {schema: int, value: 1}
`,
	"run.sh": `log=$SOLAR_INPUT_OUT/log
sleep "$SOLAR_INPUT_SECS" &
echo "start $SOLAR_RESOURCE $SOLAR_FENCE $(hostname) $$ $! $(date +%s.%N)" >>"$log"
wait
echo "end $SOLAR_RESOURCE $SOLAR_FENCE $(hostname) $$ $! $(date +%s.%N)" >>"$log"
`,
}

// netFleet is the test's world: the binary, the server, the link.
type netFleet struct {
	t        *testing.T
	dir, bin string
	out      string // the scripts' log
	link     *sshdtest.Link
	env      []string // this machine's: the store by its socket
}

// netRunner is one solar runner process and what it printed.
type netRunner struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	said bytes.Buffer
	done chan struct{}
	err  error
}

func (r *netRunner) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.said.Write(p)
}

func (r *netRunner) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.said.String()
}

// await waits up to bound for r to print s.
func (r *netRunner) await(t *testing.T, s string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !strings.Contains(r.String(), s) {
		select {
		case <-r.done:
			t.Fatalf("the runner ended (%v) without saying %q:\n%s", r.err, s, r.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not say %q within %s:\n%s", s, bound, r.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drain sends r SIGTERM and requires it to exit 0 within 30s.
func (r *netRunner) drain(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the runner did not drain within 30s:\n%s", r.String())
	}
	if r.err != nil {
		t.Fatalf("the runner drained with %v:\n%s", r.err, r.String())
	}
}

func newNetFleet(t *testing.T) *netFleet {
	if os.Geteuid() != 0 {
		sshdtest.Require(t, "root", "runner a runs in namespaces of its own")
	}
	for _, tool := range []string{"unshare", "hostname", "ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			sshdtest.Require(t, tool, "apt-get install util-linux hostname iproute2")
		}
	}
	f := &netFleet{t: t, dir: t.TempDir(), link: sshdtest.NetNS(t, "fleetnet")}
	f.bin, f.out = filepath.Join(f.dir, "bin", "solar"), filepath.Join(f.dir, "out")
	for _, d := range []string{filepath.Dir(f.bin), f.out, filepath.Join(f.dir, "home"), filepath.Join(f.dir, "base")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, f.bin, 0o755)
	for name, body := range netBase {
		if err := os.WriteFile(filepath.Join(f.dir, "base", name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := pgtest.StartServerWith(pgtest.Options{NoFsync: true, Listen: []string{f.link.HostIP}, Trust: []string{f.link.NodeIP + "/32"}})
	if err != nil {
		pgtest.SkipOrFail(t, err)
	}
	// Registered after NetNS: the server stops before the link goes.
	t.Cleanup(func() { _ = srv.Stop() })
	sock, err := srv.NewDatabase("fleet")
	if err != nil {
		t.Fatal(err)
	}
	f.env = f.envFor("b", sock)
	f.env = append(f.env, "SOLAR_TCP_DB="+srv.TCPURL("fleet", f.link.HostIP))
	return f
}

// envFor is the environment of machine name with the store at db.
func (f *netFleet) envFor(name, db string) []string {
	return []string{"HOME=" + filepath.Join(f.dir, "home"), "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "SOLAR_DB=" + db,
		"NO_COLOR=1", "SOLAR_CACHE_DIR=" + filepath.Join(f.dir, "cache-"+name)}
}

// solar runs solar on this machine and returns its output.
func (f *netFleet) solar(args ...string) string {
	f.t.Helper()
	c := exec.Command(f.bin, args...)
	c.Env = f.env
	b, err := c.CombinedOutput()
	if err != nil {
		f.t.Fatalf("solar %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

// runner starts solar runner NAME: on machine-a in the link's namespace
// by TCP when remote, else here by the socket.
func (f *netFleet) runner(name string, remote bool, concurrency int) *netRunner {
	args := []string{"runner", "--name", name, "--lease", netLease.String(), "--concurrency", strconv.Itoa(concurrency)}
	c := exec.Command(f.bin, args...)
	c.Env = f.env
	if remote {
		tcp := ""
		for _, e := range f.env {
			if v, ok := strings.CutPrefix(e, "SOLAR_TCP_DB="); ok {
				tcp = v
			}
		}
		argv := append([]string{"netns", "exec", f.link.NS, "unshare", "--uts", "sh", "-c", `hostname machine-a && exec "$0" "$@"`, f.bin}, args...)
		c = exec.Command("ip", argv...)
		c.Env = f.envFor(name, tcp)
	}
	r := &netRunner{cmd: c, done: make(chan struct{})}
	c.Stdout, c.Stderr = r, r
	if err := c.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { r.err = c.Wait(); close(r.done) }()
	f.t.Cleanup(func() {
		_ = c.Process.Kill()
		<-r.done
	})
	return r
}

// plan creates a resource per name, each sleeping secs, and makes a plan.
func (f *netFleet) plan(secs int, names ...string) {
	for _, n := range names {
		f.solar("resource", "create", n, filepath.Join(f.dir, "base"), "out="+f.out, "secs="+strconv.Itoa(secs), "--meta", "retry=2")
	}
	f.solar("ch", "process")
}

// netLine is one line of the scripts' log.
type netLine struct {
	what, task, fence, host string
	pids                    []int
	at                      time.Time
}

func (f *netFleet) lines() []netLine {
	raw, err := os.ReadFile(filepath.Join(f.out, "log"))
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	var out []netLine
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		w := strings.Fields(l)
		if len(w) != 7 {
			continue
		}
		p1, _ := strconv.Atoi(w[4])
		p2, _ := strconv.Atoi(w[5])
		secs, _ := strconv.ParseFloat(w[6], 64)
		out = append(out, netLine{what: w[0], task: w[1], fence: w[2], host: w[3], pids: []int{p1, p2},
			at: time.Unix(0, int64(secs*1e9))})
	}
	return out
}

// awaitLine waits up to bound for a line matching ok and returns it.
func (f *netFleet) awaitLine(ok func(netLine) bool, bound time.Duration) netLine {
	f.t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		for _, l := range f.lines() {
			if ok(l) {
				return l
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("no such line in the scripts' log within %s:\n%v", bound, f.lines())
	return netLine{}
}

// netReport is what the test reads of orch report --json.
type netReport struct {
	Finished bool           `json:"finished"`
	Totals   map[string]int `json:"totals"`
	Tasks    []struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		AttemptRecords []struct {
			Number int     `json:"number"`
			Host   string  `json:"host"`
			Runner *string `json:"runner"`
		} `json:"attempt_records"`
	} `json:"tasks"`
}

// awaitPlan waits up to bound for the last plan to finish with n tasks
// SUCCESS, and returns its report.
func (f *netFleet) awaitPlan(n int, bound time.Duration) netReport {
	f.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		var rep netReport
		raw := f.solar("orch", "report", "last", "--json")
		if err := json.Unmarshal([]byte(raw), &rep); err != nil {
			f.t.Fatalf("report: %v\n%s", err, raw)
		}
		if rep.Finished {
			if rep.Totals["SUCCESS"] != n {
				f.t.Fatalf("the plan finished with %v, want %d SUCCESS:\n%s", rep.Totals, n, raw)
			}
			return rep
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the plan did not finish within %s:\n%s", bound, raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// alive reports whether any of pids is a live process (not a zombie).
func alive(pids []int) bool {
	for _, p := range pids {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err == nil && !strings.Contains(string(st), ") Z ") {
			return true
		}
	}
	return false
}

// TestFleetNetCut: runner a, on another machine reaching PostgreSQL by
// TCP, runs a task when its link is cut. Its script must be killed before
// its lease expires (a's own deadline, on its monotonic clock: it cannot
// hear the reaper), and write nothing afterwards; runner b, on the
// database's side, must see the lease expire, run the task again within
// lease + 5s, and finish the plan, with every task committed once and the
// task's last attempt b's. Once the link heals, a renews and claims again:
// it alone runs a second plan.
func TestFleetNetCut(t *testing.T) {
	f := newNetFleet(t)
	f.plan(8, "p1a", "p1b", "p1c", "p1d")
	a := f.runner("a", true, 1)
	a.await(t, "runner a started", 20*time.Second)
	f.solar("orch", "submit", "last", "--detach")
	held := f.awaitLine(func(l netLine) bool { return l.what == "start" && l.host == "machine-a" }, 20*time.Second)
	b := f.runner("b", false, 4)
	b.await(t, "runner b started", 20*time.Second)

	f.link.Cut(t)
	cut := time.Now()
	t.Logf("cut the link of runner a while it runs %s (fence %s)", held.task, held.fence)
	for alive(held.pids) {
		if time.Since(cut) > netLease {
			t.Fatalf("%s's script on machine-a still runs %s after the cut: a kept running past its lease\n%s", held.task,
				time.Since(cut).Round(time.Millisecond), a.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("a's script ended %s after the cut", time.Since(cut).Round(time.Millisecond))
	again := f.awaitLine(func(l netLine) bool { return l.what == "start" && l.task == held.task && l.fence != held.fence }, netLease+5*time.Second)
	if again.host == "machine-a" {
		t.Fatalf("%s ran again on machine-a while cut off", held.task)
	}
	if took := again.at.Sub(cut); took > netLease+5*time.Second {
		t.Fatalf("b started %s %s after the cut, want within lease + 5s", held.task, took)
	} else {
		t.Logf("b started %s again %s after the cut (fence %s)", held.task, took.Round(time.Millisecond), again.fence)
	}
	rep := f.awaitPlan(4, 60*time.Second)
	f.checkCutPlan(rep, held, cut)
	f.checkHistory(4)

	f.link.Heal(t)
	a.await(t, "leases renewed again; claiming", 30*time.Second)
	b.drain(t)
	f.plan(1, "p2a", "p2b")
	f.solar("orch", "submit", "last", "--detach")
	f.awaitPlan(2, 60*time.Second)
	for _, l := range f.lines() {
		if strings.HasPrefix(l.task, "p2") && l.host != "machine-a" {
			t.Fatalf("%s ran on %s, want machine-a (b was drained)", l.task, l.host)
		}
	}
	if n := strings.Count(a.String(), "claimed p2"); n != 2 {
		t.Fatalf("a claimed %d tasks of the second plan after the link healed, want 2:\n%s", n, a.String())
	}
	f.checkHistory(6)
	a.drain(t)
}

// checkCutPlan checks the log and the report of the plan whose task held
// was cut off at cut: nothing of machine-a after the cut but its script's
// start, no end of held's attempt, every task ended once, and held's last
// attempt b's.
func (f *netFleet) checkCutPlan(rep netReport, held netLine, cut time.Time) {
	t := f.t
	ends := map[string]int{}
	for _, l := range f.lines() {
		if l.host == "machine-a" && l.at.After(cut) {
			t.Errorf("machine-a wrote after the cut: %+v", l)
		}
		if l.what == "end" {
			ends[l.task]++
			if l.fence == held.fence {
				t.Errorf("%s's attempt on machine-a (fence %s) ended: it was not killed", held.task, held.fence)
			}
		}
	}
	for _, task := range []string{"p1a", "p1b", "p1c", "p1d"} {
		if ends[task] != 1 {
			t.Errorf("%s ended %d times, want once", task, ends[task])
		}
	}
	for _, task := range rep.Tasks {
		if !strings.HasPrefix(task.ID, held.task+".") {
			continue
		}
		recs := task.AttemptRecords
		// a's attempt, whose end a could not record, may have no record.
		if len(recs) == 0 || recs[len(recs)-1].Number < 2 {
			t.Fatalf("%s: attempt records %+v, want the last one b's, the second attempt or later", task.ID, recs)
		}
		last := recs[len(recs)-1]
		if last.Host == "machine-a" || last.Runner != nil && *last.Runner != "b" {
			t.Fatalf("%s: last attempt on %q by runner %v, want b's on this machine", task.ID, last.Host, fmtRunner(last.Runner))
		}
		if last.Runner == nil {
			t.Logf("orch report --json names no runner of an attempt (attempt_records[].runner)")
		}
		return
	}
	t.Fatalf("no task of %s in the report", held.task)
}

func fmtRunner(r *string) string {
	if r == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q", *r)
}

// checkHistory requires n history entries, one per task.
func (f *netFleet) checkHistory(n int) {
	var hist struct {
		History []struct {
			Task string `json:"task"`
			Plan string `json:"plan"`
		} `json:"history"`
	}
	raw := f.solar("ch", "history", "--json")
	if err := json.Unmarshal([]byte(raw), &hist); err != nil {
		f.t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range hist.History {
		if seen[h.Plan+" "+h.Task] {
			f.t.Fatalf("%s of plan %s committed twice:\n%s", h.Task, h.Plan, raw)
		}
		seen[h.Plan+" "+h.Task] = true
	}
	if len(hist.History) != n {
		f.t.Fatalf("history has %d entries, want %d:\n%s", len(hist.History), n, raw)
	}
}
