// Package torture kills solar runners with SIGKILL at random moments and
// checks the crash promises (SPEC section 7) after every kill and at the
// end. It is slow and random, so it runs only when asked:
//
//	SOLAR_TORTURE=200 go test ./internal/torture -v   # 200 rounds
//
// Each round builds a fresh store with a layered plan of shell tasks that
// start children and hold a per-resource lock, then alternates run-once or
// resume with kill -9 after a random delay until a run finishes. Some tasks
// are long (about a second or two) and ignore SIGTERM, so that a kill
// often finds a script that outlives its runner's first signal.
//
// Rounds take turns over four setups (SOLAR_TORTURE_MODES, a comma list,
// chooses among them): the store in a bbolt file ("bolt") or PostgreSQL
// ("pg"), and the tasks run on this machine or on two OpenSSH nodes on
// loopback addresses ("bolt-ssh", "pg-ssh"). On nodes a killed runner's
// scripts die only when the node notices, so "resume" right after a kill
// is where two copies of one action could meet. Checked:
//   - no two attempts of one resource ever overlap, crash or not: every
//     script takes an exclusive flock on its resource's lock file that its
//     children inherit, and logs OVERLAP if it finds the lock taken (a
//     survivor of a killed runner still holds it);
//   - a task the store shows finished (SUCCESS) after a kill never starts
//     again: what the killed runner made durable stays done;
//   - after the last run, every task is SUCCESS, nothing is staged, and the
//     history has one entry per task;
//   - no attempt directory (inputs, secrets) is left in TMPDIR, and no
//     process of the round still runs;
//   - no command panics or reports an internal error.
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
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/internal/sshdtest"
)

const (
	layers   = 4
	perLayer = 6
)

func TestTorture(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SOLAR_TORTURE"))
	if rounds <= 0 {
		t.Skip("set SOLAR_TORTURE=N to run N rounds of kill -9 torture")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "solar")
	build := exec.Command("go", "build", "-o", bin, "github.com/solarops/solar/cmd/solar")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	base := writeBase(t, root)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SOLAR_TORTURE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d (SOLAR_TORTURE_SEED to repeat)", seed)
	modes := strings.Split("bolt,pg,bolt-ssh,pg-ssh", ",")
	if m := os.Getenv("SOLAR_TORTURE_MODES"); m != "" {
		modes = strings.Split(m, ",")
	}
	var nodes []*sshdtest.Server
	for _, m := range modes {
		if m != "bolt" && m != "pg" && m != "bolt-ssh" && m != "pg-ssh" {
			t.Fatalf("SOLAR_TORTURE_MODES: unknown mode %q (bolt, pg, bolt-ssh, pg-ssh)", m)
		}
		if strings.HasSuffix(m, "-ssh") && nodes == nil {
			nodes = []*sshdtest.Server{
				sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.61"}),
				sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.62"}),
			}
		}
	}
	var total stats
	for r := range rounds {
		mode := modes[r%len(modes)]
		s := setup{bin: bin, base: base, dir: filepath.Join(root, fmt.Sprintf("r%04d-%s", r, mode))}
		if strings.HasPrefix(mode, "pg") {
			s.db = pgtest.Shared(t)
		}
		if strings.HasSuffix(mode, "-ssh") {
			s.nodes = nodes
		}
		st := round(t, rng, s)
		total.kills += st.kills
		total.runs += st.runs
		total.killedInTask += st.killedInTask
		if t.Failed() {
			t.Fatalf("round %d (%s) failed (seed %d)", r, mode, seed)
		}
	}
	t.Logf("%d rounds, %d runs, %d kill -9 (%d while a script ran), %d tasks per round: no violation",
		rounds, total.runs, total.kills, total.killedInTask, layers*perLayer)
}

type stats struct{ kills, runs, killedInTask int }

// setup is one round's: the solar binary, the base, the round's directory,
// the store (a PostgreSQL URL; "" is a bbolt file in dir) and the nodes
// the tasks run on (none: this machine).
type setup struct {
	bin, base, dir string
	db             string
	nodes          []*sshdtest.Server
}

