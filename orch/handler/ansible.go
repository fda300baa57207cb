package handler

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/solarops/solar/internal/fileread"
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

// Ansible is the handler of bases with "handler: ansible". Its zero value
// runs every playbook locally.
type Ansible struct {
	// Target resolves a task's location to its node; nil, or an empty
	// location, is this machine.
	Target func(location string) (Target, error)
	// Local runs ansible-playbook, on this machine whatever the node:
	// the run's Local; nil is the one shared by every handler given none
	// (see Local).
	Local *Local
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
	if req.Members != nil {
		return Result{}, fmt.Errorf("%w: task %s: an ansible action cannot run as a batch", ErrBadRequest, req.Task)
	}
	if ctx.Err() != nil {
		return Result{}, canceled(ctx)
	}
	prog, path, target, err := h.resolve(req)
	if err != nil {
		return Result{}, err
	}
	inputs := req.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	vars, err := ansibleVars(inputs)
	if err != nil {
		return Result{}, fmt.Errorf("%w: inputs cannot be written as YAML: %v", ErrBadRequest, err)
	}
	local := h.Local
	if local == nil {
		local = &defaultLocal
	}
	a := attemptOf(req, h.TempDir, h.KillGrace)
	a.Program = &Program{Name: prog, Prepare: func(dir, token string) (Prepared, error) {
		return prepareAnsible(dir, token, path, target, vars, req)
	}}
	return runAttempt(ctx, req, job{
		host:    local,
		attempt: a,
		program: "ansible-playbook ",
		read: func(e Ended) outcome {
			o := ansibleOutcome(e, target.Name)
			o.failure = reservedInputHint(o.failure, inputs)
			return o
		},
	})
}

// prepareAnsible writes the attempt's files in dir (newAnsibleFiles) and
// says how ansible-playbook, at path, runs the playbook against target.
func prepareAnsible(dir, token, path string, target Target, vars []byte, req Request) (Prepared, error) {
	files, err := newAnsibleFiles(dir, target, vars, token)
	if err != nil {
		return Prepared{}, err
	}
	argv := []string{path, "-i", files.inventory, "-e", "@" + files.vars}
	if req.Check {
		argv = append(argv, "--check")
	}
	argv = append(argv, req.Script)
	return Prepared{
		Argv:   argv,
		Env:    ansibleEnv(files, target, req),
		Result: files.result,
		Done: func() {
			// What ansible-playbook left running (an SSH control master
			// waiting out ControlPersist) carries the attempt's token: it
			// goes too, before its socket's directory is removed.
			_, _ = KillProcs(Procs{Boot: bootID(), Token: token}, time.Second)
			files.remove()
		},
	}, nil
}

// ansibleOutcome reads what the solar_result callback wrote; a failed task
// or an unreachable node, named as node, is the attempt's failure.
func ansibleOutcome(e Ended, node string) outcome {
	ar, err := readAnsibleResult(e)
	o := outcome{changed: ar.Changed, outputs: ar.Outputs, err: err}
	switch {
	case ar.Unreachable != nil:
		o.failure = fmt.Sprintf("node %s is unreachable: %s", node, oneLineText(ar.Unreachable.Msg))
	case ar.Failed != nil:
		o.failure = fmt.Sprintf("task %q failed: %s", ar.Failed.Task, oneLineText(ar.Failed.Msg))
	}
	return o
}

