package torture

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// faults is what one run meets.
type faults struct {
	kind   string        // "" (none), "kill", "crash" or "cut"
	at     time.Duration // when, after the first runner's start
	length time.Duration // crash: until the server starts again; cut: until the link heals
	node   int           // cut: the node whose link is cut
	// second is when a second runner starts, on another machine; < 0:
	// none.
	second time.Duration
}

// chooseFaults picks a run's faults among those of the round's mode.
func (r *round) chooseFaults() faults {
	kinds := []string{"", "kill", "kill"}
	if r.mode.pg {
		kinds = append(kinds, "crash", "crash")
	}
	if r.mode.ssh {
		kinds = append(kinds, "cut", "cut")
	}
	f := faults{kind: kinds[r.rng.IntN(len(kinds))], at: millis(r.rng.IntN(2000)), second: -1}
	switch f.kind {
	case "crash":
		f.length = millis(500 + r.rng.IntN(3500))
	case "cut":
		f.length = millis(3000 + r.rng.IntN(3000))
		f.node = r.rng.IntN(len(r.rig.nodes))
	}
	switch {
	case !r.mode.pg || r.rng.IntN(2) == 0:
	case f.kind == "crash":
		// Just after the server is back, while the first runner's long
		// tasks may still run: where a lock held by a session, which the
		// crash ended, let the second runner in.
		f.second = f.at + f.length + millis(r.rng.IntN(1500))
	default:
		f.second = millis(r.rng.IntN(6000))
	}
	return f
}

func millis(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// String is the faults for the round's log.
func (f faults) String() string {
	var parts []string
	switch f.kind {
	case "kill":
		parts = append(parts, fmt.Sprintf("kill -9 at %.2fs", f.at.Seconds()))
	case "crash":
		parts = append(parts, fmt.Sprintf("server crash at %.2fs for %.2fs", f.at.Seconds(), f.length.Seconds()))
	case "cut":
		parts = append(parts, fmt.Sprintf("n%d cut at %.2fs for %.2fs", f.node, f.at.Seconds(), f.length.Seconds()))
	}
	if f.second >= 0 {
		parts = append(parts, fmt.Sprintf("second runner at %.2fs", f.second.Seconds()))
	}
	if len(parts) == 0 {
		return "no fault"
	}
	return strings.Join(parts, ", ")
}

// event is a moment of a run's timeline.
type event struct {
	at time.Duration
	do func()
}

// run runs the plan once (solar orch VERB), with random faults, waits for
// its runners to end and checks the promises. It reports whether every
// task has succeeded.
func (r *round) run(n int, verb string) bool {
	f := r.chooseFaults()
	first := r.start("first", verb, false)
	var second *runner
	injected, inTask := false, false
	events := []event{{f.at, func() { injected, inTask = r.inject(f, first) }}}
	if f.length > 0 {
		events = append(events, event{f.at + f.length, func() {
			if injected {
				r.restore(f)
			}
		}})
	}
	if f.second >= 0 {
		events = append(events, event{f.second, func() { second = r.start("second", "resume", true) }})
	}
	slices.SortStableFunc(events, func(a, b event) int { return int(a.at - b.at) })
	for _, e := range events {
		time.Sleep(time.Until(first.started.Add(e.at)))
		e.do()
	}
	r.wait(first)
	runners := []*runner{first}
	if second != nil {
		r.wait(second)
		runners = append(runners, second)
	}
	what := f.String()
	switch {
	case f.kind != "" && !injected:
		what += " (the run had ended)"
	case inTask:
		what += " (a script ran)"
	}
	// A violation is what matters most: before how the runners ended.
	r.checkRunners(fmt.Sprintf("run %d, %s: %s", n, verb, what), runners)
	var ends []string
	for _, p := range runners {
		o := r.judge(n, p, f, injected, len(runners) > 1)
		ends = append(ends, describe(p, o))
	}
	done, totals := r.settle()
	r.t.Logf("run %d, %s: %s; %s; then %s", n, verb, what, strings.Join(ends, "; "), totals)
	return done
}

// checkRunners fails the round, naming the run, if two attempts of one
// resource overlapped, or if its runners were starting tasks at the same
// time.
func (r *round) checkRunners(run string, runners []*runner) {
	log, overlap := overlapLog(r.t, r.work)
	var violation string
	switch {
	case overlap:
		violation = "two attempts of one resource ran at once:\n" + log
	case len(runners) == 2 && bothStarting(runners[0], runners[1]):
		violation = "both runners started tasks of the plan at the same time"
	default:
		return
	}
	var outs []string
	for _, p := range runners {
		outs = append(outs, fmt.Sprintf("the %s runner's output (exit %d):\n%s", p.name, p.exitCode(), p.out.String()))
	}
	r.t.Fatalf("%s: %s\n%s", run, violation, strings.Join(outs, "\n"))
}

// inject brings f's fault about if the first runner still runs, and
// reports whether it did, and whether a script ran then.
func (r *round) inject(f faults, first *runner) (injected, inTask bool) {
	if f.kind == "" || !first.alive() {
		return false, false
	}
	inTask = scriptsRunning(r.work)
	switch f.kind {
	case "kill":
		first.kill()
		r.st.kills++
		if inTask {
			r.st.killedInTask++
		}
	case "crash":
		if err := r.pg.Crash(); err != nil {
			r.t.Fatal(err)
		}
		r.st.crashes++
	case "cut":
		r.rig.nodes[f.node].link.Cut(r.t)
		r.st.cuts++
	}
	return true, inTask
}

// restore ends the fault inject brought about: the server starts again,
// the link heals.
func (r *round) restore(f faults) {
	switch f.kind {
	case "crash":
		if err := r.pg.Start(); err != nil {
			r.t.Fatal(err)
		}
	case "cut":
		r.rig.nodes[f.node].link.Heal(r.t)
	}
}

// judge fails the round unless the faults of run n explain how runner p
// ended, counts the outcome and returns it. two says a second runner ran
// beside the first.
func (r *round) judge(n int, p *runner, f faults, injected, two bool) outcome {
	t := r.t
	checkOutput(t, p.cmd.Args, p.out.String())
	o := classify(p)
	crashed := injected && f.kind == "crash"
	ok := false
	switch o {
	case outFinished, outKilled:
		ok = true
	case outFailed:
		ok = injected && f.kind == "cut"
		r.st.failedRuns++
	case outLostLease:
		// Accepted whatever the cause: the runner killed its tasks and
		// the plan is resumable. Without a crash it is counted apart.
		ok = r.mode.pg
		r.st.lostLease++
		if !crashed {
			r.st.lostNoCrash++
		}
	case outRefused:
		ok = two
		r.st.refused++
	case outStoreDown, outStoreLost:
		ok = crashed
		r.st.storeGone++
	}
	if p.name == "second" {
		r.st.second++
		if waitedForLease(p) {
			r.st.waited++
		}
		if ranTasks(p) {
			r.st.tookOver++
		}
	}
	if !ok {
		t.Fatalf("run %d (%s): the %s runner ended %q (exit %d), which is not explained by its faults:\n%s",
			n, f, p.name, o, p.exitCode(), p.out.String())
	}
	return o
}
