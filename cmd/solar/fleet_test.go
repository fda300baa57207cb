package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
)

// The fleet's guarantees (issue 31), end to end: runners are "solar
// runner" processes on one PostgreSQL store, each in a process group of
// its own; what their scripts leave in a shared directory (fleethelp_test.go)
// and what the store records are checked against each promise. Leases are
// the shortest a runner takes, so that waiting for one to expire is quick.

// TestFleetNoDoubleClaim: three runners share a plan of 40 independent
// tasks whose scripts hold a lock on their task while they run: no task
// runs twice at once (the lock is never found held), each runs once, ends
// SUCCESS, and its staged entry is committed exactly once.
func TestFleetNoDoubleClaim(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	tasks := names("t", 40)
	f.resources(tasks, "tenths=3")
	f.must(0, "ch", "process")
	// The runners wait before the plan is submitted: its notification
	// wakes them together, and they claim from the same ready rows at
	// once, as they do again each time tasks end.
	var rs []*fleetRunner
	for i := 1; i <= 3; i++ {
		rs = append(rs, f.spawn(fmt.Sprintf("r%d", i), "runner", "--name", fmt.Sprintf("r%d", i), "--lease", f.lease.String(), "--concurrency", "4"))
	}
	for _, r := range rs {
		r.waitLog(`runner `+r.name+` started`, 20*time.Second)
	}
	f.must(0, "orch", "submit", "last", "--detach")
	rep := f.waitFinished(90*time.Second, rs...)
	if o := f.lines("overlap"); o != nil {
		t.Fatalf("two attempts of one task ran at once: %v", o)
	}
	if rep.Totals["SUCCESS"] != len(tasks) {
		t.Fatalf("totals %v, want %d SUCCESS", rep.Totals, len(tasks))
	}
	ran := map[string]int{}
	for _, s := range f.spans() {
		ran[s.res]++
	}
	fences := map[int64]string{}
	busy := 0
	for _, r := range rs {
		if len(r.claims()) > 0 {
			busy++
		}
		for _, c := range r.claims() {
			if other, ok := fences[c.fence]; ok {
				t.Errorf("fence %d given to %s and %s", c.fence, other, c.task)
			}
			fences[c.fence] = c.task
		}
	}
	for _, n := range tasks {
		if ran[n] != 1 || len(f.lines("side-"+n)) != 1 {
			t.Errorf("%s ran %d times, its side effect %v, want once", n, ran[n], f.lines("side-"+n))
		}
	}
	if len(fences) != len(tasks) {
		t.Errorf("the runners claimed %d times, want %d (one per task)", len(fences), len(tasks))
	}
	if busy < 2 {
		t.Errorf("only %d runner claimed tasks: the test shows nothing about runners sharing a plan", busy)
	}
	checkCommittedOnce(t, f, rep.UID, tasks)
	for _, r := range rs {
		r.drain()
	}
}

// checkCommittedOnce checks that ch history holds, for plan uid, one
// entry for each resource's run, and no other.
func checkCommittedOnce(t *testing.T, f *fleetEnv, uid string, res []string) {
	t.Helper()
	var hist struct {
		History []struct {
			Key  string `json:"key"`
			Plan string `json:"plan"`
			Task string `json:"task"`
		} `json:"history"`
	}
	raw := f.must(0, "ch", "history", "--json")
	if err := json.Unmarshal([]byte(raw), &hist); err != nil {
		t.Fatalf("history: %v\n%s", err, raw)
	}
	got := map[string]int{}
	for _, h := range hist.History {
		if h.Plan == uid {
			got[h.Task]++
		}
	}
	for _, n := range res {
		if got[n+".run#0"] != 1 {
			t.Errorf("history commits %s.run#0 %d times, want once", n, got[n+".run#0"])
		}
		delete(got, n+".run#0")
	}
	if len(got) > 0 {
		t.Errorf("history commits entries of no task of the plan: %v", got)
	}
}

