package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/actor"
	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/internal/sshdtest"
)

// TestStopFromAnotherMachine: a runner on a PostgreSQL store runs a plan
// whose first task holds; "orch stop" and then "orch stop --kill" are run
// from another machine: a UTS and PID namespace of their own with another
// host name, from where no signal can reach the runner. The runner must
// act on each through the store alone: it says the stop was asked for
// within a second and a half, and the kill ends its running task, and the
// run, within three seconds; the report shows the task killed and the
// next one skipped as stopped.
func TestStopFromAnotherMachine(t *testing.T) {
	if os.Geteuid() != 0 {
		sshdtest.Require(t, "root", "the stopper runs in namespaces of its own (unshare --uts --pid)")
	}
	for _, tool := range []string{"unshare", "hostname"} {
		if _, err := exec.LookPath(tool); err != nil {
			sshdtest.Require(t, tool, "apt-get install util-linux hostname")
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "solar")
	out := filepath.Join(dir, "out")
	for _, d := range []string{filepath.Dir(bin), out, filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, bin, 0o755)
	env := []string{"HOME=" + filepath.Join(dir, "home"), "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"SOLAR_DB=" + pgtest.Shared(t), "NO_COLOR=1"}
	solar := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("solar %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	base := filepath.Join(dir, "base")
	for name, body := range anyMachineBase {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	solar("resource", "create", "long", base, "out="+out, "hold=1")
	solar("resource", "create", "next", base, "out="+out)
	solar("events", "add", "after long.run next.run")
	solar("ch", "process")

	run := exec.Command(bin, "orch", "run-once", "last")
	run.Env = env
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Kill() }()
	lines := make(chan string, 100)
	var said bytes.Buffer
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitFile(t, filepath.Join(out, "held-long"))

	// From the other machine: the runner is named by pid and host.
	stop := func(args ...string) string {
		t.Helper()
		argv := append([]string{"--uts", "--pid", "--fork", "sh", "-c", `hostname other-machine && exec "$0" "$@"`, bin, "orch", "stop", "last"}, args...)
		c := exec.Command("unshare", argv...)
		c.Env = env
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("orch stop %v: %v\n%s", args, err, b)
		}
		want := regexp.MustCompile(fmt.Sprintf(`^asked the runner of plan \S+ \(pid %d on %s\) to stop`, run.Process.Pid, regexp.QuoteMeta(actor.Host())))
		if !want.Match(b) {
			t.Fatalf("orch stop %v said %q, want it to match %s", args, b, want)
		}
		return string(b)
	}
	// wait reads the runner's lines until one matches re, for up to
	// bound, and returns how long that took.
	wait := func(re string, bound time.Duration) time.Duration {
		t.Helper()
		start, deadline := time.Now(), time.After(bound)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the runner ended without saying %q:\n%s", re, said.String())
				}
				said.WriteString(l + "\n")
				if regexp.MustCompile(re).MatchString(l) {
					return time.Since(start)
				}
			case <-deadline:
				t.Fatalf("the runner did not say %q within %s:\n%s", re, bound, said.String())
			}
		}
	}

	stop()
	took := wait(`^stop requested: running tasks finish, no new task starts$`, 1500*time.Millisecond)
	t.Logf("orch stop from another machine: the runner acted after %s", took)

	stop("--kill")
	start := time.Now()
	wait(`orch stop --kill: killing running tasks`, 1500*time.Millisecond)
	for range lines {
	}
	_ = run.Wait()
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("orch stop --kill from another machine: the run ended after %s, want < 3s", took)
	} else {
		t.Logf("orch stop --kill from another machine: the run ended after %s", took)
	}

	var rep struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Reason string `json:"reason"`
			Error  string `json:"error"`
		} `json:"tasks"`
	}
	raw := solar("orch", "report", "last", "--json")
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, raw)
	}
	got := map[string]string{}
	for _, task := range rep.Tasks {
		got[task.ID] = strings.TrimSpace(task.Status + " " + task.Reason + " " + task.Error)
	}
	want := map[string]string{"long.run#0": "ERROR killed", "next.run#0": "SKIPPED stopped"}
	for id, w := range want {
		if !strings.HasPrefix(got[id], strings.Split(w, " ")[0]) || !strings.Contains(got[id], strings.Split(w, " ")[1]) {
			t.Errorf("%s: %q, want %s (report %s)", id, got[id], w, raw)
		}
	}
}
