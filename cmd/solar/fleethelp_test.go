package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/orch"
)

// The harness of fleet_test.go: a solar binary, a PostgreSQL store, a
// shell base whose script leaves evidence of every attempt in a shared
// directory, and runners as separate processes, each in a process group
// of its own so that a test can kill or freeze one as a machine dies or
// freezes.

// fleetBase is the base of every fleet test's resources. Its script,
// for resource R with fence F:
//   - takes an exclusive flock on out/lock-R, or appends "R F" to
//     out/overlap and fails: two live attempts of one task (lock=0
//     skips it, for attempts that stand for two machines, one frozen
//     while it holds the lock);
//   - writes its pid to out/pid-R-F and touches out/started-R-F;
//   - fails when out/fail-R exists;
//   - runs for tenths tenths of a second, or hold tenths the first time
//     (the first attempt that makes the directory out/held-R); it waits
//     in steps of a tenth so that time spent frozen (SIGSTOP) does not
//     count: a single long sleep would end at once on thaw, its deadline
//     passed, and the script would race the runner's kill;
//   - appends "R START END F" (nanoseconds) to out/spans and F to
//     out/side-R: its side effect.
var fleetBase = map[string]string{
	"meta.yaml": `handler: shell
version: 1.0.0
actions:
  run: actions/run.sh
inputs:
  out: {schema: str!}
  tenths: {schema: int, value: 2}
  hold: {schema: int, value: 0}
  lock: {schema: int, value: 1}
`,
	"actions/run.sh": `o=$SOLAR_INPUT_OUT r=$SOLAR_RESOURCE f=$SOLAR_FENCE
if [ "$SOLAR_INPUT_LOCK" = 1 ]; then
	exec 9>"$o/lock-$r"
	flock -n 9 || { echo "$r $f" >>"$o/overlap"; exit 1; }
fi
echo $$ >"$o/pid-$r-$f"
: >"$o/started-$r-$f"
start=$(date +%s%N)
[ -e "$o/fail-$r" ] && { echo "asked to fail" >&2; exit 1; }
n=$SOLAR_INPUT_TENTHS
if [ "$SOLAR_INPUT_HOLD" -gt 0 ] && mkdir "$o/held-$r" 2>/dev/null; then n=$SOLAR_INPUT_HOLD; fi
i=0
while [ $i -lt $n ]; do sleep 0.1; i=$((i+1)); done
echo "$r $start $(date +%s%N) $f" >>"$o/spans"
echo "$f" >>"$o/side-$r"
`,
}

// fleetEnv is one fleet test's world.
type fleetEnv struct {
	t     *testing.T
	dir   string
	bin   string
	out   string // the scripts' evidence
	base  string
	repo  string
	env   []string
	lease time.Duration
}

