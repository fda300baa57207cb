package orch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// fleetScript is the action of the fleet tests' shell base. Every run is
// logged with its fence and attempt; mode says what it does: ok (changes
// something), noop, fail, wait (until the test creates DIR/NAME.go, or
// for ever), waitonce (wait, the first run only).
const fleetScript = `#!/bin/sh
d=$SOLAR_INPUT_DIR n=$SOLAR_RESOURCE
echo "$n $SOLAR_FENCE $SOLAR_ATTEMPT" >> "$d/runs.log"
mode=$SOLAR_INPUT_MODE
if [ "$mode" = waitonce ]; then
	if [ -e "$d/$n.once" ]; then mode=ok; else : > "$d/$n.once"; mode=wait; fi
fi
case $mode in
fail) echo "failing as asked" >&2; exit 1 ;;
noop) printf '{"changed": false}\n' > "$SOLAR_RESULT" ;;
wait)
	: > "$d/$n.started"
	while [ ! -e "$d/$n.go" ]; do sleep 0.05; done ;;
esac
exit 0
`

// fleetRes is one resource of a fleet test's store.
type fleetRes struct {
	name, mode string
	staged     bool
	retry      *int
}

// fleetStack makes a fresh PostgreSQL store holding res (from a shell base
// running fleetScript) and rules, and saves a plan of the staged runs,
// pinned. It returns the store's URL, the plan's uid and the scripts'
// directory.
func fleetStack(t *testing.T, res []fleetRes, rules ...string) (url, uid, dir string) {
	t.Helper()
	url, dir = pgtest.Shared(t), t.TempDir()
	baseDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(baseDir, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := "handler: shell\nversion: 1.0.0\nactions:\n  run: actions/run.sh\ninputs:\n  dir: {schema: str!}\n  mode: {schema: str, value: ok}\n"
	for path, content := range map[string]string{"meta.yaml": meta, "actions/run.sh": fleetScript} {
		if err := os.WriteFile(filepath.Join(baseDir, path), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base, err := resources.LoadBase(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		stg := staging.New(cat, time.Now)
		for _, r := range res {
			spec := resources.CreateSpec{Name: r.name, Base: base, Values: resources.Values{Raw: map[string]any{"dir": dir, "mode": r.mode}}, Meta: resources.Meta{Retry: r.retry}}
			if _, err := cat.Create(spec, false); err != nil {
				return err
			}
			if !r.staged {
				continue
			}
			if _, err := stg.Touch("create", r.name); err != nil {
				return err
			}
		}
		parsed := make([]events.Rule, 0, len(rules))
		for _, text := range rules {
			r, err := events.Parse(text)
			if err != nil {
				return err
			}
			parsed = append(parsed, r)
		}
		if _, err := events.Add(tx, cat, parsed...); err != nil {
			return err
		}
		ents, err := staging.List(tx)
		if err != nil {
			return err
		}
		in := planner.Input{Rules: parsed}
		for _, e := range ents {
			in.Entries = append(in.Entries, planner.Entry{Key: e.Key, Resource: e.Resource, Action: e.Action})
		}
		p, err := planner.Build(in)
		if err != nil {
			return err
		}
		if uid, err = NewUID(tx, time.Now()); err != nil {
			return err
		}
		pins, err := pinPlan(tx, p)
		if err != nil {
			return err
		}
		if err := Save(tx, &Record{UID: uid, CreatedAt: time.Now().UTC(), Selection: []string{}, Plan: p}); err != nil {
			return err
		}
		return savePins(tx, uid, pins)
	})
	if err != nil {
		t.Fatal(err)
	}
	return url, uid, dir
}

// staged lists resources staged with mode.
func staged(mode string, names ...string) []fleetRes {
	out := make([]fleetRes, len(names))
	for i, n := range names {
		out[i] = fleetRes{name: n, mode: mode, staged: true}
	}
	return out
}

// fleetHarness runs in-process FleetRunners on one store and follows
// plans.
type fleetHarness struct {
	t   *testing.T
	url string
	db  *store.DB
	wg  sync.WaitGroup
}

func newFleetHarness(t *testing.T, url string) *fleetHarness {
	db, err := store.Open(url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := db.Fleet(); !ok {
		db.Close()
		t.Fatal("this PostgreSQL store has no fleet (kv.Fleet): store/pg/fleet.go is missing")
	}
	h := &fleetHarness{t: t, url: url, db: db}
	t.Cleanup(func() {
		h.wg.Wait()
		db.Close()
	})
	return h
}

// runner is a FleetRunner running until the test cancels or drains it.
type runner struct {
	cancel context.CancelFunc
	drain  chan struct{}
	done   chan error
	mu     sync.Mutex
	claims []kv.Claim
}

func (h *fleetHarness) start(name string, lease time.Duration) *runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{cancel: cancel, drain: make(chan struct{}), done: make(chan error, 1)}
	f := &FleetRunner{Store: store.NewHandle(h.url), Name: name, Concurrency: 4, Lease: lease, poll: 50 * time.Millisecond,
		Claimed: func(c kv.Claim) {
			r.mu.Lock()
			r.claims = append(r.claims, c)
			r.mu.Unlock()
		}}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		r.done <- f.Run(ctx, r.drain)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func (r *runner) claimed() []kv.Claim {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kv.Claim(nil), r.claims...)
}

func (h *fleetHarness) submit(uid string) {
	h.t.Helper()
	if _, _, err := Submit(h.db, uid, SubmitOptions{By: "test"}); err != nil {
		h.t.Fatalf("submit %s: %v", uid, err)
	}
}

// follow follows plan uid to its end, within a minute.
func (h *fleetHarness) follow(uid string) map[string]State {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, states, err := Follow(ctx, h.db, uid, nil)
	if err != nil {
		h.t.Fatalf("follow %s: %v", uid, err)
	}
	return states
}

// commits checks that every staged task of plan uid that succeeded was
// committed exactly once, and that no other was.
func (h *fleetHarness) commits(uid string) {
	h.t.Helper()
	var cs map[string]commitState
	if err := h.db.View(func(tx *store.Tx) (err error) { cs, err = commitStates(tx, uid); return err }); err != nil {
		h.t.Fatal(err)
	}
	for id, c := range cs {
		want := 0
		if succeeded(c.Status) {
			want = 1
		}
		if c.Committed != want || c.Staged == (want == 1) {
			h.t.Errorf("%s: %s committed %d times, staged %v; want %d commit", id, c.Status, c.Committed, c.Staged, want)
		}
	}
}

// runs counts each resource's runs in dir's log.
func runs(t *testing.T, dir string) map[string]int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out[f[0]]++
		}
	}
	return out
}

