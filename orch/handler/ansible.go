package handler

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The Ansible handler runs an action's playbook with ansible-playbook on
// this machine, against the task's node. Ansible's own SSH connection
// reaches the node, with host key checking on, against a known_hosts file
// written from the key trusted with "solar node trust". changed, ok and
// failed come from the run itself: the solar_result callback plugin (in
// ansible_plugins/, shipped inside solar) writes them to $SOLAR_RESULT.

//go:embed ansible_plugins/solar_result.py
var solarResultPlugin []byte

// AnsibleProgram is the program the Ansible handler runs.
const AnsibleProgram = "ansible-playbook"

// ansibleInstallHint says how to get ansible-playbook.
const ansibleInstallHint = "apt-get install ansible-core (or pip install ansible-core)"

// AnsibleTarget is how ansible-playbook reaches a task's node.
type AnsibleTarget struct {
	Name    string // the node's name, for messages and the inventory
	Local   bool   // this machine: ansible_connection=local
	Host    string // address
	Port    int
	User    string
	KeyPath string // private key on the controller; "" is ssh's default
	// HostKey is the trusted host key in authorized_keys form ("ssh-ed25519
	// AAAA..."); "" means the node is not trusted yet.
	HostKey string
}

// Ansible is the handler of bases with "handler: ansible". Its zero value
// runs every playbook locally.
type Ansible struct {
	// Target resolves a task's location to its node; nil, or an empty
	// location, is this machine.
	Target func(location string) (AnsibleTarget, error)
	// TempDir, KillGrace: as for Shell.
	TempDir   string
	KillGrace time.Duration
	// Program overrides AnsibleProgram (tests).
	Program string
}

// ansibleResult is what solar_result.py writes.
type ansibleResult struct {
	Changed     bool           `json:"changed"`
	Outputs     map[string]any `json:"outputs"`
	Failed      *ansibleIssue  `json:"failed"`
	Unreachable *ansibleIssue  `json:"unreachable"`
}

type ansibleIssue struct {
	Task string `json:"task"`
	Host string `json:"host"`
	Msg  string `json:"msg"`
}