// TestFleetKilledRunner: a runner killed with SIGKILL (its whole process
// group) in the middle of a task: within its lease and five seconds
// another runner claims the task again and finishes it; the report names
// both runners, and the side effect that stands is the second claim's.
func TestFleetKilledRunner(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	f.resources([]string{"slow"}, "hold=300", "--meta", "retry=1")
	f.must(0, "ch", "process")
	f.must(0, "orch", "submit", "last", "--detach")
	a := f.runner("doomed")
	started := f.waitPath("started-slow-*", 20*time.Second)
	b := f.runner("rescuer")
	a.tree(syscall.SIGKILL)
	killed := time.Now()
	a.wait(5 * time.Second)
	b.waitLog(`claimed slow\.run#0 of plan`, f.lease+5*time.Second)
	took := time.Since(killed)
	t.Logf("the dead runner's task was claimed again %s after the kill (lease %s)", took.Round(time.Millisecond), f.lease)
	rep := f.waitFinished(30*time.Second, b)
	task := rep.Tasks[rep.task(t, "slow.run#0")]
	if task.Status != "SUCCESS" {
		t.Fatalf("slow.run#0 %s %s, want SUCCESS", task.Status, task.Error)
	}
	bc := b.claims()
	if len(bc) != 1 || bc[0].fence <= fence(t, started) {
		t.Fatalf("the rescuer's claims %v: want one, fenced after the dead runner's %s", bc, started)
	}
	if side := f.lines("side-slow"); !slices.Equal(side, []string{strconv.FormatInt(bc[0].fence, 10)}) {
		t.Errorf("side effects of slow: %v, want only the rescuer's fence %d", side, bc[0].fence)
	}
	checkRunners(t, task.AttemptRecords, "doomed", "rescuer")
	b.drain()
}

// checkRunners checks that the attempt records name want, in order,
// when the report names runners at all.
func checkRunners(t *testing.T, recs []struct {
	Number int    `json:"number"`
	Runner string `json:"runner"`
}, want ...string) {
	t.Helper()
	var got []string
	for _, r := range recs {
		if r.Runner != "" {
			got = append(got, r.Runner)
		}
	}
	if len(got) == 0 {
		// The runner's "claimed" lines and the fences checked before show
		// who ran what; the report's "runner" comes with orch report's
		// own change.
		t.Logf("the report names no runner of an attempt")
		return
	}
	// A runner killed mid-attempt may record no end of it: the last
	// attempt's runner is the one that finished the task, and every
	// attempt was run by one of want.
	if got[len(got)-1] != want[len(want)-1] {
		t.Errorf("the report's attempts were run by %q, want the last by %s", got, want[len(want)-1])
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("the report's attempts were run by %q, want only %q", got, want)
		}
	}
}

// TestFleetFrozenRunner: a runner frozen (SIGSTOP of its process group
// and of its scripts' groups: a machine that stops) past its lease loses
// its task to another runner; thawed, its script is killed before it
// writes its side effect, and it records nothing: the one side effect is
// the second claim's (SOLAR_FENCE), and the report shows the other runner.
func TestFleetFrozenRunner(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	f.resources([]string{"cold"}, "tenths=60", "lock=0", "--meta", "retry=1")
	f.must(0, "ch", "process")
	f.must(0, "orch", "submit", "last", "--detach")
	a := f.runner("frozen")
	first := f.waitPath("started-cold-*", 20*time.Second)
	a.tree(syscall.SIGSTOP)
	frozeAt := time.Now()
	b := f.runner("warm")
	b.waitLog(`claimed cold\.run#0 of plan`, f.lease+10*time.Second)
	second := f.waitPath("started-cold-"+strconv.FormatInt(b.claims()[0].fence, 10), 10*time.Second)
	a.tree(syscall.SIGCONT)
	t.Logf("thawed the runner after %s", time.Since(frozeAt).Round(time.Millisecond))
	pidRaw, err := os.ReadFile(filepath.Join(f.out, "pid-cold-"+strconv.FormatInt(fence(t, first), 10)))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidRaw)))
	for deadline := time.Now().Add(5 * time.Second); running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the thawed runner's script (pid %d) still runs 5s after the thaw:\n%s", pid, a.said())
		}
	}
	rep := f.waitFinished(30*time.Second, a, b)
	task := rep.Tasks[rep.task(t, "cold.run#0")]
	if task.Status != "SUCCESS" {
		t.Fatalf("cold.run#0 %s %s, want SUCCESS", task.Status, task.Error)
	}
	want := []string{strconv.FormatInt(fence(t, second), 10)}
	if fence(t, second) <= fence(t, first) {
		t.Errorf("the second claim's fence %s is not after the first's %s", second, first)
	}
	if side := f.lines("side-cold"); !slices.Equal(side, want) {
		t.Errorf("side effects of cold: %v, want only the second claim's %v (the frozen runner's script went on)", side, want)
	}
	// The task's record is the second claim's: its one attempt.
	if recs := task.AttemptRecords; len(recs) != 1 || recs[0].Number != b.claims()[0].attempt {
		t.Errorf("cold.run#0's record holds attempts %+v, want only the warm runner's attempt %d", recs, b.claims()[0].attempt)
	}
	checkRunners(t, task.AttemptRecords, "warm")
	if n := len(a.claims()); n != 1 {
		t.Errorf("the thawed runner claimed %d times, want once", n)
	}
	a.drain()
	b.drain()
}

