package torture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
)

// The fleet mode (SOLAR_TORTURE_MODES=fleet) tortures runners instead of
// run-once: three solar runner processes share one PostgreSQL store and a
// submitted plan of fleetLayers*fleetPerLayer tasks, each depending on two
// or three of the layer before. For SOLAR_TORTURE_SECONDS (60 unless set),
// or until the plan finishes, a random runner is, every 0.3-2s, either
// killed with SIGKILL (and started again under its name a moment later) or
// frozen with SIGSTOP of its process group for 1-2s (within its lease of
// 5s) or 6-8s (past it: its tasks go to the others) and thawed. Then the plan
// must finish, and the runners drain (SIGTERM, exit 0).
//
// Checked, beyond what every round checks (no script found its task's lock
// taken, no panic):
//   - every task SUCCESS, once in the history (its staged entry committed
//     once), nothing staged;
//   - nothing left running: no script holds its lock, no runner holds a
//     claim (solar runner list), the report shows nothing in progress.
const (
	fleetLayers   = 10
	fleetPerLayer = 20
	fleetRunners  = 3
	fleetLease    = 5 * time.Second
	// fleetRetries is each task's meta.retry: every lease a fault makes
	// expire uses one, and a task out of them ends ERROR, which is not a
	// violation but spoils the round; a minute of faults reaps few tasks
	// more than a few times.
	fleetRetries = 30
)

// fleetStats counts what a fleet round did.
type fleetStats struct {
	kills, shortStops, longStops int
	retries                      int           // claims beyond each task's first
	reaped                       int           // claims given back when their lease expired
	finish                       time.Duration // from submit to the plan's end
	faults                       time.Duration // how long faults were injected
}

func (s fleetStats) summary() string {
	return fmt.Sprintf("%d tasks on %d runners: %d kill -9, %d stops within the lease, %d past it, %d claims reaped, %d retries, faults for %s, finished %s after submit",
		fleetLayers*fleetPerLayer, fleetRunners, s.kills, s.shortStops, s.longStops, s.reaped, s.retries, s.faults.Round(time.Second),
		s.finish.Round(100*time.Millisecond))
}

// fleetRound is one fleet round: its store, its runners, its directories.
type fleetRound struct {
	t       *testing.T
	rng     *rand.Rand
	bin     string
	work    string
	env     []string
	db      string // the store's URL
	runners map[string]*fleetProc
	ended   []*fleetProc // processes that ended, for their output
	st      fleetStats
}

// fleetProc is one solar runner process.
type fleetProc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer // read once done is closed
	done chan struct{}
	err  error
}