// waitFile waits up to 20s for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear within 20s", path)
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantState(t *testing.T, states map[string]State, id string, status Status, reason string) {
	t.Helper()
	st := states[id]
	if st.Status != status || (reason != "" && st.Reason != reason && st.Err != reason) {
		t.Errorf("%s = %s %q %q; want %s %q", id, st.Status, st.Reason, st.Err, status, reason)
	}
}

// TestFleetChainAndFanOnTwoRunners: two runners share a store and a plan
// of a chain and a fan-out/fan-in; every task runs once, in order, and
// commits once; Settle of the settled plan does nothing.
func TestFleetChainAndFanOnTwoRunners(t *testing.T) {
	names := []string{"a", "b", "c", "s", "x1", "x2", "x3", "j"}
	url, uid, dir := fleetStack(t, staged("ok", names...),
		"after a.run b.run", "after b.run c.run",
		"after s.run x1.run", "after s.run x2.run", "after s.run x3.run",
		"after x1.run j.run", "after x2.run j.run", "after x3.run j.run")
	h := newFleetHarness(t, url)
	r1, r2 := h.start("r1", 2*time.Second), h.start("r2", 2*time.Second)
	h.submit(uid)
	states := h.follow(uid)
	for _, n := range names {
		wantState(t, states, n+".run#0", StatusSuccess, "")
	}
	for _, pair := range [][2]string{{"a", "b"}, {"b", "c"}, {"s", "x1"}, {"x3", "j"}} {
		if states[pair[1]+".run#0"].Start.Before(states[pair[0]+".run#0"].End) {
			t.Errorf("%s started before %s ended", pair[1], pair[0])
		}
	}
	for n, k := range runs(t, dir) {
		if k != 1 {
			t.Errorf("%s ran %d times", n, k)
		}
	}
	h.commits(uid)
	if got := len(r1.claimed()) + len(r2.claimed()); got != len(names) {
		t.Errorf("%d claims in all, want %d", got, len(names))
	}
	for range 2 {
		if settled, err := Settle(h.db, uid, time.Now()); err != nil || settled {
			t.Errorf("Settle of a settled plan = %v, %v; want false, nil", settled, err)
		}
	}
}

