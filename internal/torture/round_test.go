package torture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/internal/sshdtest"
)

// round is one plan run to its end through random faults.
type round struct {
	t    *testing.T
	rng  *rand.Rand
	rig  *rig
	mode mode
	work string // the scripts' log and lock files
	tmp  string // the runners' TMPDIR
	// cache is the runners' base cache (SOLAR_CACHE_DIR): the round's
	// base directory is gone before its first run, so every script comes
	// from there.
	cache string
	env   []string
	// pg is the round's own PostgreSQL server (pg modes), which it
	// crashes.
	pg *pgtest.Server
	// finished holds the tasks the store showed SUCCESS after a run, each
	// with the length of the log then.
	finished map[string]int
	st       stats
}

// runRound runs one round in dir and returns what happened in it.
func runRound(t *testing.T, rng *rand.Rand, rg *rig, m mode, dir string) stats {
	if m.fleet {
		return runFleet(t, rng, rg, dir)
	}
	r := &round{t: t, rng: rng, rig: rg, mode: m, work: filepath.Join(dir, "work"), tmp: filepath.Join(dir, "tmp"),
		cache: filepath.Join(dir, "cache"), finished: map[string]int{}}
	r.prepare(dir)
	r.createPlan()
	verb := "run-once"
	for n := 1; ; n++ {
		if n > maxRuns {
			t.Fatalf("the plan did not finish after %d runs", maxRuns)
		}
		if done := r.run(n, verb); done {
			break
		}
		verb = "resume"
		if r.hasErrors() {
			// Tasks failed because of a cut: run them, and what they
			// skipped, again.
			verb = "retry"
			r.st.retries++
		}
	}
	r.checkEnd()
	return r.st
}