// Run runs the action's playbook once. A failed task ends the attempt
// with the task's name and message; an unreachable node says so.
func (h *Ansible) Run(ctx context.Context, req Request) (Result, error) {
	if err := checkRequest(req); err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, canceled(ctx)
	}
	prog := h.Program
	if prog == "" {
		prog = AnsibleProgram
	}
	path, err := exec.LookPath(prog)
	if err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1,
			Msg: fmt.Sprintf("%s is not installed on this machine, which runs the playbooks of handler ansible: %s", prog, ansibleInstallHint)}
	}
	target := AnsibleTarget{Name: "localhost", Local: true}
	if req.Location != "" && h.Target != nil {
		if target, err = h.Target(req.Location); err != nil {
			return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: err.Error()}
		}
	}
	if !target.Local && target.HostKey == "" {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: fmt.Sprintf("node %s (%s) is not trusted: solar node trust %s",
			target.Name, net.JoinHostPort(target.Host, strconv.Itoa(target.Port)), target.Name)}
	}
	inputs := req.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	vars, err := appendJSON(nil, inputs)
	if err != nil {
		return Result{}, fmt.Errorf("%w: inputs cannot be written as JSON: %v", ErrBadRequest, err)
	}

	dir, err := localTempDir(h.TempDir)
	if err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: "cannot make a private temp dir: " + err.Error()}
	}
	defer os.RemoveAll(dir)
	// SSH control sockets need a short path (Linux: 108 bytes), which the
	// private directory under $TMPDIR may not give.
	cpDir, err := os.MkdirTemp(shortTempRoot(), "scp")
	if err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: "cannot make a directory for SSH control sockets: " + err.Error()}
	}
	defer os.RemoveAll(cpDir)
	files, err := writeAnsibleFiles(dir, target, vars)
	if err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: err.Error()}
	}
	files.controlDir = cpDir

	attempt, cancel := attemptContext(ctx, req)
	defer cancel()
	grace := killGrace(h.KillGrace)
	args := []string{"-i", files.inventory, "-e", "@" + files.vars}
	if req.Check {
		args = append(args, "--check")
	}
	args = append(args, req.Script)
	g := Group{Boot: bootID(), Token: newToken(), Start: bootTicks()}
	var stdout, stderr tail
	log := newLineLog(liveOutput(req))
	notePath := filepath.Join(dir, groupFile)
	if err := writeNote(notePath, req.Task, g); err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: "cannot record the attempt: " + err.Error()}
	}
	if err := PassGate(req.Gate); err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: err.Error(), host: err}
	}
	p, err := start(program{
		argv:   append([]string{path}, args...),
		dir:    req.BaseDir,
		env:    ansibleEnv(dir, files, g.Token, req),
		stdout: io.MultiWriter(&stdout, log.stream('o')),
		stderr: io.MultiWriter(&stderr, log.stream('e')),
	})
	if err != nil {
		return Result{}, &Error{Kind: ErrFailed, ExitCode: -1, Msg: fmt.Sprintf("cannot start %s: %v", prog, err)}
	}
	g.PGID = p.pid
	_ = writeNote(notePath, req.Task, g)
	if req.Started != nil {
		req.Started(g)
	}
	ended, waitErr := p.wait(attempt, grace)
	// What ansible-playbook left running (an SSH control master waiting
	// out ControlPersist) carries the attempt's token: it goes too.
	_, _ = KillGroup(Group{Boot: g.Boot, Token: g.Token}, time.Second)

	var ar ansibleResult
	resultErr := error(nil)
	raw, rerr := readRegular(files.result, resultLimit)
	switch {
	case rerr == nil:
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&ar); err != nil {
			resultErr = errors.New("the solar_result callback wrote an unreadable result")
		}
		for k, v := range ar.Outputs {
			cv, err := canonicalNumbers(v)
			if err != nil {
				resultErr = fmt.Errorf("set_stats value %q: %w", k, err)
			}
			ar.Outputs[k] = cv
		}
	case errors.Is(rerr, fs.ErrNotExist):
		resultErr = errors.New("the run ended without a result (was the solar_result callback disabled?)")
	default:
		resultErr = fmt.Errorf("cannot read the result: %w", rerr)
	}
	m := secrets(req, ar.Outputs)
	res := Result{Stdout: stdout.text(m), Stderr: stderr.text(m), Log: log.lines(m.apply)}
	exit := ended.Exit
	switch {
	case ended.Stopped && ctx.Err() != nil:
		return res, canceled(ctx)
	case ended.Stopped:
		return res, &Error{Kind: ErrTimeout, ExitCode: -1, Msg: "timed out after " + req.Timeout.String()}
	case waitErr != nil:
		return res, &Error{Kind: ErrFailed, ExitCode: -1, Msg: "lost ansible-playbook: " + waitErr.Error()}
	case ar.Unreachable != nil:
		return res, &Error{Kind: ErrFailed, ExitCode: exit.Code, Msg: m.apply(fmt.Sprintf("node %s is unreachable: %s", target.Name, oneLineText(ar.Unreachable.Msg)))}
	case ar.Failed != nil:
		return res, &Error{Kind: ErrFailed, ExitCode: exit.Code, Msg: m.apply(fmt.Sprintf("task %q failed: %s", ar.Failed.Task, oneLineText(ar.Failed.Msg)))}
	case exit.Signal != "":
		return res, failed(-1, "ansible-playbook killed by "+exit.Signal, res.Stderr)
	case exit.Code != 0:
		return res, failed(exit.Code, "ansible-playbook exit status "+strconv.Itoa(exit.Code), res.Stderr)
	case resultErr != nil:
		return res, &Error{Kind: ErrBadResult, Msg: m.apply(resultErr.Error())}
	}
	res.Changed, res.Outputs = ar.Changed, ar.Outputs
	return res, nil
}

// ansibleFiles are the files of one run, in its private directory.
type ansibleFiles struct {
	inventory, vars, knownHosts, plugins, result, controlDir string
}