// TestFleetTruthTable: a react rule that does not fire skips its task
// "not triggered"; one that fires runs it; a failure skips what follows
// "upstream failed: ROOT", however far.
func TestFleetTruthTable(t *testing.T) {
	res := []fleetRes{
		{name: "q", mode: "noop", staged: true}, {name: "qr", mode: "ok"},
		{name: "w", mode: "ok", staged: true}, {name: "wr", mode: "ok"},
		{name: "f", mode: "fail", staged: true}, {name: "f1", mode: "ok", staged: true}, {name: "f2", mode: "ok", staged: true},
	}
	url, uid, dir := fleetStack(t, res, "on q.run changed qr.run", "on w.run changed wr.run", "after f.run f1.run", "after f1.run f2.run")
	h := newFleetHarness(t, url)
	h.start("r1", 2*time.Second)
	h.start("r2", 2*time.Second)
	h.submit(uid)
	states := h.follow(uid)
	wantState(t, states, "q.run#0", StatusNoop, "")
	wantState(t, states, "qr.run#0", StatusSkipped, ReasonNotTriggered)
	wantState(t, states, "wr.run#0", StatusSuccess, "")
	wantState(t, states, "f.run#0", StatusError, "")
	wantState(t, states, "f1.run#0", StatusSkipped, "upstream failed: f.run#0")
	wantState(t, states, "f2.run#0", StatusSkipped, "upstream failed: f.run#0")
	got := runs(t, dir)
	if got["qr"] != 0 || got["f1"] != 0 || got["f2"] != 0 || got["wr"] != 1 {
		t.Errorf("runs %v", got)
	}
	h.commits(uid)
}

// TestFleetKilledRunnerUsesARetry: a runner killed while it runs a task
// gives it back; with a retry left another runner runs it to the end, with
// none it ends ERROR and what follows is skipped.
func TestFleetKilledRunnerUsesARetry(t *testing.T) {
	for _, retry := range []int{1, 0} {
		t.Run(map[int]string{0: "none-left", 1: "one-left"}[retry], func(t *testing.T) {
			res := []fleetRes{{name: "a", mode: "waitonce", staged: true, retry: &retry}, {name: "b", mode: "ok", staged: true}}
			url, uid, dir := fleetStack(t, res, "after a.run b.run")
			h := newFleetHarness(t, url)
			r1 := h.start("r1", 2*time.Second)
			h.submit(uid)
			waitFile(t, filepath.Join(dir, "a.started"))
			r1.cancel()
			if err := <-r1.done; !errors.Is(err, context.Canceled) {
				t.Fatalf("killed runner returned %v", err)
			}
			r1.done <- nil // for the cleanup
			h.start("r2", 2*time.Second)
			states := h.follow(uid)
			if retry == 1 {
				wantState(t, states, "a.run#0", StatusSuccess, "")
				wantState(t, states, "b.run#0", StatusSuccess, "")
				if got := runs(t, dir); got["a"] != 2 || got["b"] != 1 {
					t.Errorf("runs %v, want a twice, b once", got)
				}
			} else {
				wantState(t, states, "a.run#0", StatusError, "runner r1 stopped")
				wantState(t, states, "b.run#0", StatusSkipped, "upstream failed: a.run#0")
			}
			h.commits(uid)
		})
	}
}

// TestFleetStopThenSubmitAgain: a soft stop lets the running task finish
// and skips the rest "stopped"; submitting the plan again runs the rest.
func TestFleetStopThenSubmitAgain(t *testing.T) {
	res := append([]fleetRes{{name: "a", mode: "wait", staged: true}}, staged("ok", "b", "c")...)
	url, uid, dir := fleetStack(t, res, "after a.run b.run", "after b.run c.run")
	h := newFleetHarness(t, url)
	h.start("r1", 2*time.Second)
	h.submit(uid)
	waitFile(t, filepath.Join(dir, "a.started"))
	if res, err := Stop(h.db, uid, false); err != nil || !res.Fleet {
		t.Fatalf("stop = %+v, %v", res, err)
	}
	touch(t, filepath.Join(dir, "a.go"))
	states := h.follow(uid)
	wantState(t, states, "a.run#0", StatusSuccess, "")
	wantState(t, states, "b.run#0", StatusSkipped, ReasonStopped)
	wantState(t, states, "c.run#0", StatusSkipped, ReasonStopped)
	h.submit(uid)
	states = h.follow(uid)
	for _, id := range []string{"a.run#0", "b.run#0", "c.run#0"} {
		wantState(t, states, id, StatusSuccess, "")
	}
	if got := runs(t, dir); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 {
		t.Errorf("runs %v, want one each", got)
	}
	h.commits(uid)
}