// newFleetEnv copies the solar binary, writes fleetBase and points every
// solar it runs at the PostgreSQL database db.
func newFleetEnv(t *testing.T, db string) *fleetEnv {
	t.Helper()
	for _, tool := range []string{"flock", "date"} {
		if _, err := exec.LookPath(tool); err != nil {
			sshdtest.Require(t, tool, "apt-get install util-linux coreutils")
		}
	}
	dir := t.TempDir()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	f := &fleetEnv{t: t, dir: dir, bin: filepath.Join(dir, "bin", "solar"), out: filepath.Join(dir, "out"),
		base: filepath.Join(dir, "base"), repo: repo}
	for _, d := range []string{filepath.Dir(f.bin), f.out, filepath.Join(dir, "home"), filepath.Join(f.base, "actions")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, f.bin, 0o755)
	for name, body := range fleetBase {
		if err := os.WriteFile(filepath.Join(f.base, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.env = []string{"HOME=" + filepath.Join(dir, "home"), "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"SOLAR_DB=" + db, "NO_COLOR=1", "SOLAR_CACHE_DIR=" + filepath.Join(dir, "cache")}
	// The shortest lease a runner takes, in whole seconds: the tests wait
	// for leases to expire.
	f.lease = orch.MinLeaseTTL().Round(time.Second)
	if f.lease < orch.MinLeaseTTL() {
		f.lease += time.Second
	}
	return f
}

// run runs solar ARGS and returns its output and exit status.
func (f *fleetEnv) run(args ...string) (string, int) {
	f.t.Helper()
	c := exec.Command(f.bin, args...)
	c.Env = f.env
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		f.t.Fatalf("solar %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0
}

// must runs solar ARGS, which must exit with status want.
func (f *fleetEnv) must(want int, args ...string) string {
	f.t.Helper()
	out, code := f.run(args...)
	if code != want {
		f.t.Fatalf("solar %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

// resources creates resources of fleetBase named by names, with the
// arguments more (inputs, --meta, --tags), four at a time.
func (f *fleetEnv) resources(names []string, more ...string) {
	f.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, len(names))
	sem := make(chan struct{}, 4)
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append([]string{"resource", "create", n, f.base, "out=" + f.out}, more...)
			c := exec.Command(f.bin, args...)
			c.Env = f.env
			if b, err := c.CombinedOutput(); err != nil {
				errs <- fmt.Sprintf("solar %s: %v\n%s", strings.Join(args, " "), err, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		f.t.Fatal(e)
	}
}

// names returns prefix1..prefixN (zero-padded to two digits past 9).
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i+1)
	}
	return out
}

// fleetReport is what the tests read of orch report --json.
type fleetReport struct {
	UID      string         `json:"uid"`
	Finished bool           `json:"finished"`
	Totals   map[string]int `json:"totals"`
	Tasks    []struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		Error          string `json:"error"`
		Attempts       int    `json:"attempts"`
		AttemptRecords []struct {
			Number int    `json:"number"`
			Runner string `json:"runner"`
		} `json:"attempt_records"`
	} `json:"tasks"`
}

func (f *fleetEnv) report() fleetReport {
	f.t.Helper()
	raw := f.must(0, "orch", "report", "last", "--json")
	var rep fleetReport
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		f.t.Fatalf("report: %v\n%s", err, raw)
	}
	return rep
}

// waitFinished waits up to bound for the last plan's every task to be
// finished, and returns its report.
func (f *fleetEnv) waitFinished(bound time.Duration, runners ...*fleetRunner) fleetReport {
	f.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		rep := f.report()
		if rep.Finished {
			return rep
		}
		if time.Now().After(deadline) {
			for _, r := range runners {
				f.t.Logf("runner %s said:\n%s", r.name, r.said())
			}
			f.t.Fatalf("the plan is not finished after %s: %v", bound, rep.Totals)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// task returns the report's task id.
func (rep fleetReport) task(t *testing.T, id string) int {
	t.Helper()
	for i, task := range rep.Tasks {
		if task.ID == id {
			return i
		}
	}
	t.Fatalf("the report has no task %s", id)
	return 0
}

// lines returns the lines of out/name ("" lines dropped); nil when the
// file does not exist.
func (f *fleetEnv) lines(name string) []string {
	b, err := os.ReadFile(filepath.Join(f.out, name))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// waitPath waits up to bound for out/pattern (a glob) to match, and
// returns the first match's name.
func (f *fleetEnv) waitPath(pattern string, bound time.Duration) string {
	f.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		if m, _ := filepath.Glob(filepath.Join(f.out, pattern)); len(m) > 0 {
			return filepath.Base(m[0])
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("no %s after %s", pattern, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fence is the fence in a name such as started-R-F.
func fence(t *testing.T, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(name[strings.LastIndexByte(name, '-')+1:], 10, 64)
	if err != nil {
		t.Fatalf("%s ends in no fence", name)
	}
	return n
}

// fleetRunner is one "solar runner" process.
type fleetRunner struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    bytes.Buffer
	exited chan struct{}
	code   int
}

func (r *fleetRunner) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

func (r *fleetRunner) said() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// runner starts "solar runner --name NAME --lease LEASE ARGS" and waits
// for it to say it started.
func (f *fleetEnv) runner(name string, args ...string) *fleetRunner {
	f.t.Helper()
	r := f.spawn(name, append([]string{"runner", "--name", name, "--lease", f.lease.String()}, args...)...)
	r.waitLog(`runner `+regexp.QuoteMeta(name)+` started`, 20*time.Second)
	return r
}

// spawn starts solar ARGS, called name, in a process group of its own,
// its output in its log. The test's end kills whatever is left of it and
// of its scripts.
func (f *fleetEnv) spawn(name string, args ...string) *fleetRunner {
	f.t.Helper()
	r := &fleetRunner{t: f.t, name: name, cmd: exec.Command(f.bin, args...), exited: make(chan struct{})}
	r.cmd.Env = f.env
	r.cmd.Stdout, r.cmd.Stderr = r, r
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		err := r.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		close(r.exited)
	}()
	f.t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			r.tree(syscall.SIGKILL)
			r.tree(syscall.SIGCONT)
			<-r.exited
		}
		if f.t.Failed() {
			f.t.Logf("%s said:\n%s", name, r.said())
		}
	})
	return r
}

// waitLog waits up to bound for a line of the runner's to match re, and
// returns the submatches of the first that does.
func (r *fleetRunner) waitLog(re string, bound time.Duration) []string {
	r.t.Helper()
	rx := regexp.MustCompile(`(?m)` + re)
	deadline := time.Now().Add(bound)
	for {
		if m := rx.FindStringSubmatch(r.said()); m != nil {
			return m
		}
		select {
		case <-r.exited:
			if m := rx.FindStringSubmatch(r.said()); m != nil {
				return m
			}
			r.t.Fatalf("runner %s exited (%d) without saying %q:\n%s", r.name, r.code, re, r.said())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("runner %s did not say %q within %s:\n%s", r.name, re, bound, r.said())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// claim is a "claimed" line of a runner.
type claim struct {
	task, uid string
	fence     int64
	attempt   int // SOLAR_ATTEMPT of its attempt
}

var claimedLine = regexp.MustCompile(`(?m)claimed (\S+) of plan (\S+) \(fence (\d+), attempt (\d+)\)`)

// claims are the claims the runner said it made.
func (r *fleetRunner) claims() []claim {
	var out []claim
	for _, m := range claimedLine.FindAllStringSubmatch(r.said(), -1) {
		n, _ := strconv.ParseInt(m[3], 10, 64)
		a, _ := strconv.Atoi(m[4])
		out = append(out, claim{task: m[1], uid: m[2], fence: n, attempt: a})
	}
	return out
}

// claimedTasks are the tasks the runner claimed, sorted.
func (r *fleetRunner) claimedTasks() []string {
	var out []string
	for _, c := range r.claims() {
		out = append(out, c.task)
	}
	slices.Sort(out)
	return out
}

// signal sends sig to the runner's process alone.
func (r *fleetRunner) signal(sig syscall.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal %v to runner %s: %v", sig, r.name, err)
	}
}

// tree sends sig to the runner's process group and to the group of every
// process under it (scripts run in groups of their own): the whole
// machine, as far as this runner goes. The runner's group goes first, so
// that it starts nothing new meanwhile.
func (r *fleetRunner) tree(sig syscall.Signal) {
	pid := r.cmd.Process.Pid
	_ = syscall.Kill(-pid, sig)
	for _, p := range descendants(pid) {
		if g, err := syscall.Getpgid(p); err == nil && g != pid {
			_ = syscall.Kill(-g, sig)
		}
	}
}

// descendants lists the processes under pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		raw, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(raw, ')')
		fields := strings.Fields(string(raw[i+1:]))
		if i < 0 || len(fields) < 2 {
			continue
		}
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		pp, _ := strconv.Atoi(fields[1])
		children[pp] = append(children[pp], p)
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// wait waits up to bound for the runner to exit and returns its status.
func (r *fleetRunner) wait(bound time.Duration) int {
	r.t.Helper()
	select {
	case <-r.exited:
		return r.code
	case <-time.After(bound):
		r.t.Fatalf("runner %s still runs after %s:\n%s", r.name, bound, r.said())
	}
	return 0
}

// drain stops the runner with one SIGTERM: it must exit 0.
func (r *fleetRunner) drain() {
	r.t.Helper()
	r.signal(syscall.SIGTERM)
	if code := r.wait(30 * time.Second); code != 0 {
		r.t.Fatalf("runner %s drained with exit %d, want 0:\n%s", r.name, code, r.said())
	}
}

// span is one run of a script, from out/spans.
type span struct {
	res        string
	start, end int64
	fence      int64
}

func (f *fleetEnv) spans() []span {
	f.t.Helper()
	b, _ := os.ReadFile(filepath.Join(f.out, "spans"))
	var out []span
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s span
		if l == "" {
			continue
		}
		if _, err := fmt.Sscan(l, &s.res, &s.start, &s.end, &s.fence); err != nil {
			f.t.Fatalf("spans: %q: %v", l, err)
		}
		out = append(out, s)
	}
	return out
}

// overlapping returns two spans of resources matching re that ran at the
// same time, if any.
func overlapping(spans []span, re string) (span, span, bool) {
	rx := regexp.MustCompile(re)
	var in []span
	for _, s := range spans {
		if rx.MatchString(s.res) {
			in = append(in, s)
		}
	}
	for i, a := range in {
		for _, b := range in[i+1:] {
			if a.start < b.end && b.start < a.end {
				return a, b, true
			}
		}
	}
	return span{}, span{}, false
}