// writeAnsibleFiles writes the inventory (one host), the extra vars
// (0600: inputs may be secret) and the known_hosts file of a run.
func writeAnsibleFiles(dir string, t AnsibleTarget, vars []byte) (ansibleFiles, error) {
	f := ansibleFiles{
		inventory:  filepath.Join(dir, "inventory.yml"),
		vars:       filepath.Join(dir, "vars.json"),
		knownHosts: filepath.Join(dir, "known_hosts"),
		plugins:    filepath.Join(dir, "plugins"),
		result:     filepath.Join(dir, "result.json"),
	}
	host := map[string]any{}
	if t.Local {
		host["ansible_connection"] = "local"
		host["ansible_python_interpreter"] = "{{ ansible_playbook_python }}"
	} else {
		keyType, _, _ := strings.Cut(t.HostKey, " ")
		pattern := t.Host
		if t.Port != 22 {
			pattern = "[" + t.Host + "]:" + strconv.Itoa(t.Port)
		}
		if err := writeNew(f.knownHosts, []byte(pattern+" "+t.HostKey+"\n")); err != nil {
			return f, fmt.Errorf("cannot write known_hosts: %w", err)
		}
		host["ansible_host"] = t.Host
		host["ansible_port"] = t.Port
		if t.User != "" {
			host["ansible_user"] = t.User
		}
		if t.KeyPath != "" {
			host["ansible_ssh_private_key_file"] = t.KeyPath
		}
		// Strict: the key trusted with solar node trust, its type pinned,
		// never a prompt.
		host["ansible_ssh_common_args"] = "-o UserKnownHostsFile=" + f.knownHosts + " -o StrictHostKeyChecking=yes -o HostKeyAlgorithms=" + keyType + " -o BatchMode=yes"
		host["ansible_python_interpreter"] = "auto_silent"
	}
	inv, err := json.Marshal(map[string]any{"all": map[string]any{"hosts": map[string]any{t.Name: host}}})
	if err != nil {
		return f, err
	}
	for _, d := range []string{f.plugins, filepath.Join(dir, "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return f, err
		}
	}
	for name, data := range map[string][]byte{f.inventory: inv, f.vars: vars, filepath.Join(f.plugins, "solar_result.py"): solarResultPlugin} {
		if err := writeNew(name, data); err != nil {
			return f, fmt.Errorf("cannot write %s: %w", filepath.Base(name), err)
		}
	}
	return f, nil
}

// ansibleEnv is the environment of ansible-playbook: the executor's own
// (without solar's protocol variables), with the callback enabled, host key
// checking on, and Ansible's own files in the run's private directory.
func ansibleEnv(dir string, f ansibleFiles, token string, req Request) []string {
	var env []string
	for _, kv := range os.Environ() {
		if inheritable(kv) {
			env = append(env, kv)
		}
	}
	return append(env,
		"ANSIBLE_CALLBACK_PLUGINS="+f.plugins,
		"ANSIBLE_CALLBACKS_ENABLED=solar_result",
		"ANSIBLE_HOST_KEY_CHECKING=True",
		"ANSIBLE_RETRY_FILES_ENABLED=False",
		"ANSIBLE_NOCOLOR=True",
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"),
		// A short control path: Linux limits a socket's path to 108 bytes.
		"ANSIBLE_SSH_CONTROL_PATH_DIR="+f.controlDir,
		"ANSIBLE_SSH_CONTROL_PATH=%(directory)s/%%C",
		"SOLAR_RESULT="+f.result,
		"SOLAR_RESOURCE="+req.Resource,
		"SOLAR_ACTION="+req.Action,
		"SOLAR_TASK="+req.Task,
		attemptVar+"="+token,
	)
}

// shortTempRoot is a directory with a short path for sockets: /tmp when
// it is writable, else the system's temp dir.
func shortTempRoot() string {
	if st, err := os.Stat("/tmp"); err == nil && st.IsDir() {
		return "/tmp"
	}
	return os.TempDir()
}

// oneLineText joins a multi-line Ansible message for an error.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
