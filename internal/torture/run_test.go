package torture

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runner is one solar orch process of a run.
type runner struct {
	name    string // "first", or "second" for one on another machine
	cmd     *exec.Cmd
	out     bytes.Buffer // read only once done is closed
	done    chan struct{}
	err     error // the process's exit, once done is closed
	killed  bool  // the torture killed it with SIGKILL
	started time.Time
	ended   time.Time // once done is closed
}

// start starts solar orch VERB last; other starts it on another machine,
// as far as solar can tell: in a UTS namespace named "other".
func (r *round) start(name, verb string, other bool) *runner {
	args := []string{"orch", verb, "last", "--concurrency", "4"}
	cmd := exec.Command(r.rig.bin, args...)
	if other {
		cmd = exec.Command("unshare", append([]string{"--uts", "sh", "-c", `hostname other && exec "$0" "$@"`, r.rig.bin}, args...)...)
	}
	cmd.Env = r.env
	p := &runner{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	p.started = time.Now()
	r.st.runs++
	go func() {
		p.err = cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	return p
}

// alive reports whether p still runs.
func (p *runner) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill kills p with SIGKILL and waits until it is gone. Only the process
// solar is killed: what it started dies as its runner's death makes it.
func (p *runner) kill() {
	p.killed = true
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-p.done
}

// wait waits for p to end, failing the round if it does not end within
// settleDeadline.
func (r *round) wait(p *runner) {
	select {
	case <-p.done:
	case <-time.After(settleDeadline):
		_ = p.cmd.Process.Kill()
		<-p.done
		r.t.Fatalf("the %s runner did not end within %s:\n%s", p.name, settleDeadline, p.out.String())
	}
}

// exitCode is p's exit status, or -1 when a signal ended it.
func (p *runner) exitCode() int {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// outcome is how a run ended.
type outcome string

const (
	outFinished  outcome = "finished"      // exit 0: no task left, or none to run
	outKilled    outcome = "killed"        // kill -9 of the torture
	outFailed    outcome = "tasks failed"  // exit 3: some task ended ERROR
	outLostLease outcome = "lost lease"    // exit 1: could not renew its leases in time
	outRefused   outcome = "refused"       // exit 1: another runner runs the plan
	outStoreDown outcome = "store down"    // exit 1: could not reach the store to start
	outStoreLost outcome = "store lost"    // exit 1: the store went away mid-run
	outFenced    outcome = "fenced out"    // exit 1: another runner took the plan while it ran
	outUnknown   outcome = "unexplained"   // anything else
	outWaited    outcome = "waited, then " // prefix: waited for a silent runner's lease
)

// classify tells how p ended from its exit and its last words.
func classify(p *runner) outcome {
	out := p.out.String()
	code := p.exitCode()
	switch {
	case p.killed:
		return outKilled
	case code == 0:
		return outFinished
	case code == 3:
		return outFailed
	case code != 1:
		return outUnknown
	case strings.Contains(out, "this runner lost its claim on the plan"):
		// Fencing caught a runner that went on after another took the
		// plan: it should have stopped before its lease expired.
		return outFenced
	case strings.Contains(out, "lost the lease on plan"):
		return outLostLease
	case strings.Contains(out, "is being run by pid"), strings.Contains(out, "is being claimed by another process"):
		return outRefused
	case strings.Contains(out, "cannot connect"):
		return outStoreDown
	case strings.Contains(out, "store postgres"):
		// A statement failed on a connection the crash broke.
		return outStoreLost
	}
	return outUnknown
}

// waitedForLease reports whether p said it waited for the lease of a
// runner that had stopped renewing it.
func waitedForLease(p *runner) bool {
	return strings.Contains(p.out.String(), "has not renewed its lease for")
}

// ranTasks reports whether p started a task.
func ranTasks(p *runner) bool { return strings.Contains(p.out.String(), " INPROGRESS") }

// describe is p's outcome for the round's log.
func describe(p *runner, o outcome) string {
	s := string(o)
	if waitedForLease(p) {
		s = string(outWaited) + s
	}
	if ranTasks(p) && p.name == "second" {
		s += ", having run tasks,"
	}
	if o != outFinished && o != outKilled && o != outFailed {
		s += fmt.Sprintf(" (%q)", lastError(p))
	}
	return fmt.Sprintf("%s runner %s after %.1fs", p.name, s, p.ended.Sub(p.started).Seconds())
}

// startSlack bounds how long a runner takes from its exec to the moment
// its progress lines count time from.
const startSlack = 2 * time.Second

// taskStarts returns the first and the last moment p started a task, at
// the earliest (on this process's clock: p's start plus the time its
// progress line shows, which counts from a moment later), and whether p
// started any.
func taskStarts(p *runner) (first, last time.Time, ok bool) {
	for _, line := range strings.Split(p.out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "INPROGRESS" || !strings.HasSuffix(f[0], "s") {
			continue
		}
		secs, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "s"), 64)
		if err != nil {
			continue
		}
		at := p.started.Add(time.Duration(secs * float64(time.Second)))
		if !ok || at.Before(first) {
			first = at
		}
		if !ok || at.After(last) {
			last = at
		}
		ok = true
	}
	return first, last, ok
}

// bothStarting reports whether two runners of one plan were starting
// tasks at the same time: each started one before the other's last,
// beyond what the uncertainty of their clocks explains. A runner must not
// start a task once another has taken the plan from it.
func bothStarting(a, b *runner) bool {
	af, al, aok := taskStarts(a)
	bf, bl, bok := taskStarts(b)
	return aok && bok && af.Add(startSlack).Before(bl) && bf.Add(startSlack).Before(al)
}

// lastError is the last error line p printed, cut short.
func lastError(p *runner) string {
	lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.HasPrefix(l, "solar: ") {
			if len(l) > 240 {
				l = l[:240] + "..."
			}
			return l
		}
	}
	return ""
}