// TestFleetKillEndsRunningTaskKilled: a kill moves the plan's epoch; the
// runner kills the running task within two seconds and it ends ERROR
// "killed", which a new submission runs again.
func TestFleetKillEndsRunningTaskKilled(t *testing.T) {
	res := append([]fleetRes{{name: "a", mode: "waitonce", staged: true}}, staged("ok", "b")...)
	url, uid, dir := fleetStack(t, res, "after a.run b.run")
	h := newFleetHarness(t, url)
	h.start("r1", 2*time.Second)
	h.submit(uid)
	waitFile(t, filepath.Join(dir, "a.started"))
	began := time.Now()
	if _, err := Stop(h.db, uid, true); err != nil {
		t.Fatal(err)
	}
	states := h.follow(uid)
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the kill took %v", took)
	}
	wantState(t, states, "a.run#0", StatusError, killed)
	wantState(t, states, "b.run#0", StatusSkipped, ReasonStopped)
	h.submit(uid)
	states = h.follow(uid)
	wantState(t, states, "a.run#0", StatusSuccess, "")
	wantState(t, states, "b.run#0", StatusSuccess, "")
	h.commits(uid)
}

// TestFleetSkipReachesTheRows: filtering a submitted plan while it runs
// skips the tasks not started, in the fleet's rows too (their successors
// decided), and refuses one that a runner runs.
func TestFleetSkipReachesTheRows(t *testing.T) {
	res := append([]fleetRes{{name: "a", mode: "wait", staged: true}}, staged("ok", "b", "c", "d")...)
	url, uid, dir := fleetStack(t, res, "after a.run b.run", "after b.run c.run", "after a.run d.run")
	h := newFleetHarness(t, url)
	h.start("r1", 2*time.Second)
	h.submit(uid)
	waitFile(t, filepath.Join(dir, "a.started"))
	filter := func(keep ...string) error {
		return h.db.Update(func(tx *store.Tx) error {
			rec, err := Load(tx, uid)
			if err != nil {
				return err
			}
			k := map[string]bool{}
			for _, id := range keep {
				k[id] = true
			}
			_, err = FilterPlan(tx, rec, k, time.Now())
			return err
		})
	}
	if err := filter("b.run#0", "c.run#0", "d.run#0"); !errors.Is(err, ErrRunning) {
		t.Fatalf("filtering out the running task: %v, want ErrRunning", err)
	}
	if err := filter("a.run#0", "c.run#0", "d.run#0"); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(dir, "a.go"))
	states := h.follow(uid)
	wantState(t, states, "a.run#0", StatusSuccess, "")
	wantState(t, states, "b.run#0", StatusSkipped, ReasonFiltered)
	wantState(t, states, "c.run#0", StatusSuccess, "") // after a skipped task, as a walk runs it
	wantState(t, states, "d.run#0", StatusSuccess, "")
	if got := runs(t, dir); got["b"] != 0 {
		t.Errorf("b ran %d times after it was filtered out", got["b"])
	}
	h.commits(uid)
}

// TestFleetReapsTheClaimOfAVanishedRunner: a runner that claimed a task
// and vanished (it never heartbeats) loses it when its lease expires; a
// runner that had not loaded the plan reaps it (loading the plan outside
// the reaping transaction), the task uses a retry and runs to the end.
func TestFleetReapsTheClaimOfAVanishedRunner(t *testing.T) {
	one := 1
	res := []fleetRes{{name: "a", mode: "ok", staged: true, retry: &one}, {name: "b", mode: "ok", staged: true}}
	url, uid, dir := fleetStack(t, res, "after a.run b.run")
	h := newFleetHarness(t, url)
	h.submit(uid)
	fleet, _ := h.db.Fleet()
	begin := func(c kv.Claim) (string, string, []byte) {
		raw, err := encodeState(State{Status: StatusInProgress, Start: time.Now()})
		if err != nil {
			t.Error(err)
		}
		return store.Plans, taskKey(c.UID, c.Task), raw
	}
	ghost, err := fleet.Claim(context.Background(), kv.ClaimFilter{Runner: "ghost", Max: 1, TTL: time.Second, Plan: uid}, begin)
	if err != nil || len(ghost) != 1 || ghost[0].Task != "a.run#0" {
		t.Fatalf("ghost's claim: %+v, %v", ghost, err)
	}
	r := h.start("r1", 2*time.Second)
	states := h.follow(uid)
	wantState(t, states, "a.run#0", StatusSuccess, "")
	wantState(t, states, "b.run#0", StatusSuccess, "")
	if got := runs(t, dir); got["a"] != 1 || got["b"] != 1 {
		t.Errorf("runs %v, want one each", got)
	}
	var again kv.Claim
	for _, c := range r.claimed() {
		if c.Task == "a.run#0" {
			again = c
		}
	}
	if again.Claims != 2 || again.Fence <= ghost[0].Fence {
		t.Errorf("a's claim by r1: %+v; want the second, with a fence after the ghost's %d", again, ghost[0].Fence)
	}
	h.commits(uid)
}