// runFleet runs a fleet round in dir.
func runFleet(t *testing.T, rng *rand.Rand, rg *rig, dir string) stats {
	f := &fleetRound{t: t, rng: rng, bin: rg.bin, work: filepath.Join(dir, "work"), runners: map[string]*fleetProc{}}
	tmp, cache := filepath.Join(dir, "tmp"), filepath.Join(dir, "cache")
	for _, d := range []string{f.work, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pg := pgtest.Own(t)
	db, err := pg.NewDatabase("solar")
	if err != nil {
		t.Fatal(err)
	}
	f.db = db
	f.env = append(os.Environ(), "SOLAR_DB="+db, "TMPDIR="+tmp, "XDG_RUNTIME_DIR=", "NO_COLOR=1", "SOLAR_CACHE_DIR="+cache)
	f.createPlan(filepath.Join(dir, "base"))
	t.Cleanup(f.killAll)
	for i := range fleetRunners {
		f.start("r" + strconv.Itoa(i))
	}
	f.must("orch", "submit", "last", "--detach")
	submitted := time.Now()
	seconds := 60
	if s, err := strconv.Atoi(os.Getenv("SOLAR_TORTURE_SECONDS")); err == nil && s > 0 {
		seconds = s
	}
	f.faults(time.Duration(seconds) * time.Second)
	f.st.faults = time.Since(submitted)
	f.awaitEnd(2 * time.Minute)
	f.st.finish = time.Since(submitted)
	f.drainAll()
	f.count()
	f.checkEnd()
	t.Logf("fleet: %s", f.st.summary())
	return stats{runs: fleetRunners + f.st.kills, kills: f.st.kills, retries: f.st.retries}
}

// createPlan writes the base into dir, creates the tasks' resources and
// their rules, and makes the plan; the base is removed then, so that every
// runner takes it from the store.
func (f *fleetRound) createPlan(dir string) {
	base := writeBase(f.t, filepath.Dir(dir))
	var rules []string
	for l := range fleetLayers {
		for i := range fleetPerLayer {
			name := fmt.Sprintf("l%di%d", l, i)
			// One task in four ignores SIGTERM: a kill must not wait for
			// its good will.
			ms, trap := 500+f.rng.IntN(3000), f.rng.IntN(4)/3
			f.must("resource", "create", name, base, "dir="+f.work, "secret=torture-secret-"+name, "ms="+strconv.Itoa(ms),
				"trap="+strconv.Itoa(trap), "--meta", "retry="+strconv.Itoa(fleetRetries))
			if l == 0 {
				continue
			}
			for _, p := range f.rng.Perm(fleetPerLayer)[:2+f.rng.IntN(2)] {
				rules = append(rules, fmt.Sprintf("after l%di%d.run %s.run", l-1, p, name))
			}
		}
	}
	f.must(append([]string{"events", "add"}, rules...)...)
	f.must("ch", "process")
	if err := os.RemoveAll(base); err != nil {
		f.t.Fatal(err)
	}
}

// must runs a solar command that must succeed and returns its output.
func (f *fleetRound) must(args ...string) string {
	f.t.Helper()
	cmd := exec.Command(f.bin, args...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	checkOutput(f.t, args, string(out))
	if err != nil {
		f.t.Fatalf("solar %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start starts runner name in a process group of its own.
func (f *fleetRound) start(name string) {
	cmd := exec.Command(f.bin, "runner", "--name", name, "--lease", fleetLease.String(), "--concurrency", "4")
	cmd.Env = f.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &fleetProc{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	f.runners[name] = p
}

// faults injects faults for d or until the plan finishes.
func (f *fleetRound) faults(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) && !f.finished() {
		time.Sleep(time.Duration(300+f.rng.IntN(1700)) * time.Millisecond)
		name := "r" + strconv.Itoa(f.rng.IntN(fleetRunners))
		p := f.runners[name]
		if f.rng.IntN(2) == 0 {
			f.st.kills++
			_ = p.cmd.Process.Kill()
			<-p.done
			f.ended = append(f.ended, p)
			time.Sleep(time.Duration(f.rng.IntN(1000)) * time.Millisecond)
			f.start(name)
			continue
		}
		stop := time.Duration(1000+f.rng.IntN(1000)) * time.Millisecond
		if f.rng.IntN(2) == 0 {
			stop = time.Duration(6000+f.rng.IntN(2000)) * time.Millisecond
			f.st.longStops++
		} else {
			f.st.shortStops++
		}
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGSTOP)
		time.Sleep(stop)
		_ = syscall.Kill(-pgid, syscall.SIGCONT)
	}
}

// fleetReport is what the fleet round reads of orch report --json.
type fleetReport struct {
	Finished bool           `json:"finished"`
	Totals   map[string]int `json:"totals"`
	Tasks    []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
		Error    string `json:"error"`
	} `json:"tasks"`
}

func (f *fleetRound) report() fleetReport {
	f.t.Helper()
	out := f.must("orch", "report", "last", "--json")
	var rep fleetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		f.t.Fatalf("report: %v\n%s", err, out)
	}
	return rep
}

func (f *fleetRound) finished() bool { return f.report().Finished }

// awaitEnd waits up to bound for the plan to finish with every task
// SUCCESS, checking for overlaps meanwhile, and returns its report.
func (f *fleetRound) awaitEnd(bound time.Duration) fleetReport {
	deadline := time.Now().Add(bound)
	for {
		checkOverlap(f.t, f.work)
		rep := f.report()
		if rep.Finished {
			if rep.Totals["SUCCESS"] != fleetLayers*fleetPerLayer {
				var bad []string
				for _, task := range rep.Tasks {
					if task.Status != "SUCCESS" {
						bad = append(bad, fmt.Sprintf("%s %s %q", task.ID, task.Status, task.Error))
					}
				}
				f.t.Fatalf("the plan finished with %v, want every task SUCCESS: %s\n%s", rep.Totals, strings.Join(bad, "; "), f.outputs())
			}
			return rep
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the plan did not finish within %s of the faults' end: %v\n%s", bound, rep.Totals, f.outputs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// drainAll sends every runner SIGTERM: each must exit 0 within 30s.
func (f *fleetRound) drainAll() {
	for _, p := range f.runners {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range f.runners {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			f.t.Fatalf("runner %s did not drain within 30s:\n%s", p.name, f.outputs())
		}
		if p.err != nil {
			f.t.Fatalf("runner %s drained with %v:\n%s", p.name, p.err, p.out.String())
		}
		f.ended = append(f.ended, p)
	}
	f.runners = map[string]*fleetProc{}
}

// claimedRe matches a runner's line of a claim, with the attempt number.
var claimedRe = regexp.MustCompile(`claimed (\S+) of plan \S+ \(fence \d+, attempt (\d+)\)`)

// count counts, from the runners' lines once all ended, the retries (the
// claims of each task beyond its first) and the claims reaped.
func (f *fleetRound) count() {
	last := map[string]int{}
	for _, p := range f.ended {
		out := p.out.String()
		f.st.reaped += strings.Count(out, "expired; it is")
		for _, m := range claimedRe.FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(m[2])
			last[m[1]] = max(last[m[1]], n)
		}
	}
	for _, n := range last {
		f.st.retries += n - 1
	}
}

// checkEnd checks the state the round ends in.
func (f *fleetRound) checkEnd() {
	t := f.t
	checkOverlap(t, f.work)
	for _, p := range f.ended {
		checkOutput(t, []string{"runner", "--name", p.name}, p.out.String())
	}
	if out := f.must("ch", "stage"); strings.TrimSpace(out) != "nothing staged" {
		t.Fatalf("still staged after the plan finished:\n%s", out)
	}
	var hist struct {
		History []struct {
			Task string `json:"task"`
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(f.must("ch", "history", "--json")), &hist); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range hist.History {
		if seen[h.Task] {
			t.Fatalf("%s committed twice", h.Task)
		}
		seen[h.Task] = true
	}
	if len(hist.History) != fleetLayers*fleetPerLayer {
		t.Fatalf("history has %d entries, want one per task (%d)", len(hist.History), fleetLayers*fleetPerLayer)
	}
	if scriptsRunning(f.work) {
		t.Fatal("a script still holds its lock after every runner drained")
	}
	var list struct {
		Runners []struct {
			Name string `json:"name"`
			Held int    `json:"held"`
		} `json:"runners"`
	}
	if err := json.Unmarshal([]byte(f.must("runner", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Runners {
		if r.Held != 0 {
			t.Fatalf("runner %s still holds %d claims after the plan finished and every runner drained", r.Name, r.Held)
		}
	}
	if rep := f.report(); rep.Totals["INPROGRESS"] != 0 {
		t.Fatalf("the report shows tasks in progress after the end: %v", rep.Totals)
	}
}

// outputs is every runner's output so far, ended ones included, and what
// the store shows of the runners and the server of its sessions. The live
// runners end with SIGQUIT, so that their goroutines' stacks show where
// they were: this is for a failing round.
func (f *fleetRound) outputs() string {
	var b strings.Builder
	cmd := exec.Command(f.bin, "runner", "list")
	cmd.Env = f.env
	out, _ := cmd.CombinedOutput()
	fmt.Fprintf(&b, "--- solar runner list\n%s", out)
	if psql, err := exec.LookPath("psql"); err == nil {
		cmd := exec.Command(psql, f.db, "-XAc", "SELECT pid, state, wait_event_type, wait_event, now()-xact_start, left(query, 120) FROM pg_stat_activity WHERE datname = current_database()")
		out, _ := cmd.CombinedOutput()
		fmt.Fprintf(&b, "--- sessions\n%s", out)
	}
	for _, p := range f.runners {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	}
	f.killAll()
	for _, p := range append(f.ended, f.liveList()...) {
		fmt.Fprintf(&b, "--- runner %s (%v)\n%s", p.name, p.err, p.out.String())
	}
	return b.String()
}

func (f *fleetRound) liveList() []*fleetProc {
	var out []*fleetProc
	for _, p := range f.runners {
		out = append(out, p)
	}
	return out
}

// killAll thaws and kills every live runner and waits for it.
func (f *fleetRound) killAll() {
	for _, p := range f.runners {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
