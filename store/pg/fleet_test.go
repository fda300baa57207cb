package pg_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

var bg = context.Background()

// fleetStore opens a new store and returns it with its URL.
func fleetStore(t *testing.T) (*pg.Store, string) {
	t.Helper()
	u := newURL(t, pgtest.Shared(t))
	return open(t, u, opts()), u
}

// fleetUpdate runs fn on the fleet of a serializable transaction.
func fleetUpdate(t *testing.T, s *pg.Store, fn func(f kv.FleetTx) error) {
	t.Helper()
	if err := s.Update(func(tx kv.Tx) error { return fn(tx.(kv.FleetTx)) }); err != nil {
		t.Fatal(err)
	}
}

func submit(t *testing.T, s *pg.Store, uid string, tasks []kv.FleetTask) {
	t.Helper()
	fleetUpdate(t, s, func(f kv.FleetTx) error { return f.FleetSubmit(kv.FleetPlan{UID: uid, By: "test"}, tasks) })
}

// ready makes n ready tasks t000... of weight 0 with slots.
func ready(n int, slots ...kv.Slot) []kv.FleetTask {
	tasks := make([]kv.FleetTask, n)
	for i := range tasks {
		tasks[i] = kv.FleetTask{Task: fmt.Sprintf("t%03d", i), State: kv.RowReady, Slots: slots}
	}
	return tasks
}