// resolve finds the program to run and the node to run the playbook on.
func (h *Ansible) resolve(req Request) (prog, path string, target Target, err error) {
	prog = h.Program
	if prog == "" {
		prog = AnsibleProgram
	}
	path, err = exec.LookPath(prog)
	if err != nil {
		return prog, "", target, &Error{Kind: ErrFailed, ExitCode: -1,
			Msg: fmt.Sprintf("%s is not installed on this machine, which runs the playbooks of handler ansible: %s", prog, ansibleInstallHint)}
	}
	target = Target{Name: "localhost", Local: true}
	if req.Location != "" && h.Target != nil {
		if target, err = h.Target(req.Location); err != nil {
			return prog, path, target, &Error{Kind: ErrFailed, ExitCode: -1, Msg: err.Error()}
		}
	}
	if !target.Local && target.HostKey == "" {
		return prog, path, target, &Error{Kind: ErrFailed, ExitCode: -1, Msg: fmt.Sprintf("node %s (%s) is not trusted: solar node trust %s",
			target.Name, net.JoinHostPort(target.Host, strconv.Itoa(target.Port)), target.Name)}
	}
	if !target.Local && strings.ContainsFunc(target.HostKey, unicode.IsControl) {
		return prog, path, target, &Error{Kind: ErrFailed, ExitCode: -1, Msg: fmt.Sprintf("the trusted host key of node %s is damaged: solar node trust %s", target.Name, target.Name)}
	}
	if !target.Local && !plainHostName(target.Name) {
		return prog, path, target, &Error{Kind: ErrFailed, ExitCode: -1, Msg: fmt.Sprintf("node name %q cannot name an Ansible host: rename the node to letters, digits and _ . -", target.Name)}
	}
	if !target.Local && target.KeyPath != "" {
		// ssh would read the file unchecked: a FIFO would hang the task
		// until its timeout, a device be read. The path checked is the one
		// ssh is given.
		key, err := ansibleKeyFile(target.KeyPath, req.BaseDir)
		if err == nil {
			var raw []byte
			raw, err = fileread.PrivateKey(key)
			clear(raw)
		}
		if err != nil {
			return prog, path, target, &Error{Kind: ErrFailed, ExitCode: -1, Msg: fmt.Sprintf("node %s: ssh_key %s: %v", target.Name, target.KeyPath, err)}
		}
		target.KeyPath = key
	}
	return prog, path, target, nil
}

// ansibleKeyFile is the file ssh reads for a node's ssh_key p when
// ansible-playbook runs in dir: Ansible expands a leading ~ as Python's
// os.path.expanduser does, and ssh reads a relative path from its working
// directory, the base's. The path is joined, not cleaned: ".." after a
// symbolic link is the kernel's to resolve, as it is for ssh. ssh also
// expands % tokens and ${VAR} in a key's path (IdentityFile), which would
// make the file it reads another than the one checked: such a path is
// refused.
func ansibleKeyFile(p, dir string) (string, error) {
	if strings.Contains(p, "%") || strings.Contains(p, "${") {
		return "", errors.New("ssh would expand the % or ${ in it into another path: give the key file's plain path")
	}
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		name, _, _ := strings.Cut(rest, "/")
		var home string
		if name == "" {
			home = os.Getenv("HOME")
		}
		if home == "" {
			u, err := user.Current()
			if name != "" {
				u, err = user.Lookup(name)
			}
			if err != nil {
				return "", fmt.Errorf("cannot find the home directory ~%s names: give the key file's full path", name)
			}
			home = u.HomeDir
		}
		if home = strings.TrimRight(home, "/") + rest[len(name):]; home == "" {
			home = "/"
		}
		return home, nil
	}
	if !strings.HasPrefix(p, "/") {
		return dir + "/" + p, nil
	}
	return p, nil
}

// readAnsibleResult decodes what the solar_result callback wrote, as the
// host read it; the error says why there is no usable result.
func readAnsibleResult(e Ended) (ansibleResult, error) {
	var ar ansibleResult
	switch {
	case e.ResultErr != nil:
		return ar, fmt.Errorf("cannot read the result: %w", errors.Unwrap(e.ResultErr))
	case e.Result == nil:
		return ar, errors.New("the run ended without a result (was the solar_result callback disabled?)")
	}
	dec := json.NewDecoder(bytes.NewReader(e.Result))
	dec.UseNumber()
	var resultErr error
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
	return ar, resultErr
}

// ansibleFiles are the files of one attempt. Those in its directory in
// the run directory (Program.Prepare's dir) go with the run directory of
// a dead executor; its SSH control directory, which must have a short
// path, is elsewhere (controlDirPrefix).
type ansibleFiles struct {
	inventory, vars, plugins, result           string
	localTemp, remoteTemp, sysTemp, controlDir string
}

// hostKeyAlias is the name under which the known_hosts file of an
// attempt holds its node's trusted key.
const hostKeyAlias = "solar-trusted-node"