// TestFleetLimits: a sema of 1 and --per-node 1 hold across two runners:
// the first runner holds the semaphore and node n1 when the second comes
// and then drains, so that the second, idle, finds their next tasks ready
// and must wait; no two holders of the semaphore, and no two tasks on n1,
// ran at once, while tasks without limits did.
func TestFleetLimits(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	f.must(0, "resource", "create", "n1", filepath.Join(f.repo, "testdata", "resources", "node"), "ip=127.0.0.1")
	f.must(0, "ch", "process")
	f.must(0, "orch", "run-once", "last")
	f.resources(names("s", 3), "tenths=15", "--meta", "sema=x:1")
	f.resources(names("p", 3), "tenths=15")
	f.resources(names("c", 4), "tenths=15")
	for _, p := range names("p", 3) {
		f.must(0, "connect", "n1", p)
	}
	f.must(0, "ch", "process")
	f.must(0, "orch", "submit", "last", "--detach", "--per-node", "1")
	a := f.runner("first", "--concurrency", "4")
	f.waitPath("started-s*", 20*time.Second)
	f.waitPath("started-p*", 20*time.Second)
	b := f.runner("second", "--concurrency", "4")
	a.drain()
	rep := f.waitFinished(60*time.Second, a, b)
	if rep.Totals["SUCCESS"] != 10 {
		t.Fatalf("totals %v, want 10 SUCCESS", rep.Totals)
	}
	spans := f.spans()
	if x, y, ok := overlapping(spans, `^s`); ok {
		t.Errorf("sema x:1: %s and %s ran at once", x.res, y.res)
	}
	if x, y, ok := overlapping(spans, `^p`); ok {
		t.Errorf("--per-node 1: %s and %s ran at once on n1", x.res, y.res)
	}
	if _, _, ok := overlapping(spans, `^c`); !ok {
		t.Errorf("no two tasks without limits ran at once: the test shows nothing")
	}
	for _, g := range []string{"s", "p"} {
		var in []string
		for _, task := range b.claimedTasks() {
			if strings.HasPrefix(task, g) {
				in = append(in, task)
			}
		}
		if len(in) == 0 {
			t.Errorf("the second runner ran no task of %s*: the limit was not shared", g)
		}
	}
	t.Logf("claims: first %v, second %v", a.claimedTasks(), b.claimedTasks())
	b.drain()
}