// prepare makes the round's directories, its store and its environment,
// and chooses the round's settings.
func (r *round) prepare(dir string) {
	t := r.t
	for _, d := range []string{r.work, r.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r.mode.ssh {
		// The nodes' login user writes the log and the lock files.
		sshdtest.Reachable(t, dir)
		if err := os.Chmod(r.work, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "solar.db")
	var settings []string
	if r.mode.pg {
		r.pg = pgtest.Own(t)
		var err error
		if db, err = r.pg.NewDatabase("solar"); err != nil {
			t.Fatal(err)
		}
		ttl := []string{"5s", "8s"}[r.rng.IntN(2)]
		settings = append(settings, "SOLAR_LEASE_TTL="+ttl)
		if r.rng.IntN(3) == 0 {
			idle := fmt.Sprintf("%ds", 2+r.rng.IntN(3))
			if err := r.pg.Set("idle_session_timeout", idle); err != nil {
				t.Fatal(err)
			}
			settings = append(settings, "idle_session_timeout="+idle)
			r.st.idleRounds++
		}
	}
	if r.mode.ssh {
		settings = append(settings, "SOLAR_SSH_KEEPALIVE="+[]string{"1s", "2s"}[r.rng.IntN(2)])
	}
	t.Logf("settings: %s", strings.Join(settings, ", "))
	// A base cache of the round's own: every round materializes its base
	// afresh from the store, and leaves nothing in the home directory.
	r.env = append(os.Environ(), "SOLAR_DB="+db, "TMPDIR="+r.tmp, "XDG_RUNTIME_DIR=", "NO_COLOR=1", "SOLAR_LOCK_WAIT=30s",
		"SOLAR_CACHE_DIR="+r.cache)
	for _, s := range settings {
		if strings.HasPrefix(s, "SOLAR_") {
			r.env = append(r.env, s)
		}
	}
}

// createPlan creates the nodes, the resources and their rules, and
// processes them into a plan of layers*perLayer tasks. The tasks' base
// directory is removed then: every run of the round runs the base as the
// store keeps it, materialized into the runners' cache.
func (r *round) createPlan() {
	base := writeBase(r.t, filepath.Dir(r.work))
	if r.mode.ssh {
		for i, n := range r.rig.nodes {
			name := "n" + strconv.Itoa(i)
			r.must("resource", "create", name, r.rig.nodeBase, "transport=ssh", "ip="+n.srv.IP, "ssh_port="+strconv.Itoa(n.srv.Port),
				"ssh_user="+n.srv.User, "ssh_key="+n.srv.ClientKey)
			r.must("node", "trust", name, "--fingerprint", n.srv.Fingerprint())
		}
	}
	var rules []string
	for l := range layers {
		for i := range perLayer {
			name := fmt.Sprintf("l%di%d", l, i)
			// One task in four is long and ignores SIGTERM: on a node
			// long enough to outlast a cut of its link, on PostgreSQL a
			// crash of the server or a session's idle timeout.
			ms, trap := r.rng.IntN(150), 0
			switch {
			case r.rng.IntN(4) != 0:
			case r.mode.ssh:
				ms, trap = 3000+r.rng.IntN(5000), 1
			case r.mode.pg:
				ms, trap = 2000+r.rng.IntN(4000), 1
			default:
				ms, trap = 800+r.rng.IntN(1200), 1
			}
			args := []string{"resource", "create", name, base, "dir=" + r.work, "secret=torture-secret-" + name,
				"ms=" + strconv.Itoa(ms), "trap=" + strconv.Itoa(trap)}
			if r.mode.ssh {
				args = append(args, "location=n"+strconv.Itoa(r.rng.IntN(len(r.rig.nodes))))
				// A retry of its own dials again during a cut, or the
				// moment it heals, while the node's copy may still run.
				if r.rng.IntN(3) == 0 {
					args = append(args, "--meta", "retry=2", "--meta", "delay=300ms")
				}
			}
			r.must(args...)
			if l > 0 {
				rules = append(rules, fmt.Sprintf("after l%di%d.run %s.run", l-1, r.rng.IntN(perLayer), name))
				rules = append(rules, fmt.Sprintf("after l%di%d.run %s.run", l-1, r.rng.IntN(perLayer), name))
			}
		}
	}
	r.must(append([]string{"events", "add"}, rules...)...)
	r.must("ch", "process")
	if err := os.RemoveAll(base); err != nil {
		r.t.Fatal(err)
	}
}

// solar runs a solar command to its end.
func (r *round) solar(args ...string) (string, error) {
	cmd := exec.Command(r.rig.bin, args...)
	cmd.Env = r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	checkOutput(r.t, args, out.String())
	return out.String(), err
}

// must runs a solar command that must succeed, and returns its output.
func (r *round) must(args ...string) string {
	r.t.Helper()
	out, err := r.solar(args...)
	if err != nil {
		r.t.Fatalf("solar %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// report is what the torture reads of orch report --json.
type report struct {
	Finished bool           `json:"finished"`
	Running  bool           `json:"running"`
	Totals   map[string]int `json:"totals"`
	Tasks    []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"tasks"`
}

func (r *round) report() report {
	r.t.Helper()
	out := r.must("orch", "report", "last", "--json")
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		r.t.Fatalf("report: %v\n%s", err, out)
	}
	if len(rep.Tasks) == 0 {
		r.t.Fatalf("report lists no tasks:\n%s", out)
	}
	return rep
}

// failures returns the errors of the tasks that failed, by task: not
// those killed because their run was (a lost lease), which resume runs
// again.
func (r *round) failures(rep report) map[string]string {
	out := map[string]string{}
	for _, task := range rep.Tasks {
		if task.Status == "ERROR" && task.Error != "killed" {
			out[task.ID] = task.Error
		}
	}
	return out
}

// hasErrors reports whether some task of the plan failed.
func (r *round) hasErrors() bool { return len(r.failures(r.report())) > 0 }

// settle checks the promises after a run and notes the tasks the store
// now shows finished. It reports whether every task has succeeded, and
// the plan's totals.
func (r *round) settle() (bool, string) {
	checkOverlap(r.t, r.work)
	checkFinishedStayDone(r.t, r.work, r.finished)
	rep := r.report()
	for _, task := range rep.Tasks {
		if _, ok := r.finished[task.ID]; !ok && task.Status == "SUCCESS" {
			r.finished[task.ID] = logLen(r.t, r.work)
		}
	}
	var totals []string
	for _, st := range []string{"SUCCESS", "ERROR", "SKIPPED", "INPROGRESS", "PENDING"} {
		if n := rep.Totals[st]; n > 0 {
			totals = append(totals, fmt.Sprintf("%d %s", n, st))
		}
	}
	for id, e := range r.failures(rep) {
		totals = append(totals, fmt.Sprintf("%s failed: %q", id, e))
	}
	return rep.Finished && rep.Totals["SUCCESS"] == layers*perLayer, strings.Join(totals, ", ")
}

// checkEnd checks the state the round ends in: every task SUCCESS,
// nothing staged, one history entry per task, nothing left behind.
func (r *round) checkEnd() {
	t := r.t
	checkOverlap(t, r.work)
	checkFinishedStayDone(t, r.work, r.finished)
	if rep := r.report(); !rep.Finished || rep.Totals["SUCCESS"] != layers*perLayer {
		t.Fatalf("after the last run: finished=%v totals=%v, want every task SUCCESS", rep.Finished, rep.Totals)
	}
	if out := r.must("ch", "stage"); strings.TrimSpace(out) != "nothing staged" {
		t.Fatalf("still staged after the plan finished:\n%s", out)
	}
	var hist struct {
		History []json.RawMessage `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.must("ch", "history", "--json")), &hist); err != nil {
		t.Fatal(err)
	}
	nodes := 0
	if r.mode.ssh {
		// The nodes' own entries (their run, a noop) are in the plan too.
		nodes = len(r.rig.nodes)
	}
	if want := layers*perLayer + nodes; len(hist.History) != want {
		t.Fatalf("history has %d entries, want one per task (%d)", len(hist.History), want)
	}
	if ran, _ := filepath.Glob(filepath.Join(r.cache, "*", "run.sh")); len(ran) != 1 {
		t.Fatalf("the base cache %s holds %d copies of the round's base, want 1: runs did not take it from the store", r.cache, len(ran))
	}
	if left, _ := filepath.Glob(filepath.Join(r.tmp, "solar-run-*")); len(left) > 0 {
		t.Fatalf("attempt directories outlived their runs: %v", left)
	}
	// Every script of the round is dead: nothing holds a resource lock.
	// A node's copy cut off from its runner dies within a few keepalives;
	// a later attempt of its resource waited for it, so none is left.
	locks, _ := filepath.Glob(filepath.Join(r.work, "*.lock"))
	for _, l := range locks {
		if held(l) {
			t.Fatalf("%s is still held after the plan finished: a script survived", l)
		}
	}
}

// settleDeadline bounds how long a runner may take to end after its
// faults: a runner waiting for a lease waits at most its lease time, and a
// store that is away is given 30s of connects.
const settleDeadline = 3 * time.Minute
