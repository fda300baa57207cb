package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/internal/sshdtest"
)

// The tests of this file run a plan from "another machine": a second OS
// user, in a UTS namespace with another host name, that shares only the
// store with the first; neither can read the other's home. The resources'
// base directory is removed before the second runs anything, so every
// script it runs comes from the store (issue 29, "From any machine").
//
// Both tests run as the same two OS users, one after the other (not in
// parallel): each checks at its end that no process of those users is
// left. The OS users are made with useradd the first time and left in
// place (as internal/sshdtest leaves its own); every file of a test is
// under its temporary directories, which it removes.

// operatorUsers are the accounts of operator A and operator B.
var operatorUsers = [2]string{"solaropa", "solaropb"}

// base is the shell base both operators' resources use: run writes the
// task's values into a file of $out named after the resource and the OS
// user that ran it; hold=1 first sleeps, the first time only; a resource
// whose $out/fail-NAME exists fails.
var anyMachineBase = map[string]string{
	"meta.yaml": `handler: shell
version: 1.0.0
actions:
  run: actions/run.sh
inputs:
  out: {schema: str!}
  value: {schema: str, value: ""}
  hold: {schema: int, value: 0}
`,
	"actions/run.sh": `o=$SOLAR_INPUT_OUT
[ -e "$o/fail-$SOLAR_RESOURCE" ] && { echo "asked to fail" >&2; exit 1; }
if [ "$SOLAR_INPUT_HOLD" = 1 ] && mkdir "$o/held-$SOLAR_RESOURCE" 2>/dev/null; then
	sleep 50 &
	wait
fi
printf '%s\n' "$SOLAR_INPUT_VALUE" >"$o/$SOLAR_RESOURCE-$(id -un)"
`,
}

// operator is one person at one machine: an OS user, a home of its own
// for this test, and a host name ("" for this machine's).
type operator struct {
	t    *testing.T
	name string
	uid  int
	gid  int
	home string
	host string
	bin  string
	db   string
	env  []string // beyond HOME, PATH and SOLAR_DB
}

// anyMachine is what both tests share: the solar binary and a directory
// every user may write the scripts' output into.
type anyMachine struct {
	root string // 0755: bin/solar, out (1777)
	bin  string
	out  string
	a, b *operator
}

