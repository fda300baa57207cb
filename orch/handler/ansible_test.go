package handler

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/solarops/solar/internal/sshdtest"
)

// needAnsible skips the test, or fails it under SOLAR_TEST_REQUIRE_ALL=1,
// where ansible-playbook is not installed.
func needAnsible(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(AnsibleProgram); err != nil {
		sshdtest.Require(t, AnsibleProgram, ansibleInstallHint)
	}
}

// ansiblePython is the interpreter ansible-playbook runs on: the one that
// can import Ansible's own modules.
func ansiblePython(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath(AnsibleProgram)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		t.Fatalf("%s has no #! line", path)
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		return fields[1]
	}
	return fields[0]
}

// readBothWays is a Python program that reads a JSON file as solar's
// extra vars were read before they were YAML (json.load) and a YAML file
// as ansible-playbook reads "-e @file" (DataLoader), and prints both as
// JSON in which every value says its Python type and every string whether
// Ansible would leave it untemplated.
const readBothWays = `
import json, sys
from ansible.parsing.dataloader import DataLoader
from ansible.utils.unsafe_proxy import AnsibleUnsafe

def typed(v, unsafe_ok):
    if isinstance(v, dict):
        return {"map": sorted([[typed(k, unsafe_ok), typed(x, unsafe_ok)] for k, x in v.items()], key=json.dumps)}
    if isinstance(v, list):
        return {"list": [typed(x, unsafe_ok) for x in v]}
    if isinstance(v, str):
        return {"str": v, "unsafe": isinstance(v, AnsibleUnsafe) if unsafe_ok else True}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        return {"float": repr(v)}
    if v is None:
        return {"null": True}
    return {"other": repr(type(v))}

with open(sys.argv[1]) as f:
    before = json.load(f)
after = DataLoader().load_from_file(sys.argv[2])
json.dump({"before": typed(before, False), "after": typed(after, True)}, sys.stdout)
`

// The extra vars reach Ansible as the same values of the same types as
// the JSON they replace (ints, floats, bools, null, nesting, every
// character), and every string in them, map keys included, is unsafe:
// never templated.
func TestUnsafeVarsReadByAnsible(t *testing.T) {
	needAnsible(t)
	hostile := []string{
		`{{ lookup("pipe","id > F") }}`, "{% if true %}x{% endif %}", "{# c #}", "${x}",
		"", " lead", "trail ", "#c", "!tag", "*alias", "&anchor", "- item", "a: b", "? k", "|", ">", "@x", "`x`",
		"'single'", `"double"`, `back\slash`, `\x41\u0041`, "%x", "null", "~", "true", "yes", "on", "123", "0x1f",
		"1e5", "0o17", ".inf", "1_000", "12:30", "line\nbreak", "crlf\r\n", "tab\there", "nul\x00byte", "del\x7f",
		"nel\u0085", "ls\u2028ps\u2029", "bom\ufeff", "é ñ 日本", "emoji 😀", "bad \xff\xfe utf8", "c1 \u0080\u009f",
		"nonchar \uffff", strings.Repeat("long ", 400),
	}
	inputs := map[string]any{
		"int": int64(42), "neg": int64(-7), "big": int64(math.MaxInt64), "zero": int64(0),
		"float": 1.5, "tiny": 1e-300, "huge": 1e300, "whole_float": 1e5, "negf": -0.25,
		"yes": true, "no": false, "nothing": nil,
		"empty_list": []any{}, "empty_map": map[string]any{},
		"nested": map[string]any{"{{ k }}": []any{"{{ v }}", int64(1), map[string]any{"x": []any{"{% y %}"}}}},
	}
	for i, s := range hostile {
		inputs["s"+string(rune('a'+i%26))+strings.Repeat("_", i/26)] = s
	}
	r := rand.New(rand.NewPCG(1, 2))
	runes := []rune("{}%#!*&|>-:?'\"\\ \t\n\r\x00\x1b\x7fé€😀\u2028\ufeff\ufffdab")
	var random []any
	for range 300 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		random = append(random, b.String())
	}
	inputs["random"] = random
	inputs["keys"] = map[string]any{"{{ a }}": "1", "\n": "2", "é": "3", "": "4", "a\x00b": "5"}

	dir := t.TempDir()
	raw, err := appendJSON(nil, inputs)
	if err != nil {
		t.Fatal(err)
	}
	yaml, err := unsafeVarsYAML(inputs)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"vars.json": raw, "vars.yml": yaml, "read.py": []byte(readBothWays)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(ansiblePython(t), filepath.Join(dir, "read.py"), filepath.Join(dir, "vars.json"), filepath.Join(dir, "vars.yml"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read the vars with Ansible: %v\n%s", err, stderr.String())
	}
	var got struct{ Before, After any }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Before, got.After); diff != "" {
		t.Errorf("Ansible reads the YAML vars otherwise than the JSON ones (-json +yaml):\n%s", diff)
	}
}