// TestFleetDrain: one SIGTERM drains a runner: it finishes its task,
// claims nothing new (the next task, ready meanwhile, waits) and exits 0.
// A second SIGTERM to the next runner, during a long task, kills it: exit
// 5, and another runner finishes the task (with its retry).
func TestFleetDrain(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	f.resources([]string{"first"}, "tenths=25")
	f.resources([]string{"next"}, "hold=300", "--meta", "retry=1")
	f.must(0, "events", "add", "after first.run next.run")
	f.must(0, "ch", "process")
	f.must(0, "orch", "submit", "last", "--detach")
	a := f.runner("drained", "--concurrency", "1")
	f.waitPath("started-first-*", 20*time.Second)
	a.signal(syscall.SIGTERM)
	a.waitLog(`draining`, 5*time.Second)
	if code := a.wait(20 * time.Second); code != 0 {
		t.Fatalf("the drained runner exited %d, want 0:\n%s", code, a.said())
	}
	if got := a.claimedTasks(); !slices.Equal(got, []string{"first.run#0"}) {
		t.Fatalf("the draining runner claimed %v, want only first.run#0", got)
	}
	if f.lines("side-first") == nil {
		t.Fatalf("the drained runner exited before its task finished:\n%s", a.said())
	}
	if m, _ := filepath.Glob(filepath.Join(f.out, "started-next-*")); m != nil {
		t.Fatalf("next ran while the only runner drained: %v", m)
	}

	k := f.runner("killed", "--concurrency", "1")
	f.waitPath("held-next", 20*time.Second)
	c := f.runner("other", "--concurrency", "1")
	k.signal(syscall.SIGTERM)
	k.waitLog(`draining`, 5*time.Second)
	k.signal(syscall.SIGTERM)
	if code := k.wait(10 * time.Second); code != 5 {
		t.Fatalf("the runner killed by a second SIGTERM exited %d, want 5:\n%s", code, k.said())
	}
	c.waitLog(`claimed next\.run#0 of plan`, 5*time.Second)
	rep := f.waitFinished(30*time.Second, c)
	task := rep.Tasks[rep.task(t, "next.run#0")]
	if task.Status != "SUCCESS" {
		t.Fatalf("next.run#0 %s %s, want SUCCESS", task.Status, task.Error)
	}
	if side := f.lines("side-next"); len(side) != 1 || side[0] != strconv.FormatInt(c.claims()[0].fence, 10) {
		t.Errorf("side effects of next: %v, want only the other runner's", side)
	}
	checkRunners(t, task.AttemptRecords, "killed", "other")
	c.drain()
}

// TestFleetPostgresRestart: PostgreSQL crashes (pg_ctl -m immediate) and
// comes back while two runners run a plan: they reconnect and the plan
// finishes with every task SUCCESS, each committed once. Tasks have
// retries: a runner that cannot renew its leases while the server is
// down kills its tasks, which then run again.
func TestFleetPostgresRestart(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	db, err := srv.NewDatabase("solar")
	if err != nil {
		t.Fatal(err)
	}
	f := newFleetEnv(t, db)
	tasks := names("q", 24)
	f.resources(tasks, "tenths=10", "--meta", "retry=2")
	f.must(0, "ch", "process")
	f.must(0, "orch", "submit", "last", "--detach")
	a := f.runner("one", "--concurrency", "3")
	b := f.runner("two", "--concurrency", "3")
	for deadline := time.Now().Add(30 * time.Second); len(f.lines("spans")) < 4; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 4 tasks ran in 30s")
		}
	}
	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	done := len(f.lines("spans"))
	if done >= len(tasks) {
		t.Fatalf("every task had run when PostgreSQL crashed: the test shows nothing")
	}
	t.Logf("PostgreSQL crashed after %d of %d tasks", done, len(tasks))
	time.Sleep(2 * time.Second)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	rep := f.waitFinished(90*time.Second, a, b)
	if rep.Totals["SUCCESS"] != len(tasks) {
		t.Fatalf("after the restart: totals %v, want %d SUCCESS", rep.Totals, len(tasks))
	}
	if o := f.lines("overlap"); o != nil {
		t.Errorf("two attempts of one task ran at once: %v", o)
	}
	// A completion whose commit the crash cut is tried again: it must
	// not commit twice.
	checkCommittedOnce(t, f, rep.UID, tasks)
	for _, r := range []*fleetRunner{a, b} {
		for _, l := range strings.Split(r.said(), "\n") {
			if strings.Contains(l, "recording") || strings.Contains(l, "renew") || strings.Contains(l, "claiming:") {
				t.Logf("%s: %s", r.name, l)
			}
		}
	}
	a.drain()
	b.drain()
}