// newAnyMachine checks what the test needs, copies the solar binary where
// both users reach it, and makes the two operators, each with a home of its
// own (0700) and B on another host.
func newAnyMachine(t *testing.T) *anyMachine {
	if os.Geteuid() != 0 {
		sshdtest.Require(t, "root", "the test runs solar as two OS users it makes with useradd")
	}
	for _, tool := range []string{"useradd", "usermod", "runuser", "unshare", "hostname", "env"} {
		if _, err := exec.LookPath(tool); err != nil {
			sshdtest.Require(t, tool, "apt-get install passwd util-linux hostname coreutils")
		}
	}
	root, err := os.MkdirTemp("", "solar-anymachine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	m := &anyMachine{root: root, bin: filepath.Join(root, "bin", "solar"), out: filepath.Join(root, "out")}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{root, 0o755}, {filepath.Dir(m.bin), 0o755}, {m.out, 0o1777}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	// The test binary is solar when it is called "solar" (TestMain).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, m.bin, 0o755)
	m.a = newOperator(t, operatorUsers[0], "", m.bin)
	m.b = newOperator(t, operatorUsers[1], "solar-machine-b", m.bin)
	return m
}

// newOperator makes sure the OS user exists (useradd -m; usermod -p '*'
// unlocks it) with a home only it may read, and gives it a fresh
// directory of that home as its HOME for this test.
func newOperator(t *testing.T, name, host, bin string) *operator {
	u, err := user.Lookup(name)
	if err != nil {
		out, addErr := exec.Command("useradd", "-m", "-s", "/bin/sh", name).CombinedOutput()
		// Another test process may have made it meanwhile.
		if u, err = user.Lookup(name); err != nil {
			t.Fatalf("useradd %s: %v: %s", name, addErr, out)
		}
	}
	if out, err := exec.Command("usermod", "-p", "*", name).CombinedOutput(); err != nil {
		t.Fatalf("usermod %s: %v: %s", name, err, out)
	}
	op := &operator{t: t, name: name, host: host, bin: bin}
	op.uid, _ = strconv.Atoi(u.Uid)
	op.gid, _ = strconv.Atoi(u.Gid)
	if err := os.MkdirAll(u.HomeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, step := range []error{os.Chown(u.HomeDir, op.uid, op.gid), os.Chmod(u.HomeDir, 0o700)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if op.home, err = os.MkdirTemp(u.HomeDir, "solar-e2e-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(op.home) })
	op.chown(op.home)
	return op
}

// chown gives path, and everything under it, to op.
func (op *operator) chown(path string) {
	err := filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, op.uid, op.gid)
	})
	if err != nil {
		op.t.Fatal(err)
	}
}

// writeBase writes anyMachineBase into dir as op, the directory 0700.
func (op *operator) writeBase(dir string) {
	for name, body := range anyMachineBase {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			op.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			op.t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		op.t.Fatal(err)
	}
	op.chown(dir)
}

// command is solar ARGS run as op, with no environment but its own (env
// -i), on op's host.
func (op *operator) command(args ...string) *exec.Cmd {
	argv := []string{"runuser", "-u", op.name, "--", "env", "-i", "HOME=" + op.home,
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "SOLAR_DB=" + op.db, "NO_COLOR=1", "SOLAR_LOCK_WAIT=10s"}
	argv = append(append(argv, op.env...), op.bin)
	argv = append(argv, args...)
	if op.host != "" {
		// Root names the namespace, then runuser becomes op.
		argv = append([]string{"unshare", "--uts", "sh", "-c", `hostname "$0" && exec "$@"`, op.host}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/" // op may not reach the test's working directory
	return cmd
}

// run runs solar ARGS as op and returns its output and exit status.
func (op *operator) run(args ...string) (string, int) {
	op.t.Helper()
	cmd := op.command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		op.t.Fatalf("%s: solar %s: %v", op.name, strings.Join(args, " "), err)
	}
	return out.String(), 0
}

// must runs solar ARGS as op, which must exit with status want.
func (op *operator) must(want int, args ...string) string {
	op.t.Helper()
	out, code := op.run(args...)
	if code != want {
		op.t.Fatalf("%s: solar %s: exit %d, want %d:\n%s", op.name, strings.Join(args, " "), code, want, out)
	}
	return out
}

// cannotRead fails the test unless other, as itself, is refused reading
// op's home.
func (op *operator) cannotRead(other *operator) {
	op.t.Helper()
	out, err := exec.Command("runuser", "-u", other.name, "--", "env", "LC_ALL=C", "ls", op.home).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		op.t.Fatalf("%s can list %s's home %s: %v %s", other.name, op.name, op.home, err, out)
	}
}

// output is what the script of resource res wrote when user ran it.
func (m *anyMachine) output(t *testing.T, res, user string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.out, res+"-"+user))
	if err != nil {
		t.Fatalf("%s.run did not run as %s: %v", res, user, err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// checkCache checks op's base cache: the default one under its home, 0700,
// op's, holding the base of digest by digest with its script.
func (op *operator) checkCache(digest string) {
	t := op.t
	t.Helper()
	cache := filepath.Join(op.home, ".cache", "solar", "bases")
	st, err := os.Stat(cache)
	if err != nil {
		t.Fatalf("%s's base cache: %v", op.name, err)
	}
	if st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Uid != uint32(op.uid) {
		t.Fatalf("%s's base cache %s: mode %v uid %d, want 0700 and %d", op.name, cache, st.Mode(), st.Sys().(*syscall.Stat_t).Uid, op.uid)
	}
	script, err := os.ReadFile(filepath.Join(cache, digest, "actions", "run.sh"))
	if err != nil || string(script) != anyMachineBase["actions/run.sh"] {
		t.Fatalf("%s's base cache has no base %s with its script: %v", op.name, digest, err)
	}
}

// makePlan is operator A's part: the base in a directory of its home,
// e (value planned) feeding r, f, and a plan of their runs; then the base
// directory is removed. It returns the base's digest.
func (m *anyMachine) makePlan(t *testing.T) string {
	a := m.a
	base := filepath.Join(a.home, "base")
	a.writeBase(base)
	a.must(0, "resource", "create", "e", base, "out="+m.out, "value=planned")
	a.must(0, "resource", "create", "r", base, "out="+m.out)
	a.must(0, "resource", "create", "f", base, "out="+m.out, "value=eff")
	a.must(0, "connect", "e", "r", "value->value")
	a.must(0, "ch", "process")
	a.cannotRead(m.b)
	content, err := bases.Read(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(base); err != nil {
		t.Fatal(err)
	}
	return content.Digest
}

// checkPlanRan checks what B's run of makePlan's plan wrote: the planned
// values, as B.
func (m *anyMachine) checkPlanRan(t *testing.T) {
	t.Helper()
	b := m.b.name
	for res, want := range map[string]string{"e": "planned", "r": "planned", "f": "eff"} {
		if got := m.output(t, res, b); got != want {
			t.Errorf("%s.run as %s wrote value %q, want the planned %q", res, b, got, want)
		}
	}
}

// reportDone checks that op's orch report of the last plan shows every
// task finished with success.
func (op *operator) reportDone(tasks int) {
	op.t.Helper()
	var rep struct {
		Finished bool           `json:"finished"`
		Totals   map[string]int `json:"totals"`
	}
	out := op.must(0, "orch", "report", "last", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		op.t.Fatalf("%s: report: %v\n%s", op.name, err, out)
	}
	if !rep.Finished || rep.Totals["SUCCESS"] != tasks {
		op.t.Fatalf("%s: report of the last plan: finished %v totals %v, want %d SUCCESS", op.name, rep.Finished, rep.Totals, tasks)
	}
}

// noneLeft waits up to five seconds for every process of the operators to
// be gone, and fails the test if one is left.
func (m *anyMachine) noneLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := append(processesOf(m.a.uid), processesOf(m.b.uid)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the operators outlived their runs: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesOf lists the live processes of uid, by their command line.
func processesOf(uid int) []string {
	names, _ := filepath.Glob("/proc/[0-9]*/status")
	var out []string
	for _, name := range names {
		st, err := os.Stat(filepath.Dir(name))
		if err != nil || st.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if !running(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(name), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// solarPid waits up to ten seconds for a process of op running the solar
// binary with arg among its arguments, and returns its pid.
func (op *operator) solarPid(arg string) int {
	op.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, name := range names {
			raw, err := os.ReadFile(name)
			argv := strings.Split(string(raw), "\x00")
			if err != nil || len(argv) < 2 || argv[0] != op.bin || !strings.Contains(string(raw), "\x00"+arg+"\x00") {
				continue
			}
			if st, err := os.Stat(filepath.Dir(name)); err == nil && st.Sys().(*syscall.Stat_t).Uid == uint32(op.uid) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	op.t.Fatalf("no solar %s of %s runs", arg, op.name)
	return 0
}

// waitFile waits up to ten seconds for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not exist after 10s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAnyMachinePostgres: operator A makes a plan on a PostgreSQL store
// from a base in its home and removes the base; operator B, another OS
// user on another host name that cannot read A's home, runs it with the
// values the plan pinned, from bases its runner materialized into B's own
// cache. Then B resumes a plan whose runner on A's machine was killed
// with SIGKILL mid-task, and both see it finished.
func TestAnyMachinePostgres(t *testing.T) {
	m := newAnyMachine(t)
	srv := pgtest.Own(t)
	url, err := srv.NewDatabase("solar")
	if err != nil {
		t.Fatal(err)
	}
	// Both users reach the server's socket (the socket file itself is
	// 0777), nothing else of its directory.
	for _, d := range []string{srv.Dir, srv.SocketDir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	m.a.db, m.b.db = url, url
	// A's runner is killed below: B waits for its lease to expire.
	m.a.env = []string{"SOLAR_LEASE_TTL=5s"}
	digest := m.makePlan(t)

	m.b.must(0, "orch", "run-once", "last")
	m.checkPlanRan(t)
	m.b.checkCache(digest)
	m.a.reportDone(3)

	// A plan whose runner dies on A's machine, resumed on B's.
	base := filepath.Join(m.a.home, "base2")
	m.a.writeBase(base)
	m.a.must(0, "resource", "create", "s", base, "out="+m.out, "value=slow", "hold=1")
	m.a.must(0, "ch", "process")
	if err := os.RemoveAll(base); err != nil {
		t.Fatal(err)
	}
	run := m.a.command("orch", "run-once", "last")
	var runOut bytes.Buffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(m.out, "held-s"))
	if err := syscall.Kill(m.a.solarPid("run-once"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	out := m.b.must(0, "orch", "resume", "last")
	if !strings.Contains(out, "has not renewed its lease") {
		t.Errorf("B resumed without waiting for the lease of A's dead runner:\n%s", out)
	}
	if got := m.output(t, "s", m.b.name); got != "slow" {
		t.Errorf("s.run resumed by B wrote %q, want slow", got)
	}
	m.a.reportDone(1)
	m.b.reportDone(1)
	m.noneLeft(t)
}

// TestAnyMachineBolt: the same with a bbolt file that A made and B got a
// copy of: B runs A's plan from the copy after A's base directory is gone,
// a task fails, and B retries it.
func TestAnyMachineBolt(t *testing.T) {
	m := newAnyMachine(t)
	m.a.db = filepath.Join(m.a.home, "solar.db")
	m.b.db = filepath.Join(m.b.home, "solar.db")
	digest := m.makePlan(t)
	copyFile(t, m.a.db, m.b.db, 0o600)
	m.b.chown(m.b.db)
	m.a.cannotRead(m.b)

	failFlag := filepath.Join(m.out, "fail-f")
	if err := os.WriteFile(failFlag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m.b.must(3, "orch", "run-once", "last")
	// f failed as asked, after its script started; e and r ran.
	m.output(t, "e", m.b.name)
	m.output(t, "r", m.b.name)
	if logs := m.b.must(0, "orch", "logs", "last", "f.run#0"); !strings.Contains(logs, "asked to fail") {
		t.Fatalf("f.run#0 failed before its script ran:\n%s", logs)
	}
	if err := os.Remove(failFlag); err != nil {
		t.Fatal(err)
	}
	m.b.must(0, "orch", "retry", "last")
	m.checkPlanRan(t)
	m.b.checkCache(digest)
	m.b.reportDone(3)
	m.noneLeft(t)
}