func claim(t *testing.T, s *pg.Store, f kv.ClaimFilter) []kv.Claim {
	t.Helper()
	if f.Runner == "" {
		f.Runner = "r1"
	}
	if f.TTL == 0 {
		f.TTL = 10 * time.Second
	}
	cs, err := s.Claim(bg, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func tasksOf(cs []kv.Claim) []string {
	var ts []string
	for _, c := range cs {
		ts = append(ts, c.Task)
	}
	return ts
}

func complete(t *testing.T, s *pg.Store, c kv.Claim) bool {
	t.Helper()
	var ok bool
	fleetUpdate(t, s, func(f kv.FleetTx) (err error) { ok, err = f.FleetComplete(c); return err })
	return ok
}

func TestFleetClaimsSkipLockedRows(t *testing.T) {
	s, _ := fleetStore(t)
	submit(t, s, "p", ready(200))
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for _, r := range []string{"a", "b"} {
		wg.Go(func() {
			for {
				cs, err := s.Claim(bg, kv.ClaimFilter{Runner: r, Max: 3, TTL: time.Minute}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					if prev, ok := seen[c.Task]; ok {
						t.Errorf("task %s claimed by %s and by %s", c.Task, prev, r)
					}
					seen[c.Task] = r
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Errorf("%d tasks claimed of 200", len(seen))
	}
}

func TestFleetSlotHoldsAcrossClaimers(t *testing.T) {
	s, u := fleetStore(t)
	submit(t, s, "p", ready(20, kv.Slot{Name: "sema/x", Count: 1}, kv.Slot{Name: "plan/p", Count: 5}))
	var done atomic.Int32
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			for done.Load() < 20 {
				cs, err := s.Claim(bg, kv.ClaimFilter{Runner: fmt.Sprint("r", r), Max: 2, TTL: time.Minute}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(cs) > 1 {
					t.Errorf("one claim took %d tasks of a slot of 1", len(cs))
				}
				if len(cs) == 0 {
					time.Sleep(time.Millisecond)
				}
				for _, c := range cs {
					var n int
					queryRow(t, u, "SELECT count(*) FROM "+schemaOf(u)+".fleet_task WHERE state = 2", &n)
					if n != 1 {
						t.Errorf("%d tasks of a slot of 1 claimed at once", n)
					}
					time.Sleep(2 * time.Millisecond)
					if !complete(t, s, c) {
						t.Errorf("completion of %+v matched nothing", c)
					}
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
}

func TestFleetClaimOrderAndFilters(t *testing.T) {
	s, _ := fleetStore(t)
	submit(t, s, "p", []kv.FleetTask{
		{Task: "light", State: kv.RowReady, Weight: 1},
		{Task: "heavy", State: kv.RowReady, Weight: 9},
		{Task: "mid-b", State: kv.RowReady, Weight: 5},
		{Task: "mid-a", State: kv.RowReady, Weight: 5},
		{Task: "waits", State: kv.RowWaiting, Waiting: 1, Weight: 99},
	})
	var got []string
	for {
		cs := claim(t, s, kv.ClaimFilter{Max: 1})
		if len(cs) == 0 {
			break
		}
		got = append(got, cs[0].Task)
	}
	if want := []string{"heavy", "mid-a", "mid-b", "light"}; !slices.Equal(got, want) {
		t.Errorf("claimed in order %v, want %v", got, want)
	}

	nodes := []kv.FleetTask{
		{Task: "on-a", State: kv.RowReady, Node: "a"},
		{Task: "on-b", State: kv.RowReady, Node: "b"},
		{Task: "local", State: kv.RowReady},
	}
	for _, c := range []struct {
		name string
		f    kv.ClaimFilter
		want []string
	}{
		{"any node", kv.ClaimFilter{}, []string{"local", "on-a", "on-b"}},
		{"node a", kv.ClaimFilter{Nodes: []string{"a"}}, []string{"local", "on-a"}},
		{"node a, no local", kv.ClaimFilter{Nodes: []string{"a"}, NoLocal: true}, []string{"on-a"}},
		{"no node", kv.ClaimFilter{Nodes: []string{}}, []string{"local"}},
		{"any node, no local", kv.ClaimFilter{NoLocal: true}, []string{"on-a", "on-b"}},
		{"other plan", kv.ClaimFilter{Plan: "q"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			submit(t, s, "n", nodes)
			c.f.Max = 10
			if c.f.Plan == "" {
				c.f.Plan = "n"
			}
			if got := tasksOf(claim(t, s, c.f)); !slices.Equal(got, c.want) {
				t.Errorf("claimed %v, want %v", got, c.want)
			}
		})
	}

	// A plan that is not live is not claimed from.
	submit(t, s, "n", nodes)
	fleetUpdate(t, s, func(f kv.FleetTx) error { return f.FleetSetPlan("n", false, true, 0) })
	if cs := claim(t, s, kv.ClaimFilter{Max: 10}); len(cs) != 0 {
		t.Errorf("claimed %v of a stopped plan", tasksOf(cs))
	}
}

func TestFleetHeartbeatRenewsAndReapExpires(t *testing.T) {
	s, _ := fleetStore(t)
	submit(t, s, "p", ready(2))
	const short = 300 * time.Millisecond
	cs := claim(t, s, kv.ClaimFilter{Runner: "r1", Max: 2, TTL: short})
	if len(cs) != 2 || cs[0].Claims != 1 || cs[0].Attempts != 0 || cs[0].Epoch != 1 || cs[0].Fence == cs[1].Fence {
		t.Fatalf("claims %+v", cs)
	}
	reap := func() (got []kv.Claim) {
		fleetUpdate(t, s, func(f kv.FleetTx) (err error) {
			got, err = f.FleetReap(10)
			for _, c := range got {
				if ok, err := f.FleetRelease(c, true); err != nil || !ok {
					return fmt.Errorf("release of %+v: %v %v", c, ok, err)
				}
			}
			return err
		})
		return got
	}
	if got := reap(); len(got) != 0 {
		t.Fatalf("reaped live leases %+v", got)
	}
	// Renewed for long: nothing expires after the first lease's end.
	hb, err := s.Heartbeat(bg, "r1", time.Minute)
	if err != nil || len(hb) != 2 || hb[0].Fence != cs[0].Fence || !hb[0].Live || hb[0].Epoch != 1 {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	time.Sleep(short + 200*time.Millisecond)
	if got := reap(); len(got) != 0 {
		t.Fatalf("reaped renewed leases %+v", got)
	}
	// Not renewed: reaped on the database's clock, ready again, and the
	// old owner's heartbeat no longer names it.
	if _, err := s.Heartbeat(bg, "r1", short); err != nil {
		t.Fatal(err)
	}
	time.Sleep(short + 200*time.Millisecond)
	got := reap()
	if len(got) != 2 || got[0].Owner != "r1" || got[0].Fence != cs[0].Fence || got[0].Claims != 1 || got[0].Epoch != 1 {
		t.Fatalf("reaped %+v", got)
	}
	again := claim(t, s, kv.ClaimFilter{Runner: "r2", Max: 1})
	if len(again) != 1 || again[0].Claims != 2 || again[0].Attempts != 1 || again[0].Fence <= cs[1].Fence {
		t.Fatalf("claimed again %+v", again)
	}
	if hb, err := s.Heartbeat(bg, "r1", time.Minute); err != nil || len(hb) != 0 {
		t.Errorf("heartbeat of the fenced-out runner: %+v %v", hb, err)
	}
	if hb, err := s.Heartbeat(bg, "r2", time.Minute); err != nil || len(hb) != 1 || hb[0].Task != again[0].Task {
		t.Errorf("heartbeat of the new owner: %+v %v", hb, err)
	}
	if complete(t, s, cs[0]) || complete(t, s, cs[1]) {
		t.Error("the reaped claims completed")
	}
}

func TestFleetCompleteIsFenced(t *testing.T) {
	s, _ := fleetStore(t)
	submit(t, s, "p", ready(1))
	c := claim(t, s, kv.ClaimFilter{Max: 1})[0]
	for name, bad := range map[string]func(*kv.Claim){
		"fence": func(c *kv.Claim) { c.Fence++ },
		"owner": func(c *kv.Claim) { c.Owner = "r2" },
		"epoch": func(c *kv.Claim) { c.Epoch++ },
		"task":  func(c *kv.Claim) { c.Task = "t999" },
	} {
		b := c
		bad(&b)
		if complete(t, s, b) {
			t.Errorf("a completion with a wrong %s matched", name)
		}
	}
	// A plan whose epoch moved fences out its claims.
	fleetUpdate(t, s, func(f kv.FleetTx) error { return f.FleetSetPlan("p", true, true, c.Epoch) })
	if complete(t, s, c) {
		t.Error("a completion of the plan's former epoch matched")
	}
	fleetUpdate(t, s, func(f kv.FleetTx) error {
		if err := f.FleetSetPlan("p", true, true, c.Epoch); !errors.Is(err, kv.ErrFleetEpoch) {
			t.Errorf("compare-and-swap on a moved epoch: %v", err)
		}
		return nil
	})
	c.Epoch++
	if !complete(t, s, c) {
		t.Error("the claim's completion matched nothing")
	}
	if complete(t, s, c) {
		t.Error("a claim completed twice")
	}
	p, ok, err := s.PlanState(bg, "p")
	if err != nil || !ok || p.Epoch != 2 || !p.Live || p.Done != 1 || p.Claimed+p.Ready+p.Waiting != 0 || p.By != "test" {
		t.Errorf("plan state %+v %v %v", p, ok, err)
	}
	if _, ok, err := s.PlanState(bg, "nope"); ok || err != nil {
		t.Errorf("state of a plan never submitted: %v %v", ok, err)
	}
}

func TestFleetCountDownToReady(t *testing.T) {
	s, _ := fleetStore(t)
	submit(t, s, "p", []kv.FleetTask{
		{Task: "a", State: kv.RowReady},
		{Task: "b", State: kv.RowReady},
		{Task: "c", State: kv.RowWaiting, Waiting: 2, Slots: []kv.Slot{{Name: "sema/s", Count: 2}, {Name: "resource/r", Count: 1}}},
		{Task: "d", State: kv.RowWaiting, Waiting: 2},
	})
	var zero []string
	fleetUpdate(t, s, func(f kv.FleetTx) (err error) { zero, err = f.FleetCountDown("p", []string{"c", "d", "d"}); return err })
	if !slices.Equal(zero, []string{"d"}) {
		t.Fatalf("waiting for none after one round: %v", zero)
	}
	fleetUpdate(t, s, func(f kv.FleetTx) (err error) { zero, err = f.FleetCountDown("p", []string{"c"}); return err })
	if !slices.Equal(zero, []string{"c"}) {
		t.Fatalf("waiting for none after two rounds: %v", zero)
	}
	fleetUpdate(t, s, func(f kv.FleetTx) error {
		if err := f.FleetSet("p", []string{"c"}, true); err != nil {
			return err
		}
		return f.FleetSet("p", []string{"d"}, false)
	})
	var rows []kv.FleetRow
	fleetUpdate(t, s, func(f kv.FleetTx) (err error) { rows, err = f.FleetRows("p"); return err })
	want := []kv.FleetRow{{Task: "a", State: 1}, {Task: "b", State: 1}, {Task: "c", State: 1}, {Task: "d", State: 3}}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %+v, want %+v", rows, want)
	}
	if got := tasksOf(claim(t, s, kv.ClaimFilter{Max: 10})); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("claimed %v", got)
	}
	fleetUpdate(t, s, func(f kv.FleetTx) error { return f.FleetDrop("p") })
	if _, ok, _ := s.PlanState(bg, "p"); ok {
		t.Error("a dropped plan is still there")
	}
}

func TestFleetClaimWritesBeginsRecord(t *testing.T) {
	s, _ := fleetStore(t)
	submit(t, s, "p", ready(3))
	begin := func(c kv.Claim) (string, string, []byte) {
		if c.Task == "t001" {
			return "", "", nil
		}
		return "one", "run/" + c.Task, fmt.Appendf(nil, "INPROGRESS %s %d", c.Owner, c.Fence)
	}
	cs, err := s.Claim(bg, kv.ClaimFilter{Runner: "r1", Max: 3, TTL: time.Minute}, begin)
	if err != nil || len(cs) != 3 {
		t.Fatal(cs, err)
	}
	err = s.View(func(tx kv.Tx) error {
		for _, c := range cs {
			v, err := tx.Get("one", "run/"+c.Task)
			switch {
			case c.Task == "t001" && !errors.Is(err, kv.ErrNotFound):
				t.Errorf("a record where begin gave none: %q %v", v, err)
			case c.Task != "t001" && string(v) != fmt.Sprintf("INPROGRESS r1 %d", c.Fence):
				t.Errorf("record of %s: %q %v", c.Task, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFleetRunners(t *testing.T) {
	s, u := fleetStore(t)
	started := time.Now().Truncate(time.Second)
	for _, name := range []string{"zed", "abe"} {
		r := kv.FleetRunner{Name: name, Host: "h", Version: "v1", PID: 7, Concurrency: 4, Nodes: "tag:web", Started: started}
		if err := s.Register(bg, r); err != nil {
			t.Fatal(err)
		}
	}
	submit(t, s, "p", ready(3))
	claim(t, s, kv.ClaimFilter{Runner: "zed", Max: 2})
	rs, err := s.Runners(bg)
	if err != nil || len(rs) != 2 || rs[0].Name != "abe" || rs[1].Name != "zed" {
		t.Fatalf("runners %+v %v", rs, err)
	}
	if rs[0].Held != 0 || rs[1].Held != 2 || rs[1].Silent > 5*time.Second || rs[1].Nodes != "tag:web" || rs[1].PID != 7 || !rs[1].Started.Equal(started) {
		t.Errorf("runners %+v", rs)
	}
	exec1(t, u, "UPDATE "+schemaOf(u)+".fleet_runner SET heartbeat = now() - interval '30 seconds' WHERE name = 'zed'")
	exec1(t, u, "UPDATE "+schemaOf(u)+".fleet_runner SET heartbeat = now() - interval '2 minutes' WHERE name = 'abe'")
	rs, err = s.Runners(bg)
	if err != nil || len(rs) != 1 || rs[0].Silent < 30*time.Second || rs[0].Silent > 35*time.Second {
		t.Fatalf("runners after silence %+v %v", rs, err)
	}
	// A heartbeat is heard.
	if _, err := s.Heartbeat(bg, "zed", time.Minute); err != nil {
		t.Fatal(err)
	}
	if rs, _ = s.Runners(bg); len(rs) != 1 || rs[0].Silent > 5*time.Second {
		t.Errorf("runners after a heartbeat %+v", rs)
	}
	if err := s.Unregister(bg, "zed"); err != nil {
		t.Fatal(err)
	}
	if rs, err = s.Runners(bg); err != nil || len(rs) != 0 {
		t.Errorf("runners after unregistering %+v %v", rs, err)
	}
}

func TestFleetLayoutUpgrade(t *testing.T) {
	s, u := fleetStore(t)
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Back to layout 2: no fleet.
	sc := schemaOf(u)
	exec1(t, u, "DROP TABLE "+sc+".fleet_plan, "+sc+".fleet_task, "+sc+".fleet_slot, "+sc+".fleet_runner; DROP SEQUENCE "+sc+".fleet_fence;"+
		" UPDATE "+sc+".solar_layout SET version = 2")
	s = open(t, u, opts())
	in, err := s.Info()
	if err != nil || in.LayoutVersion != pg.LayoutVersion || in.Keys["one"] != 1 {
		t.Fatalf("after the upgrade: %+v %v", in, err)
	}
	submit(t, s, "p", ready(1))
	if cs := claim(t, s, kv.ClaimFilter{Max: 1}); len(cs) != 1 {
		t.Errorf("claimed %+v after the upgrade", cs)
	}
}

func TestFleetSubmitManyIsQuick(t *testing.T) {
	s, _ := fleetStore(t)
	tasks := ready(10000, kv.Slot{Name: "plan/p", Count: 8}, kv.Slot{Name: "sema/s", Count: 2})
	start := time.Now()
	submit(t, s, "p", tasks)
	t.Logf("10,000 tasks submitted in %s", time.Since(start))
	if took := time.Since(start); took > time.Second {
		t.Errorf("submitting 10,000 tasks took %s", took)
	}
	p, _, err := s.PlanState(bg, "p")
	if err != nil || p.Ready != 10000 {
		t.Fatalf("%+v %v", p, err)
	}
	// Resubmitted: old rows replaced, epoch moved on.
	submit(t, s, "p", ready(2))
	if p, _, _ = s.PlanState(bg, "p"); p.Ready != 2 || p.Epoch != 2 {
		t.Errorf("resubmitted: %+v", p)
	}
}

func TestFleetReleaseSubmitAndReadOnly(t *testing.T) {
	s, _ := fleetStore(t)
	tasks := ready(2)
	tasks[0].Attempts, tasks[1].Attempts = 2, 5
	submit(t, s, "p", tasks)
	cs := claim(t, s, kv.ClaimFilter{Max: 2})
	if len(cs) != 2 || cs[0].Attempts != 2 || cs[1].Attempts != 5 {
		t.Fatalf("claims of tasks with earlier attempts: %+v", cs)
	}
	fleetUpdate(t, s, func(f kv.FleetTx) error {
		if ok, err := f.FleetRelease(cs[0], false); !ok || err != nil {
			return fmt.Errorf("release to done: %v %v", ok, err)
		}
		if ok, err := f.FleetRelease(cs[0], true); ok || err != nil {
			t.Errorf("a released claim released again: %v %v", ok, err)
		}
		return nil
	})
	p, _, _ := s.PlanState(bg, "p")
	if p.Done != 1 || p.Claimed != 1 {
		t.Errorf("after a release to done: %+v", p)
	}

	bad := []kv.FleetTask{{Task: "x", State: kv.RowReady, Slots: []kv.Slot{{Name: "sema/a\x1fb", Count: 1}}}}
	err := s.Update(func(tx kv.Tx) error { return tx.(kv.FleetTx).FleetSubmit(kv.FleetPlan{UID: "p"}, bad) })
	if err == nil || !strings.Contains(err.Error(), `"sema/a\x1fb"`) {
		t.Errorf("a slot name with a unit separator: %v", err)
	}
	if p2, _, _ := s.PlanState(bg, "p"); p2 != p {
		t.Errorf("a refused submission changed the plan: %+v, was %+v", p2, p)
	}

	err = s.View(func(tx kv.Tx) error {
		f := tx.(kv.FleetTx)
		if err := f.FleetSetPlan("p", false, true, 0); !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("a plan set in a View: %v", err)
		}
		if _, err := f.FleetReap(1); !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("a reap in a View: %v", err)
		}
		rows, err := f.FleetRows("p")
		if err != nil || len(rows) != 2 || rows[1].Owner != "r1" || rows[1].Fence != cs[1].Fence || rows[1].Claims != 1 {
			t.Errorf("rows read in a View: %+v %v", rows, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