// Values tagged !unsafe in the vars file stay as they are: a string tag
// on a number would make it a string.
func TestUnsafeVarsYAMLForm(t *testing.T) {
	got, err := unsafeVarsYAML(map[string]any{"n": int64(5), "f": 0.5, "e": 1e21, "b": true, "z": nil, "s": "a\"\\\n\x00é😀", "l": []any{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{!unsafe "b": true, !unsafe "e": !!float 1e+21, !unsafe "f": !!float 0.5, !unsafe "l": [!unsafe "x"], !unsafe "n": 5, !unsafe "s": !unsafe "a\"\\\x0a\x00\xe9\U0001f600", !unsafe "z": null}` + "\n"
	if string(got) != want {
		t.Errorf("vars:\n got %s\nwant %s", got, want)
	}
}

// hostileTemplate runs a command on the controller when Ansible templates
// it: the command creates the file proof.
func hostileTemplate(proof string) string {
	return `{{ lookup("pipe","id > ` + proof + `") }}`
}

// ansibleBase writes a playbook base in a new directory.
func ansibleBase(t *testing.T, playbook string) Request {
	t.Helper()
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "site.yaml"), []byte(playbook), 0o644); err != nil {
		t.Fatal(err)
	}
	return Request{Resource: "res", Action: "run", Task: "res.run#0", BaseDir: base, Script: "site.yaml"}
}

// noProof fails the test if a template ran and made its proof file.
func noProof(t *testing.T, proof string) {
	t.Helper()
	if raw, err := os.ReadFile(proof); err == nil {
		t.Errorf("a template in an input ran on the controller: %s holds %q", proof, raw)
	}
}

// An input is data: template syntax in it, at any depth, reaches the
// playbook as the text it is, and runs nothing; numbers and booleans stay
// numbers and booleans.
func TestAnsibleInputsAreData(t *testing.T) {
	needAnsible(t)
	work := t.TempDir()
	proof := filepath.Join(work, "F")
	v := hostileTemplate(proof)
	req := ansibleBase(t, `- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.copy: {content: "{{ v }}", dest: "{{ out }}/v.txt"}
    - ansible.builtin.copy: {content: "{{ nested | to_json }}", dest: "{{ out }}/nested.json"}
    - ansible.builtin.copy: {content: "{{ n + 1 }} {{ flag | type_debug }} {{ ratio * 2 }}", dest: "{{ out }}/typed.txt"}
    - ansible.builtin.set_stats: {data: {echo: "{{ v }}"}}
`)
	req.Inputs = map[string]any{
		"v": v, "out": work, "n": int64(41), "flag": true, "ratio": 0.25,
		"nested": map[string]any{v: []any{v, map[string]any{"k": v}}},
	}
	res, err := (&Ansible{TempDir: t.TempDir()}).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, res.Stdout)
	}
	noProof(t, proof)
	if got := readFile(t, filepath.Join(work, "v.txt")); got != v {
		t.Errorf("v.txt = %q, want %q", got, v)
	}
	var nested any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(work, "nested.json"))), &nested); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req.Inputs["nested"], nested); diff != "" {
		t.Errorf("nested input as the playbook saw it (-sent +seen):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(work, "typed.txt")); got != "42 bool 0.5" {
		t.Errorf("typed.txt = %q, want %q", got, "42 bool 0.5")
	}
	if got := res.Outputs["echo"]; got != v {
		t.Errorf("output echo = %q, want %q", got, v)
	}
}

// sshTarget is how ansible-playbook reaches a test sshd as a trusted node.
func sshTarget(s *sshdtest.Server) Target {
	return Target{Name: "n1", Host: s.IP, Port: s.Port, User: s.User, KeyPath: s.ClientKey,
		HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKey)))}
}

// nodeInputsPlaybook echoes the node's values as outputs and, when asked,
// runs a command on the node.
const nodeInputsPlaybook = `- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.set_stats:
        data: {host: "{{ ansible_host }}", user: "{{ ansible_user }}", key: "{{ ansible_ssh_private_key_file }}"}
    - ansible.builtin.command: "true"
      when: connect | bool
`

// A node's values are data too: template syntax in its address, user or
// key path reaches ansible-playbook as the text it is, for the playbook
// and for the SSH connection, and runs nothing. (Its port is a number,
// which Ansible never templates.)
func TestAnsibleNodeInputsAreData(t *testing.T) {
	needAnsible(t)
	srv := sshdtest.Start(t, sshdtest.Options{})
	base := ansibleBase(t, nodeInputsPlaybook)
	run := func(t *testing.T, target Target, connect bool) (Result, error) {
		req := base
		req.Location = "n1"
		req.Inputs = map[string]any{"connect": connect}
		h := &Ansible{TempDir: t.TempDir(), Target: func(string) (Target, error) { return target, nil }}
		return h.Run(context.Background(), req)
	}
	checkEcho := func(t *testing.T, res Result, target Target) {
		t.Helper()
		want := map[string]any{"host": target.Host, "user": target.User, "key": target.KeyPath}
		if diff := cmp.Diff(want, res.Outputs); diff != "" {
			t.Errorf("the node's values as the playbook saw them (-sent +seen):\n%s", diff)
		}
	}

	t.Run("ssh_key", func(t *testing.T) {
		// A key file whose very name is a template: ssh reads it only if
		// the path arrives as it is. The pipe runs in the playbook's dir.
		// (Ansible passes the path to ssh in double quotes, which it
		// cannot hold.)
		keyDir := t.TempDir()
		key := filepath.Join(keyDir, `{{ lookup('pipe','id > F') }}`)
		raw, err := os.ReadFile(srv.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		target := sshTarget(srv)
		target.KeyPath = key
		res, err := run(t, target, true)
		if err != nil {
			t.Fatalf("Run over SSH with the key %s: %v\n%s", key, err, res.Stdout)
		}
		checkEcho(t, res, target)
		noProof(t, filepath.Join(base.BaseDir, "F"))
	})
	for _, input := range []string{"ip", "ssh_user"} {
		t.Run(input, func(t *testing.T) {
			proof := filepath.Join(t.TempDir(), "F")
			target := sshTarget(srv)
			if input == "ip" {
				target.Host = hostileTemplate(proof)
			} else {
				target.User = hostileTemplate(proof)
			}
			res, err := run(t, target, false)
			if err != nil {
				t.Fatalf("Run without connecting: %v\n%s", err, res.Stdout)
			}
			checkEcho(t, res, target)
			// Connecting with that value fails, but never runs it.
			res, err = run(t, target, true)
			if err == nil || !strings.Contains(err.Error(), "node n1 is unreachable") {
				t.Errorf("Run connecting to it: %v, want the node unreachable\n%s", err, res.Stdout)
			}
			noProof(t, proof)
		})
	}
}

// moduleLeftovers lists what Ansible's modules leave behind when stopped,
// module arguments in plain text, anywhere under dirs: the modules
// themselves (AnsiballZ_*, in the remote temp dir) and the payloads they
// unpack into the system's temp dir (ansible_*_payload_*).
func moduleLeftovers(dirs ...string) []string {
	var out []string
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			name := d.Name()
			if strings.HasPrefix(name, "AnsiballZ_") || strings.HasPrefix(name, "ansible_") && strings.Contains(name, "_payload") {
				out = append(out, path)
			}
			return nil
		})
	}
	return out
}

// controlDirs lists the SSH control directories of executor pid.
func controlDirs(pid int) []string {
	dirs, _ := filepath.Glob(filepath.Join(shortTempRoot(), controlDirPrefix+strconv.Itoa(pid)+"-*"))
	return dirs
}

// waitFile waits up to a minute for a file to exist and returns its
// content; a playbook on a loaded machine may take long to start.
func waitFile(t *testing.T, path string, failed <-chan struct{}) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if raw, err := os.ReadFile(path); err == nil && len(raw) > 0 {
			return string(raw)
		}
		select {
		case <-failed:
			t.Fatalf("the attempt ended before it wrote %s", path)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written after a minute", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stuckPlaybook records the pid of a module's command, then waits.
const stuckPlaybook = `- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.shell: 'echo $$ > {{ marker }}.tmp && mv {{ marker }}.tmp {{ marker }} && exec sleep 60'
`

// A stopped attempt leaves nothing behind on this machine: no private
// directory, no SSH control directory, no module or module payload (their
// arguments are in plain text) in $HOME or $TMPDIR. The playbook on this
// machine is stopped by its timeout, the one on a node by a cancel (both
// stop the playbook's process group the same way; a cancel need not wait).
func TestAnsibleStoppedLeavesNothing(t *testing.T) {
	needAnsible(t)
	srv := sshdtest.Start(t, sshdtest.Options{})
	for _, remote := range []bool{false, true} {
		name := map[bool]string{false: "local_timeout", true: "ssh_canceled"}[remote]
		t.Run(name, func(t *testing.T) {
			home, tmp, parent := t.TempDir(), t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("TMPDIR", tmp)
			req := ansibleBase(t, stuckPlaybook)
			marker := filepath.Join(t.TempDir(), "pid")
			h := &Ansible{TempDir: parent}
			// Long enough for ansible-playbook to start its command on a
			// loaded machine: the test asserts that it did.
			req.Timeout = 20 * time.Second
			if remote {
				marker = filepath.Join(srv.Home, "pid-"+newToken())
				t.Cleanup(func() { _ = os.Remove(marker) })
				req.Location = "n1"
				h.Target = func(string) (Target, error) { return sshTarget(srv), nil }
				req.Timeout = 5 * time.Minute
			}
			req.Inputs = map[string]any{"marker": marker}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ended := make(chan struct{})
			var err error
			go func() {
				defer close(ended)
				_, err = h.Run(ctx, req)
			}()
			pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, marker, ended)))
			if remote {
				if dirs := controlDirs(os.Getpid()); len(dirs) != 1 {
					t.Errorf("SSH control dirs of this process while the playbook runs: %v, want one", dirs)
				}
				cancel()
			}
			<-ended
			want := map[bool]error{false: ErrTimeout, true: ErrCanceled}[remote]
			if !errors.Is(err, want) {
				t.Errorf("Run: %v, want %v", err, want)
			}
			if pid > 0 && aliveAfterKill(t, pid) {
				t.Errorf("the playbook's command (pid %d) outlived the attempt", pid)
			}
			if left := moduleLeftovers(home, tmp, parent); len(left) > 0 {
				t.Errorf("left after the attempt: %v", left)
			}
			if left := controlDirs(os.Getpid()); len(left) > 0 {
				t.Errorf("SSH control dirs left after the attempt: %v", left)
			}
			defaultLocal.Settle()
			if left, _ := os.ReadDir(parent); len(left) > 0 {
				t.Errorf("%s left in the temp dir after the attempt", left[0].Name())
			}
		})
	}
}

// ansibleRunnerEnv, set in a test binary's environment, makes it a runner
// of one Ansible attempt (a helperAttempt, as JSON) instead of a test, for
// a test to kill with SIGKILL.
const ansibleRunnerEnv = "SOLAR_TEST_ANSIBLE_RUNNER"

// helperAttempt is the attempt a helper runner runs.
type helperAttempt struct {
	Parent  string         // Ansible.TempDir
	BaseDir string         // the playbook is BaseDir/site.yaml
	Inputs  map[string]any // its inputs
	Target  *Target        // nil: this machine
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(ansibleRunnerEnv); raw != "" {
		os.Exit(runAnsibleHelper(raw))
	}
	os.Exit(m.Run())
}

// runAnsibleHelper runs the attempt; it is meant to be killed first.
func runAnsibleHelper(raw string) int {
	var a helperAttempt
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	h := &Ansible{TempDir: a.Parent}
	req := Request{Resource: "res", Action: "run", Task: "res.run#0", BaseDir: a.BaseDir, Script: "site.yaml", Inputs: a.Inputs}
	if a.Target != nil {
		req.Location = a.Target.Name
		h.Target = func(string) (Target, error) { return *a.Target, nil }
	}
	_, err := h.Run(context.Background(), req)
	fmt.Fprintf(os.Stderr, "the attempt ended before it was killed: %v\n", err)
	return 1
}

// After its runner was killed with SIGKILL, an Ansible attempt's files and
// processes are found by the next runner's SweepTemp: its private
// directory with Ansible's temp dirs (modules and their payloads, in plain
// text), its SSH control directory "solar-cp-<runner pid>-<token>" (the
// name the runner's watchdog relies on too), and what still runs of it.
func TestAnsibleDeadRunnerSwept(t *testing.T) {
	needAnsible(t)
	srv := sshdtest.Start(t, sshdtest.Options{})
	for _, remote := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "ssh"}[remote], func(t *testing.T) {
			home, tmp, parent := t.TempDir(), t.TempDir(), t.TempDir()
			a := helperAttempt{Parent: parent, BaseDir: ansibleBase(t, stuckPlaybook).BaseDir}
			marker := filepath.Join(t.TempDir(), "pid")
			if remote {
				marker = filepath.Join(srv.Home, "pid-"+newToken())
				t.Cleanup(func() { _ = os.Remove(marker) })
				target := sshTarget(srv)
				a.Target = &target
			}
			a.Inputs = map[string]any{"marker": marker}
			raw, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			runner := exec.Command(os.Args[0], "-test.run=^$")
			runner.Env = append(os.Environ(), "HOME="+home, "TMPDIR="+tmp, ansibleRunnerEnv+"="+string(raw))
			var stderr bytes.Buffer
			runner.Stderr = &stderr
			if err := runner.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = runner.Wait(); close(exited) }()
			t.Cleanup(func() { _ = runner.Process.Kill(); <-exited })
			if raw, err := os.ReadFile(marker); err == nil {
				t.Fatalf("stale marker %s: %s", marker, raw)
			}
			select {
			case <-exited:
				t.Fatalf("the runner ended early: %s", stderr.String())
			default:
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, marker, exited)))
			if remote {
				if dirs := controlDirs(runner.Process.Pid); len(dirs) != 1 {
					t.Errorf("SSH control dirs of the runner while its playbook runs: %v, want one", dirs)
				}
			}
			if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			if before := moduleLeftovers(parent); !remote && len(before) == 0 {
				t.Errorf("no module files in the attempt's private dir before the sweep; home: %v, tmp: %v", moduleLeftovers(home), moduleLeftovers(tmp))
			}

			swept, err := SweepTemp(parent)
			if err != nil {
				t.Fatalf("SweepTemp: %v", err)
			}
			if len(swept) != 1 || swept[0].Task != "res.run#0" || swept[0].Killed == 0 {
				t.Errorf("swept %+v, want what was left of res.run#0", swept)
			}
			if pid > 0 && aliveAfterKill(t, pid) {
				t.Errorf("the playbook's command (pid %d) outlived the sweep", pid)
			}
			if left := moduleLeftovers(home, tmp, parent); len(left) > 0 {
				t.Errorf("left after the sweep: %v", left)
			}
			if left := controlDirs(runner.Process.Pid); len(left) > 0 {
				t.Errorf("SSH control dirs left after the sweep: %v", left)
			}
			if left, _ := os.ReadDir(parent); len(left) > 0 {
				t.Errorf("%s left in the temp dir after the sweep", left[0].Name())
			}
		})
	}
}

// SweepTemp removes the SSH control directories of runners that are gone,
// whatever dir it is given, killing what still runs with the attempt's
// token (a control master), and leaves those of live runners alone.
func TestSweepTempRemovesDeadRunnersControlDirs(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	token := newToken()
	master := exec.Command("sleep", "60")
	master.Env = append(os.Environ(), attemptVar+"="+token)
	if err := master.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- master.Wait() }()
	t.Cleanup(func() { _ = master.Process.Kill() })

	mk := func(pid int, token string) string {
		dir := filepath.Join(shortTempRoot(), controlDirPrefix+strconv.Itoa(pid)+"-"+token)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "known_hosts"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	stale := mk(dead.Process.Pid, token)
	runner := exec.Command("sleep", "60") // a live runner
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Process.Kill(); _ = runner.Wait() })
	live := mk(runner.Process.Pid, newToken())
	own := mk(os.Getpid(), newToken())

	if _, err := SweepTemp(t.TempDir()); err != nil {
		t.Fatalf("SweepTemp: %v", err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s, of a dead runner, left after the sweep", stale)
	}
	for _, dir := range []string{live, own} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s, of a live runner, swept: %v", dir, err)
		}
	}
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Errorf("the process with the dead runner's attempt token outlived the sweep")
	}
}

// The known_hosts file of an attempt holds the trusted key under a fixed
// alias and nothing of the node's address, so no address, whatever it
// holds, adds an entry; a trusted key with a line break in it is refused.
func TestAnsibleKnownHostsHoldOnlyTheTrustedKey(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFmPqW6vJ3Q1wQ3b6h5kq7nV2m0b4Jm5r9cV3cD0e1fA"
	target := Target{Name: "n1", Host: "127.0.0.2\n* " + key, Port: 2222, User: "u", HostKey: key}
	f, err := newAnsibleFiles(t.TempDir(), target, []byte("{}\n"), newToken())
	if err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(f.controlDir, "known_hosts")
	got := readFile(t, known)
	f.remove()
	if want := hostKeyAlias + " " + key + "\n"; got != want {
		t.Errorf("known_hosts = %q, want %q", got, want)
	}
	if _, err := os.Stat(f.controlDir); err == nil {
		t.Errorf("%s left after the attempt's files were removed", f.controlDir)
	}

	target = sshTargetWithKey(key + "\n* " + key)
	req := ansibleBase(t, "- hosts: all\n  tasks: []\n")
	req.Location = "n1"
	h := &Ansible{TempDir: t.TempDir(), Target: func(string) (Target, error) { return target, nil }}
	needAnsible(t)
	_, err = h.Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "the trusted host key of node n1 is damaged: solar node trust n1") {
		t.Errorf("Run with a damaged trusted key: %v, want it refused", err)
	}
}

// sshTargetWithKey is a node at an address nothing listens on, trusted
// with key.
func sshTargetWithKey(key string) Target {
	return Target{Name: "n1", Host: "127.0.0.2", Port: 1, HostKey: key}
}

// A node's ssh_key is checked as the SSH transport checks it before
// ansible-playbook runs: a FIFO, a device or a huge file fails the task at
// once, naming the node and the input, wherever the path leads (relative
// to the base, as ssh reads it; under ~, as Ansible expands it), and a
// path that ssh would expand into another (% tokens, ${VAR}) is refused.
// Unchecked, ssh blocked on the FIFO until the task's timeout, and read
// /dev/zero. A good key reached the same ways still logs in.
func TestAnsibleBadKeyFileFailsItsTask(t *testing.T) {
	needAnsible(t)
	srv := sshdtest.Start(t, sshdtest.Options{})
	home := t.TempDir()
	t.Setenv("HOME", home)
	req := ansibleBase(t, "- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: \"true\"\n")
	req.Location = "n1"
	// Not reached when the key is checked; a bound on the FIFO otherwise.
	req.Timeout = 20 * time.Second
	dir := t.TempDir()
	for _, fifo := range []string{filepath.Join(dir, "fifo"), filepath.Join(req.BaseDir, "fifo"), filepath.Join(home, "fifo")} {
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 3<<30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	raw, err := os.ReadFile(srv.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, good := range []string{filepath.Join(home, "good"), filepath.Join(req.BaseDir, "good")} {
		if err := os.WriteFile(good, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	const fix = ": give the path of a private key file"
	cases := []struct{ key, want string }{
		{filepath.Join(dir, "fifo"), "not a regular file (a FIFO)" + fix},
		{"/dev/zero", "not a regular file (a device)" + fix},
		{big, fmt.Sprintf("too large: %d bytes, more than 65536: a private key is a few KiB; give the path of a private key file", 3<<30)},
		{"fifo", "not a regular file (a FIFO)" + fix},
		{"~/fifo", "not a regular file (a FIFO)" + fix},
		{"%d/fifo", "ssh would expand the % or ${ in it into another path: give the key file's plain path"},
		{"${HOME}/fifo", "ssh would expand the % or ${ in it into another path: give the key file's plain path"},
		{"~/good", ""},
		{"good", ""},
	}
	errs := make([]error, len(cases))
	outs := make([]string, len(cases))
	done := make(chan int)
	for i, c := range cases {
		go func() {
			target := sshTarget(srv)
			target.KeyPath = c.key
			h := &Ansible{TempDir: t.TempDir(), Target: func(string) (Target, error) { return target, nil }}
			var res Result
			res, errs[i] = h.Run(context.Background(), req)
			outs[i] = res.Stdout
			done <- i
		}()
	}
	deadline := time.After(2 * time.Minute)
	for range cases {
		select {
		case <-done:
		case <-deadline:
			t.Fatal("attempts still running after 2 minutes")
		}
	}
	for i, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			err := errs[i]
			if c.want == "" {
				if err != nil {
					t.Errorf("Run: %v\n%s", err, outs[i])
				}
				return
			}
			want := "node n1: ssh_key " + c.key + ": " + c.want
			if err == nil || err.Error() != want || !errors.Is(err, ErrFailed) {
				t.Errorf("Run: %v\nwant %q", err, want)
			}
		})
	}
}