// TestFleetNodeAffinity: a runner with --nodes claims only the tasks of
// the nodes its expression matches (and, with --no-local, no others):
// the tasks of the other node wait for a runner that matches it.
func TestFleetNodeAffinity(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	node := filepath.Join(f.repo, "testdata", "resources", "node")
	f.must(0, "resource", "create", "n1", node, "ip=127.0.0.1", "--tags", "dc=1")
	f.must(0, "resource", "create", "n2", node, "ip=127.0.0.1", "--tags", "dc=2")
	// The nodes' own tasks run first, by one run of their own.
	f.must(0, "ch", "process")
	f.must(0, "orch", "run-once", "last")
	f.resources([]string{"a1", "a2", "b1", "b2"})
	for _, c := range [][2]string{{"n1", "a1"}, {"n1", "a2"}, {"n2", "b1"}, {"n2", "b2"}} {
		f.must(0, "connect", c[0], c[1])
	}
	f.must(0, "ch", "process")
	f.must(0, "orch", "submit", "last", "--detach")
	one := f.runner("dc1", "--nodes", "dc=1", "--no-local")
	f.waitPath("side-a1", 20*time.Second)
	f.waitPath("side-a2", 20*time.Second)
	// Long enough for a few claim rounds of the runner.
	time.Sleep(2 * time.Second)
	if m, _ := filepath.Glob(filepath.Join(f.out, "started-b*")); m != nil {
		t.Fatalf("the runner of dc=1 ran tasks of n2: %v", m)
	}
	two := f.runner("dc2", "--nodes", "dc=2", "--no-local")
	rep := f.waitFinished(30*time.Second, one, two)
	if rep.Totals["SUCCESS"] != 4 {
		t.Fatalf("totals %v, want 4 SUCCESS", rep.Totals)
	}
	for _, c := range []struct {
		r    *fleetRunner
		want []string
	}{{one, []string{"a1.run#0", "a2.run#0"}}, {two, []string{"b1.run#0", "b2.run#0"}}} {
		if got := c.r.claimedTasks(); !slices.Equal(got, c.want) {
			t.Errorf("runner %s claimed %v, want %v", c.r.name, got, c.want)
		}
	}
	one.drain()
	two.drain()
}

// TestFleetSubmit: orch submit --detach hands a plan over and runners run
// it; orch submit (following) exits 3 when a task fails; orch stop --kill
// from another process kills the running task within 2 s, and the
// follower exits 5.
func TestFleetSubmit(t *testing.T) {
	t.Parallel()
	f := newFleetEnv(t, pgtest.Shared(t))
	f.resources([]string{"d1", "d2"})
	f.must(0, "ch", "process")
	if out := f.must(0, "orch", "submit", "last", "--detach"); !strings.Contains(out, "submitted plan") {
		t.Errorf("submit --detach said %q", out)
	}
	r := f.runner("worker", "--concurrency", "4")
	f.must(0, "orch", "submit", "last")
	if rep := f.report(); !rep.Finished || rep.Totals["SUCCESS"] != 2 {
		t.Fatalf("the detached plan: finished %v totals %v", rep.Finished, rep.Totals)
	}

	f.resources([]string{"bad"})
	if err := os.WriteFile(filepath.Join(f.out, "fail-bad"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.must(0, "ch", "process")
	f.must(3, "orch", "submit", "last")

	f.resources([]string{"long"}, "hold=300")
	f.must(0, "ch", "process")
	follower := f.spawn("follower", "orch", "submit", "last")
	started := f.waitPath("started-long-*", 20*time.Second)
	pidRaw, err := os.ReadFile(filepath.Join(f.out, "pid-long-"+strconv.FormatInt(fence(t, started), 10)))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidRaw)))
	if !running(pid) {
		t.Fatalf("the task's script (pid %d) does not run", pid)
	}
	asked := time.Now()
	f.must(0, "orch", "stop", "last", "--kill")
	for running(pid) {
		if time.Since(asked) > 2*time.Second {
			t.Fatalf("the task still runs 2s after orch stop --kill:\n%s", r.said())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("orch stop --kill ended the task after %s", time.Since(asked).Round(time.Millisecond))
	if code := follower.wait(10 * time.Second); code != 5 {
		t.Fatalf("the follower of a killed plan exited %d, want 5:\n%s", code, follower.said())
	}
	r.drain()
}