// round runs one plan to the end through random kills.
func round(t *testing.T, rng *rand.Rand, s setup) stats {
	bin, base, dir := s.bin, s.base, s.dir
	work := filepath.Join(dir, "work")
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{work, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if s.nodes != nil {
		// The nodes' login user writes the log and the lock files.
		sshdtest.Reachable(t, dir)
		if err := os.Chmod(work, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	db := s.db
	if db == "" {
		db = filepath.Join(dir, "solar.db")
	}
	env := append(os.Environ(), "SOLAR_DB="+db, "TMPDIR="+tmp, "XDG_RUNTIME_DIR=", "NO_COLOR=1", "SOLAR_LOCK_WAIT=30s")
	solar := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		checkOutput(t, args, out.String())
		return out.String(), err
	}
	must := func(args ...string) string {
		out, err := solar(args...)
		if err != nil {
			t.Fatalf("solar %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	nodeBase, err := filepath.Abs("../../testdata/resources/node")
	if err != nil {
		t.Fatal(err)
	}
	for i, srv := range s.nodes {
		name := "n" + strconv.Itoa(i)
		must("resource", "create", name, nodeBase, "transport=ssh", "ip="+srv.IP, "ssh_port="+strconv.Itoa(srv.Port),
			"ssh_user="+srv.User, "ssh_key="+srv.ClientKey)
		must("node", "trust", name, "--fingerprint", srv.Fingerprint())
	}
	var rules []string
	for l := range layers {
		for i := range perLayer {
			name := fmt.Sprintf("l%di%d", l, i)
			// One task in four is long and ignores SIGTERM.
			ms, trap := rng.IntN(150), 0
			if rng.IntN(4) == 0 {
				ms, trap = 800+rng.IntN(1200), 1
			}
			args := []string{"resource", "create", name, base, "dir=" + work, "secret=torture-secret-" + name,
				"ms=" + strconv.Itoa(ms), "trap=" + strconv.Itoa(trap)}
			if len(s.nodes) > 0 {
				args = append(args, "location=n"+strconv.Itoa(rng.IntN(len(s.nodes))))
			}
			must(args...)
			if l > 0 {
				rules = append(rules, fmt.Sprintf("after l%di%d.run %s.run", l-1, rng.IntN(perLayer), name))
				rules = append(rules, fmt.Sprintf("after l%di%d.run %s.run", l-1, rng.IntN(perLayer), name))
			}
		}
	}
	must(append([]string{"events", "add"}, rules...)...)
	must("ch", "process")

	var st stats
	verb := "run-once"
	// finished: the tasks the store showed SUCCESS after a kill, each with
	// the length of the log then.
	finished := map[string]int{}
	for attempt := 0; ; attempt++ {
		if attempt > 60 {
			t.Fatal("the plan did not finish after 60 runs")
		}
		cmd := exec.Command(bin, "orch", verb, "last", "--concurrency", "4")
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		st.runs++
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Kill at a random moment in the first two seconds or so; let about
		// one run in four finish.
		var err error
		if rng.IntN(4) == 0 {
			err = <-done
		} else {
			select {
			case err = <-done:
			case <-time.After(time.Duration(rng.IntN(2000)) * time.Millisecond):
				if scriptsRunning(work) {
					st.killedInTask++
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				st.kills++
				checkOutput(t, []string{"orch", verb}, out.String())
				verb = "resume"
				checkOverlap(t, work)
				checkFinishedStayDone(t, work, finished)
				for _, id := range succeeded(t, must("orch", "report", "last", "--json")) {
					if _, ok := finished[id]; !ok {
						finished[id] = logLen(t, work)
					}
				}
				continue
			}
		}
		checkOutput(t, []string{"orch", verb}, out.String())
		checkOverlap(t, work)
		if err != nil {
			t.Fatalf("orch %s: %v\n%s", verb, err, out.String())
		}
		break
	}
	checkOverlap(t, work)
	checkFinishedStayDone(t, work, finished)

	var report struct {
		Finished bool           `json:"finished"`
		Totals   map[string]int `json:"totals"`
	}
	if err := json.Unmarshal([]byte(must("orch", "report", "last", "--json")), &report); err != nil {
		t.Fatal(err)
	}
	if !report.Finished || report.Totals["SUCCESS"] != layers*perLayer {
		t.Fatalf("after the last run: finished=%v totals=%v, want every task SUCCESS", report.Finished, report.Totals)
	}
	if out := must("ch", "stage"); strings.TrimSpace(out) != "nothing staged" {
		t.Fatalf("still staged after the plan finished:\n%s", out)
	}
	var hist struct {
		History []json.RawMessage `json:"history"`
	}
	if err := json.Unmarshal([]byte(must("ch", "history", "--json")), &hist); err != nil {
		t.Fatal(err)
	}
	// The nodes' own entries (their run, a noop) are in the plan too.
	if want := layers*perLayer + len(s.nodes); len(hist.History) != want {
		t.Fatalf("history has %d entries, want one per task (%d)", len(hist.History), want)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "solar-run-*")); len(left) > 0 {
		t.Fatalf("attempt directories outlived their runs: %v", left)
	}
	// Every script of the round is dead: nothing holds a resource lock.
	locks, _ := filepath.Glob(filepath.Join(work, "*.lock"))
	for _, l := range locks {
		if held(l) {
			t.Fatalf("%s is still held after the plan finished: a script survived", l)
		}
	}
	return st
}

// checkOutput fails on a panic or an internal error in a command's output.
func checkOutput(t *testing.T, args []string, out string) {
	t.Helper()
	for _, bad := range []string{"panic:", "goroutine ", "internal error", "torture-secret-"} {
		if strings.Contains(out, bad) {
			t.Fatalf("solar %s printed %q:\n%s", strings.Join(args, " "), bad, out)
		}
	}
}

// checkOverlap fails if any script found its resource's lock taken.
func checkOverlap(t *testing.T, work string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(work, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("OVERLAP")) {
		t.Fatalf("two attempts of one resource ran at once:\n%s", raw)
	}
}

// succeeded returns the ids of the SUCCESS tasks in an orch report --json.
func succeeded(t *testing.T, report string) []string {
	var r struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		t.Fatalf("report: %v\n%s", err, report)
	}
	var ids []string
	for _, task := range r.Tasks {
		if task.Status == "SUCCESS" {
			ids = append(ids, task.ID)
		}
	}
	if len(r.Tasks) == 0 {
		t.Fatalf("report lists no tasks:\n%s", report)
	}
	return ids
}

func logLen(t *testing.T, work string) int {
	raw, err := os.ReadFile(filepath.Join(work, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(raw)
}

// checkFinishedStayDone fails if a task started again after the store
// showed it finished.
func checkFinishedStayDone(t *testing.T, work string, finished map[string]int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(work, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for id, off := range finished {
		if bytes.Contains(raw[off:], []byte("start "+id+" ")) {
			t.Fatalf("%s ran again after the store showed it SUCCESS:\n%s", id, raw)
		}
	}
}

// scriptsRunning reports whether some script holds its lock now.
func scriptsRunning(work string) bool {
	locks, _ := filepath.Glob(filepath.Join(work, "*.lock"))
	for _, l := range locks {
		if held(l) {
			return true
		}
	}
	return false
}

// held reports whether another process holds an exclusive flock on name.
func held(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// writeBase writes the round's base: run takes its resource's lock (its
// children inherit it), sleeps in a child for ms milliseconds, and logs.
func writeBase(t *testing.T, root string) string {
	dir := filepath.Join(root, "base")
	files := map[string]string{
		"meta.yaml": `handler: shell
actions:
  run: run.sh
inputs:
  dir: {schema: str!}
  ms: {schema: int, value: 0}
  trap: {schema: int, value: 0}
  secret: {schema: str!, sensitive: true}
`,
		"run.sh": `d=$SOLAR_INPUT_DIR
[ "$SOLAR_INPUT_TRAP" = 1 ] && trap '' TERM
exec 9>>"$d/$SOLAR_RESOURCE.lock"
if ! flock -n 9; then
	echo "OVERLAP $SOLAR_TASK $$" >>"$d/log"
	exit 1
fi
echo "start $SOLAR_TASK $$" >>"$d/log"
sleep "$((SOLAR_INPUT_MS / 1000)).$(printf '%03d' $((SOLAR_INPUT_MS % 1000)))" &
wait
echo "end $SOLAR_TASK $$" >>"$d/log"
`,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