// controlDirPrefix starts the name of an attempt's SSH control directory
// in shortTempRoot(): "solar-cp-<executor pid>-<attempt token>". The pid
// lets the executor's next run (SweepTemp) and its watchdog find the
// directories of an executor that died; the name is a contract with the
// watchdog, which removes "solar-cp-<its runner's pid>-*".
const controlDirPrefix = "solar-cp-"

// newAnsibleFiles writes in dir, the attempt's own directory, the extra
// vars (0600: inputs may be secret), the inventory (one host), the
// callback plugin and, for a node, the known_hosts file, which goes in the
// attempt's SSH control directory made here too: its path is then solar's
// own text throughout. On error it removes the control directory; dir is
// its caller's.
func newAnsibleFiles(dir string, t Target, vars []byte, token string) (f ansibleFiles, err error) {
	f.inventory = filepath.Join(dir, "inventory.yml")
	f.vars = filepath.Join(dir, "vars.yml")
	f.plugins = filepath.Join(dir, "plugins")
	f.result = filepath.Join(dir, "result.json")
	f.localTemp = filepath.Join(dir, "tmp")
	f.remoteTemp = filepath.Join(dir, "remote-tmp")
	f.sysTemp = filepath.Join(dir, "sys-tmp")
	defer func() {
		if err != nil {
			f.remove()
		}
	}()
	knownHosts := ""
	if !t.Local {
		if f.controlDir, err = makeControlDir(token); err != nil {
			return f, err
		}
		knownHosts = filepath.Join(f.controlDir, "known_hosts")
		// The node's address is not in the file: ssh looks the key up
		// under a fixed alias (HostKeyAlias), so that no address, whatever
		// it holds (a line break and a second entry), can add to it.
		if err := writeNew(knownHosts, []byte(hostKeyAlias+" "+t.HostKey+"\n")); err != nil {
			return f, fmt.Errorf("cannot write known_hosts: %w", err)
		}
	}
	for _, d := range []string{f.plugins, f.localTemp, f.remoteTemp, f.sysTemp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return f, fmt.Errorf("cannot make a private temp dir: %w", err)
		}
	}
	for name, data := range map[string][]byte{f.inventory: inventoryYAML(t, knownHosts), f.vars: vars, filepath.Join(f.plugins, "solar_result.py"): solarResultPlugin} {
		if err := writeNew(name, data); err != nil {
			return f, fmt.Errorf("cannot write %s: %w", filepath.Base(name), err)
		}
	}
	return f, nil
}

// remove removes what the attempt made outside its directory (its SSH
// control directory), once nothing of the attempt runs any more; its
// directory goes with its note (Local.execProgram).
func (f ansibleFiles) remove() {
	if f.controlDir != "" {
		_ = os.RemoveAll(f.controlDir)
	}
}

// makeControlDir makes the attempt's SSH control directory. It is made
// afresh, never reused: a directory of that name someone else made in
// the shared /tmp is refused.
func makeControlDir(token string) (string, error) {
	dir := filepath.Join(shortTempRoot(), controlDirPrefix+strconv.Itoa(os.Getpid())+"-"+token)
	// Its path goes into ssh options, which ssh splits at blanks and in
	// which it expands %: only plain paths will do.
	if strings.Trim(dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") != "" {
		return "", fmt.Errorf("cannot make a directory for SSH control sockets in %s: its path holds characters ssh options cannot carry; set TMPDIR to a plain path", filepath.Dir(dir))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("cannot make a directory for SSH control sockets: %w", err)
	}
	return dir, nil
}

// plainHostName reports whether name can name a host in an inventory as
// it is: Ansible reads brackets as host ranges and a colon as a port.
func plainHostName(name string) bool {
	return name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == ""
}

