package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rateNetBase is the base of TestRateAcrossMachines: every task takes a
// start of the rate api, 5 a second with a burst of 1, and its run logs
// its start with the host it ran on and the time.
var rateNetBase = map[string]string{
	"meta.yaml": `handler: shell
version: 1.0.0
meta:
  rate: ["api:5/s"]
actions:
  run: run.sh
inputs:
  out: {schema: str!}
`,
	"run.sh": `echo "start $SOLAR_RESOURCE $(hostname) $(date +%s.%N)" >>"$SOLAR_INPUT_OUT/rate.log"
`,
}

// rateNetTasks is how many tasks the plan of TestRateAcrossMachines has.
const rateNetTasks = 20

// TestRateAcrossMachines: runner a on machine-a, reaching PostgreSQL by
// TCP from a network namespace of its own, and runner b on this machine
// share one plan whose 20 tasks all name the rate api:5/s. Both machines
// start tasks, and together they keep the rate, which lives in the
// database on its clock: at most 5+1 starts in any second, and at least
// (20-1)/5 s from the first start to the last (less 0.3 s for the
// scripts' own start-up). Without the rate the 20 tasks start at once.
func TestRateAcrossMachines(t *testing.T) {
	f := newNetFleet(t)
	base := filepath.Join(f.dir, "ratebase")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range rateNetBase {
		if err := os.WriteFile(filepath.Join(base, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= rateNetTasks; i++ {
		f.solar("resource", "create", "r"+strconv.Itoa(i), base, "out="+f.out)
	}
	f.solar("ch", "process")
	a := f.runner("a", true, 10)
	b := f.runner("b", false, 10)
	a.await(t, "runner a started", 20*time.Second)
	b.await(t, "runner b started", 20*time.Second)
	f.solar("orch", "submit", "last", "--detach", "--concurrency", strconv.Itoa(rateNetTasks))
	f.awaitPlan(rateNetTasks, 60*time.Second)
	a.drain(t)
	b.drain(t)

	starts, hosts := f.rateStarts()
	if len(starts) != rateNetTasks {
		t.Fatalf("%d starts in the scripts' log, want %d", len(starts), rateNetTasks)
	}
	here, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if here == "machine-a" || hosts["machine-a"] == 0 || hosts[here] == 0 {
		t.Errorf("starts by host %v, want some on machine-a and some on %s", hosts, here)
	}
	most, from := mostInWindow(starts, time.Second)
	span := starts[len(starts)-1].Sub(starts[0])
	t.Logf("starts by host %v; at most %d in a second (from start %d); first to last %s", hosts, most, from+1,
		span.Round(time.Millisecond))
	if most > 5+1 {
		t.Errorf("%d starts in the second from start %d, want at most 6 (api:5/s, burst 1)", most, from+1)
	}
	if want := time.Duration(rateNetTasks-1)*time.Second/5 - 300*time.Millisecond; span < want {
		t.Errorf("%s from the first start to the last, want at least %s", span.Round(time.Millisecond), want)
	}
}

// rateStarts reads the scripts' log: the start times in order, and how
// many starts each host made.
func (f *netFleet) rateStarts() ([]time.Time, map[string]int) {
	raw, err := os.ReadFile(filepath.Join(f.out, "rate.log"))
	if err != nil {
		f.t.Fatal(err)
	}
	var starts []time.Time
	hosts := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		w := strings.Fields(l)
		if len(w) != 4 || w[0] != "start" {
			f.t.Fatalf("not a start line in the scripts' log: %q", l)
		}
		secs, err := strconv.ParseFloat(w[3], 64)
		if err != nil {
			f.t.Fatalf("start line %q: %v", l, err)
		}
		starts = append(starts, time.Unix(0, int64(secs*1e9)))
		hosts[w[2]]++
	}
	slices.SortFunc(starts, time.Time.Compare)
	return starts, hosts
}

// mostInWindow returns the most of the sorted times in any half-open
// window [t, t+w), and the index of the first time of such a window.
func mostInWindow(times []time.Time, w time.Duration) (most, from int) {
	j := 0
	for i := range times {
		for j < len(times) && times[j].Sub(times[i]) < w {
			j++
		}
		if j-i > most {
			most, from = j-i, i
		}
	}
	return most, from
}