// inventoryYAML is the inventory of the attempt's one host. The node's
// inputs (address, user, key) are tagged !unsafe, as is solar's own ssh
// option text: none of it is a template. The port is a number, which
// Ansible never templates. The local interpreter is solar's own template
// and stays one.
func inventoryYAML(t Target, knownHosts string) []byte {
	b := []byte(`{"all": {"hosts": {`)
	b = appendYAMLString(b, t.Name, false)
	if t.Local {
		b = append(b, `: {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}`+"\n"...)
		return b
	}
	b = append(b, `: {"ansible_host": `...)
	b = appendYAMLString(b, t.Host, true)
	b = append(b, `, "ansible_port": `...)
	b = strconv.AppendInt(b, int64(t.Port), 10)
	if t.User != "" {
		b = append(b, `, "ansible_user": `...)
		b = appendYAMLString(b, t.User, true)
	}
	if t.KeyPath != "" {
		b = append(b, `, "ansible_ssh_private_key_file": `...)
		b = appendYAMLString(b, t.KeyPath, true)
	}
	// Strict: the key trusted with solar node trust, its type pinned,
	// never a prompt.
	keyType, _, _ := strings.Cut(t.HostKey, " ")
	b = append(b, `, "ansible_ssh_common_args": `...)
	b = appendYAMLString(b, "-o UserKnownHostsFile="+knownHosts+" -o HostKeyAlias="+hostKeyAlias+" -o StrictHostKeyChecking=yes -o HostKeyAlgorithms="+keyType+" -o BatchMode=yes", true)
	b = append(b, `, "ansible_python_interpreter": "auto_silent"}}}}`+"\n"...)
	return b
}

// ansibleEnv is what ansible-playbook's environment adds to the executor's
// own (which Local gives it without solar's protocol variables, and with
// the attempt's token): the callback enabled, host key
// checking on, and Ansible's own files in the attempt's directory, TMPDIR
// included. On this machine that takes in the modules' files too
// (Ansible's "remote" temp dir, and TMPDIR, where a module unpacks
// itself), which a stopped playbook would otherwise leave behind, module
// arguments in plain text. A node's modules see its own environment.
func ansibleEnv(f ansibleFiles, t Target, req Request) []string {
	env := []string{
		"ANSIBLE_CALLBACK_PLUGINS=" + f.plugins,
		"ANSIBLE_CALLBACKS_ENABLED=solar_result",
		"ANSIBLE_HOST_KEY_CHECKING=True",
		"ANSIBLE_RETRY_FILES_ENABLED=False",
		"ANSIBLE_NOCOLOR=True",
		"ANSIBLE_LOCAL_TEMP=" + f.localTemp,
		"TMPDIR=" + f.sysTemp,
		"SOLAR_RESULT=" + f.result,
		"SOLAR_RESOURCE=" + req.Resource,
		"SOLAR_ACTION=" + req.Action,
		"SOLAR_TASK=" + req.Task,
	}
	env = appendClaimEnv(env, req)
	if t.Local {
		return append(env, "ANSIBLE_REMOTE_TEMP="+f.remoteTemp)
	}
	// A short control path: Linux limits a socket's path to 108 bytes.
	return append(env,
		"ANSIBLE_SSH_CONTROL_PATH_DIR="+f.controlDir,
		"ANSIBLE_SSH_CONTROL_PATH=%(directory)s/%%C",
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

// sweepControlDirs removes the SSH control directories that executors no
// longer running left in shortTempRoot() (kill -9 gives no chance to),
// after killing what still runs with the attempt's token: a control
// master waiting out ControlPersist. A master that will not die is an
// error (ErrSurvivor), and its directory stays. The name gives only the executor's
// pid, so a directory whose pid was taken again stays until that process
// is gone too: only what is surely stale is removed.
func sweepControlDirs() error {
	root := shortTempRoot()
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), controlDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, token, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || pidAlive(pid) {
			continue
		}
		// The attempt's note, in the run directory, names the same
		// processes: they are most often gone by now.
		if _, err := KillProcs(Procs{Boot: bootID(), Token: token}, survivorWait); err != nil {
			return fmt.Errorf("the SSH control master in %s: %w", filepath.Join(root, e.Name()), err)
		}
		_ = os.RemoveAll(filepath.Join(root, e.Name()))
	}
	return nil
}

// pidAlive reports whether pid names a live process. A zombie is dead
// (where pid 1 does not reap orphans, a killed runner stays one); a pid
// that cannot be read for another reason is taken as alive.
func pidAlive(pid int) bool {
	st, err := readStat(pid)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	return st.state != 'Z'
}
