package ssh

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/orch/handler"
)

// testGrace keeps SIGTERM-to-SIGKILL short.
const testGrace = 300 * time.Millisecond

// node describes srv as a trusted node named name.
func node(name string, srv *sshdtest.Server) *Node {
	return &Node{Name: name, Host: srv.IP, Port: srv.Port, User: srv.User, KeyPath: srv.ClientKey, HostKey: srv.HostKey}
}

// shared is a directory both the test (root) and the node's login user may
// write: scripts leave their evidence there.
func shared(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	sshdtest.Reachable(t, filepath.Dir(dir))
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newBase writes a base dir with actions/run.sh holding body.
func newBase(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "actions", "run.sh"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func request(base, location string) handler.Request {
	return handler.Request{Resource: "res", Action: "run", Task: "res.run#0", BaseDir: base, Script: "actions/run.sh", Location: location}
}

func newTransport(t *testing.T, nodes map[string]*Node, cfg Config) (*Transport, *handler.Shell) {
	t.Helper()
	tr := New(nodes, nil, cfg)
	t.Cleanup(func() { tr.Close() })
	return tr, &handler.Shell{Transport: tr, KillGrace: testGrace}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// alive reports whether pid is a live, non-zombie process. Nodes on
// loopback share this machine's process table.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// waitDead waits until none of pids is alive.
func waitDead(t *testing.T, within time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still alive after %v", left, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pids(t *testing.T, name string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(readFile(t, name)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// waitFile waits for name to exist.
func waitFile(t *testing.T, name string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not exist after %v", name, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// privateDirs lists the attempt dirs a node's user left in /dev/shm.
func privateDirs(t *testing.T, user string) []string {
	t.Helper()
	matches, _ := filepath.Glob("/dev/shm/solar-*-*")
	var out []string
	for _, m := range matches {
		// "solar-PID-NONCE": the dir of a wrapper still running belongs
		// to an attempt of another test (packages test in parallel, as
		// the same user); only a dead wrapper's dir is a leak.
		if f := strings.Split(filepath.Base(m), "-"); len(f) == 3 {
			if pid, err := strconv.Atoi(f[1]); err == nil && syscall.Kill(pid, 0) == nil {
				continue
			}
		}
		st, err := os.Stat(m)
		if err != nil {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			if u := lookupUID(t, user); int(sys.Uid) == u {
				out = append(out, m)
			}
		}
	}
	return out
}

func lookupUID(t *testing.T, user string) int {
	t.Helper()
	out, err := exec.Command("id", "-u", user).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return uid
}

func TestRemoteRun(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `id -un >"$SOLAR_INPUT_OUT/user"
pwd >"$SOLAR_INPUT_OUT/pwd"
echo "to stdout"
echo "to stderr" >&2
printf '{"changed": false, "outputs": {"port": 8080, "name": "web"}}' >"$SOLAR_RESULT"
`)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	res, err := sh.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Changed {
		t.Error("Changed = true, want false from the result file (NOOP)")
	}
	if res.Outputs["port"] != int64(8080) || res.Outputs["name"] != "web" {
		t.Errorf("Outputs = %v, want port 8080 and name web", res.Outputs)
	}
	if res.Stdout != "to stdout\n" || res.Stderr != "to stderr\n" {
		t.Errorf("Stdout, Stderr = %q, %q", res.Stdout, res.Stderr)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(out, "user"))); got != srv.User {
		t.Errorf("ran as %q, want the node's login %q", got, srv.User)
	}
	pwd := strings.TrimSpace(readFile(t, filepath.Join(out, "pwd")))
	if !strings.HasPrefix(pwd, filepath.Join(srv.Home, ".cache", "solar", "bases")+"/") {
		t.Errorf("ran in %s, want the base cache under %s/.cache/solar/bases", pwd, srv.Home)
	}
	if dirs := privateDirs(t, srv.User); len(dirs) > 0 {
		t.Errorf("private dirs left on the node: %v", dirs)
	}
}

func TestFailureOnNode(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	base := newBase(t, "echo one >&2\necho 'two: s3cret' >&2\nexit 3\n")
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"password": "s3cret"}
	req.Sensitive = map[string]bool{"password": true}
	_, err := sh.Run(context.Background(), req)
	var he *handler.Error
	if !errors.As(err, &he) || he.ExitCode != 3 {
		t.Fatalf("Run: %v, want exit status 3", err)
	}
	if want := "exit status 3: one\ntwo: ********"; err.Error() != want {
		t.Errorf("message = %q, want %q (stderr tail, secret masked)", err, want)
	}
}

func TestHostileInputsArriveByteExact(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	pwned := filepath.Join(out, "pwned")
	hostile := map[string]any{
		"quote":     `it's "quoted" '\'' \' \\`,
		"subst":     "$(touch " + pwned + ") `touch " + pwned + "` ${HOME} $HOME",
		"newlines":  "line1\nline2\n\n",
		"semicolon": "; touch " + pwned + " ; exit 1",
		"unicode":   "héllo wörld ✓ \t tab",
		"glob":      "* ? [a-z]",
		"empty":     "",
		"list":      []any{"a'b", "$(x)"},
	}
	var script strings.Builder
	for name := range hostile {
		fmt.Fprintf(&script, "printf %%s \"$%s\" >\"$SOLAR_INPUT_OUT/%s\"\n", handler.EnvName(name), name)
	}
	script.WriteString("cp \"$SOLAR_INPUTS\" \"$SOLAR_INPUT_OUT/inputs.json\"\n")
	base := newBase(t, script.String())
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	for k, v := range hostile {
		req.Inputs[k] = v
	}
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for name, v := range hostile {
		want := v
		if l, ok := v.([]any); ok {
			want = fmt.Sprintf(`["%s","%s"]`, l[0], l[1])
		}
		if got := readFile(t, filepath.Join(out, name)); got != want {
			t.Errorf("%s = %q, want %q", handler.EnvName(name), got, want)
		}
	}
	// The inputs file is the same JSON the controller would write locally.
	local := newBase(t, "cp \"$SOLAR_INPUTS\" \"$SOLAR_INPUT_OUT/local.json\"\n")
	lreq := request(local, "")
	lreq.Inputs = req.Inputs
	if _, err := (&handler.Shell{}).Run(context.Background(), lreq); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(out, "inputs.json")), readFile(t, filepath.Join(out, "local.json")); got != want {
		t.Errorf("remote inputs file\n%s\nwant the local one\n%s", got, want)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("an input was executed: the marker file exists")
	}
	// Nothing of the inputs reached a command line on the node.
	if log := srv.LogText(); strings.Contains(log, "line1") || strings.Contains(log, "quoted") {
		t.Error("sshd logged an input value")
	}
}

func TestControllerEnvironmentNotForwarded(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2", Extra: "AcceptEnv *"})
	t.Setenv("LEAKY_SECRET", "controller-only")
	t.Setenv("LANG", "xx_LEAK.UTF-8")
	out := shared(t)
	base := newBase(t, `env >"$SOLAR_INPUT_OUT/env"`)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	env := readFile(t, filepath.Join(out, "env"))
	for _, leak := range []string{"LEAKY_SECRET", "controller-only", "xx_LEAK"} {
		if strings.Contains(env, leak) {
			t.Errorf("the controller's %s reached the node", leak)
		}
	}
	for _, want := range []string{"SOLAR_RESOURCE=res", "SOLAR_TASK=res.run#0", "SOLAR_LOCATION=n1", "HOME=" + srv.Home, "SOLAR_INPUTS=", "SOLAR_RESULT="} {
		if !strings.Contains(env, want) {
			t.Errorf("remote environment lacks %s:\n%s", want, env)
		}
	}
}

func TestTimeoutKillsRemoteChildren(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `echo $$ >"$SOLAR_INPUT_OUT/pids"
(trap '' TERM; exec sleep 60) &
echo $! >>"$SOLAR_INPUT_OUT/pids"
echo started
wait
`)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	req.Timeout = 500 * time.Millisecond
	start := time.Now()
	res, err := sh.Run(context.Background(), req)
	took := time.Since(start)
	if !errors.Is(err, handler.ErrTimeout) || err.Error() != "timed out after 500ms" {
		t.Fatalf("Run: %v, want timed out after 500ms", err)
	}
	if res.Stdout != "started\n" {
		t.Errorf("Stdout = %q, want what the script printed before the timeout", res.Stdout)
	}
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("Run took %v", took)
	}
	p := pids(t, filepath.Join(out, "pids"))
	if len(p) != 2 {
		t.Fatalf("pids = %v, want the script's and its child's", p)
	}
	// The child ignores SIGTERM: only the SIGKILL after the grace ends it.
	waitDead(t, 2*time.Second, p...)
	if dirs := privateDirs(t, srv.User); len(dirs) > 0 {
		t.Errorf("private dirs left on the node: %v", dirs)
	}
}

func TestCancelKillsRemoteWork(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `echo $$ >"$SOLAR_INPUT_OUT/pids"; sleep 60 & echo $! >>"$SOLAR_INPUT_OUT/pids"; wait`)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFile(t, filepath.Join(out, "pids"), 10*time.Second)
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_, err := sh.Run(ctx, req)
	if !errors.Is(err, handler.ErrCanceled) {
		t.Fatalf("Run: %v, want canceled", err)
	}
	waitDead(t, 2*time.Second, pids(t, filepath.Join(out, "pids"))...)
}

// TestControllerKilled runs an attempt in a child process, SIGKILLs that
// process while the script runs, and checks that the remote work dies.
func TestControllerKilled(t *testing.T) {
	if os.Getenv("SOLAR_SSH_CHILD") == "1" {
		controllerChild()
		return
	}
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `echo $$ >"$SOLAR_INPUT_OUT/pids"; sleep 60 & echo $! >>"$SOLAR_INPUT_OUT/pids"; wait; echo done >"$SOLAR_INPUT_OUT/done"`)
	cmd := exec.Command(os.Args[0], "-test.run=^TestControllerKilled$")
	cmd.Env = append(os.Environ(), "SOLAR_SSH_CHILD=1", "CHILD_HOST="+srv.IP, "CHILD_PORT="+strconv.Itoa(srv.Port),
		"CHILD_USER="+srv.User, "CHILD_KEY="+srv.ClientKey, "CHILD_HOSTKEY="+KeyText(srv.HostKey), "CHILD_BASE="+base, "CHILD_OUT="+out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(out, "pids"), 10*time.Second)
	time.Sleep(100 * time.Millisecond)
	p := pids(t, filepath.Join(out, "pids"))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitDead(t, 5*time.Second, p...)
	if _, err := os.Stat(filepath.Join(out, "done")); err == nil {
		t.Error("the script went on after its controller died")
	}
}

func controllerChild() {
	hk, err := ParseKey(os.Getenv("CHILD_HOSTKEY"))
	if err != nil {
		panic(err)
	}
	port, _ := strconv.Atoi(os.Getenv("CHILD_PORT"))
	n := &Node{Name: "n1", Host: os.Getenv("CHILD_HOST"), Port: port, User: os.Getenv("CHILD_USER"), KeyPath: os.Getenv("CHILD_KEY"), HostKey: hk}
	tr := New(map[string]*Node{"n1": n}, nil, Config{})
	req := request(os.Getenv("CHILD_BASE"), "n1")
	req.Inputs = map[string]any{"out": os.Getenv("CHILD_OUT")}
	_, _ = (&handler.Shell{Transport: tr}).Run(context.Background(), req)
	os.Exit(0)
}

func TestUntrustedNodeRunsNothing(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `touch "$SOLAR_INPUT_OUT/ran"`)
	n := node("n1", srv)
	n.HostKey = nil
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	_, err := sh.Run(context.Background(), req)
	want := fmt.Sprintf("node n1 (%s) is not trusted: solar node trust n1", srv.Addr())
	if err == nil || err.Error() != want || !errors.Is(err, handler.ErrFailed) {
		t.Fatalf("Run: %v, want %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
		t.Error("the script ran on an untrusted node")
	}
	if strings.Contains(srv.LogText(), "Accepted publickey") {
		t.Error("solar logged in to an untrusted node")
	}
}

// newPublicKey returns a fresh ed25519 public key that no server holds.
func newPublicKey(t *testing.T) gossh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestChangedHostKeyFails(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `touch "$SOLAR_INPUT_OUT/ran"`)
	other := newPublicKey(t)
	n := node("n1", srv)
	n.HostKey = other
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	req := request(base, "n1")
	req.Inputs = map[string]any{"out": out}
	_, err := sh.Run(context.Background(), req)
	for _, want := range []string{"node n1 (" + srv.Addr() + "): host key changed", "expected " + FingerprintOf(other), "offered " + srv.Fingerprint()} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run: %v, want it to say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
		t.Error("the script ran on a node with a changed key")
	}
}

// TestHostKeyAlgorithmPinned: a server with an ed25519 and an RSA key,
// trusted by its RSA key, is not mistaken for a changed one.
func TestHostKeyAlgorithmPinned(t *testing.T) {
	ed := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	rsa := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2", HostKeyType: "rsa", Extra: "HostKey " + ed.HostKeyFile})
	n := node("n1", rsa)
	if n.HostKey.Type() != gossh.KeyAlgoRSA {
		t.Fatalf("host key type %s, want ssh-rsa", n.HostKey.Type())
	}
	// Unpinned, a client would prefer the ed25519 key.
	offered, err := ScanHostKey(context.Background(), "n1", rsa.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if offered.Type() != gossh.KeyAlgoED25519 {
		t.Fatalf("scan got %s first, want the server to hold an ed25519 key too", offered.Type())
	}
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
		t.Fatalf("Run on a node trusted by its RSA key: %v", err)
	}
}

func TestUnreachableNode(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	n := node("n1", srv)
	srv.Stop()
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{DialTimeout: 2 * time.Second})
	_, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1"))
	want := fmt.Sprintf("node n1 (%s) is unreachable: connection refused", srv.Addr())
	if err == nil || err.Error() != want {
		t.Fatalf("Run: %v, want %q", err, want)
	}
	// Back up, the next attempt dials again.
	srv.Restart(t)
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
		t.Fatalf("Run after the node came back: %v", err)
	}
}

func TestLoginRefused(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	n := node("n1", srv)
	n.User = "nobody-here"
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	_, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1"))
	if !errors.Is(err, handler.ErrFailed) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("node n1 (%s) refused the login of nobody-here", srv.Addr())) {
		t.Fatalf("Run: %v, want a refused login naming the node and user", err)
	}
}

// TestMaxSessionsNotExceeded runs 20 attempts at once on one node whose sshd
// allows 10 sessions per connection: all succeed, many run together, and
// the server never refuses a session.
func TestMaxSessionsNotExceeded(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2", MaxSessions: 10})
	out := shared(t)
	base := newBase(t, `: >"$SOLAR_INPUT_OUT/run.$SOLAR_TASK"; sleep 0.5; ls "$SOLAR_INPUT_OUT" | grep -c '^run\.' >"$SOLAR_INPUT_OUT/seen.$SOLAR_TASK"; rm "$SOLAR_INPUT_OUT/run.$SOLAR_TASK"`)
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := request(base, "n1")
			// Twenty resources: attempts of one resource never run at once.
			req.Resource, req.Task = fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i)
			req.Inputs = map[string]any{"out": out}
			_, errs[i] = sh.Run(context.Background(), req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
	}
	peak := 0
	for i := range errs {
		n, _ := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(out, fmt.Sprintf("seen.t%d", i)))))
		peak = max(peak, n)
	}
	if peak <= 10 {
		t.Errorf("at most %d attempts ran at once, want more than one connection's 10", peak)
	}
	log := srv.LogText()
	if strings.Contains(log, "refused") || strings.Contains(log, "prohibited") || strings.Contains(log, "session open failed") {
		t.Errorf("sshd refused sessions:\n%s", log)
	}
	if logins := strings.Count(log, "Accepted publickey"); logins > 3 {
		t.Errorf("%d logins for 20 attempts, want connections reused", logins)
	}
}

func TestBaseCachedOnceAndRefreshed(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, `echo v1 >"$SOLAR_INPUT_OUT/version"; pwd >"$SOLAR_INPUT_OUT/pwd"`)
	run := func() string {
		t.Helper()
		// A new Transport is a new run.
		_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
		req := request(base, "n1")
		req.Inputs = map[string]any{"out": out}
		if _, err := sh.Run(context.Background(), req); err != nil {
			t.Fatalf("Run: %v", err)
		}
		return strings.TrimSpace(readFile(t, filepath.Join(out, "pwd")))
	}
	first := run()
	st1, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Mode().Perm()&0o222 != 0 {
		t.Errorf("cached base %s is %v, want read-only", first, st1.Mode().Perm())
	}
	second := run()
	st2, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || !os.SameFile(st1, st2) {
		t.Errorf("second run used %s, want the cached %s unchanged", second, first)
	}
	if err := os.WriteFile(filepath.Join(base, "actions", "run.sh"), []byte(`echo v2 >"$SOLAR_INPUT_OUT/version"; pwd >"$SOLAR_INPUT_OUT/pwd"`), 0o644); err != nil {
		t.Fatal(err)
	}
	third := run()
	if third == first {
		t.Errorf("a changed script ran from the old cache entry %s", first)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(out, "version"))); got != "v2" {
		t.Errorf("ran version %s, want the changed script", got)
	}
}

func TestStalePrivateDirsSwept(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	// What an attempt killed with SIGKILL leaves: a dir named for a
	// wrapper pid that no longer exists.
	stale := "/dev/shm/solar-999999999-0123456789abcdef"
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stale) })
	uid := lookupUID(t, srv.User)
	if err := os.Chown(stale, uid, uid); err != nil {
		t.Fatal(err)
	}
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a stale private dir survived the next run on the node")
	}
}

// TestPartition puts a node behind a link that is cut while an attempt
// runs: the attempt fails naming the node, another node carries on, the
// node's watchdog kills the orphaned work, and once the link is back the
// next attempt dials again and succeeds.
func TestPartition(t *testing.T) {
	link := sshdtest.NetNS(t, "part")
	far := sshdtest.Start(t, sshdtest.Options{IP: link.NodeIP, NetNS: link.NS})
	near := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.3"})
	out := shared(t)
	slow := newBase(t, `echo $$ >"$SOLAR_INPUT_OUT/pids"; sleep 30 & echo $! >>"$SOLAR_INPUT_OUT/pids"; wait; echo done >"$SOLAR_INPUT_OUT/done"`)
	cfg := Config{Keepalive: 500 * time.Millisecond, DialTimeout: 2 * time.Second}
	_, sh := newTransport(t, map[string]*Node{"far": node("far", far), "near": node("near", near)}, cfg)
	req := request(slow, "far")
	req.Inputs = map[string]any{"out": out}
	go func() {
		waitFile(t, filepath.Join(out, "pids"), 10*time.Second)
		link.Cut(t)
	}()
	start := time.Now()
	_, err := sh.Run(context.Background(), req)
	if want := fmt.Sprintf("node far (%s): connection lost", far.Addr()); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Run: %v, want %q", err, want)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the lost connection was noticed after %v", took)
	}
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "near")); err != nil {
		t.Errorf("the other node: %v", err)
	}
	// No heartbeat reaches the node: its watchdog ends the work.
	waitDead(t, 10*time.Second, pids(t, filepath.Join(out, "pids"))...)
	if _, err := os.Stat(filepath.Join(out, "done")); err == nil {
		t.Error("the orphaned script ran to its end")
	}
	link.Heal(t)
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "far")); err != nil {
		t.Errorf("after the link is back: %v", err)
	}
}

// TestNothingOutlivesAnAttempt: once attempts have ended, no process of
// theirs stays on the node (a watchdog timer left sleeping after every
// attempt piled up to the user's process limit on a busy node). Their
// working directory, the base's cache entry, finds them whoever adopted
// them.
func TestNothingOutlivesAnAttempt(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	out := shared(t)
	base := newBase(t, fmt.Sprintf("# %s %d\npwd >\"$SOLAR_INPUT_OUT/pwd\"\n", t.Name(), time.Now().UnixNano()))
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	for range 10 {
		req := request(base, "n1")
		req.Inputs = map[string]any{"out": out}
		if _, err := sh.Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	dir := strings.TrimSpace(readFile(t, filepath.Join(out, "pwd")))
	deadline := time.Now().Add(4 * time.Second)
	for {
		var left []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir && alive(mustAtoi(e.Name())) {
				comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
				left = append(left, e.Name()+" "+strings.TrimSpace(string(comm)))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of ended attempts still run in %s: %v", len(left), dir, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// trust with a fingerprint needs every key a node holds: an operator may
// have copied the fingerprint of its RSA key, not of the key a client
// prefers.
func TestScanHostKeysFindsEveryType(t *testing.T) {
	ed := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2", HostKeyType: "rsa", Extra: "HostKey " + ed.HostKeyFile})
	keys, err := ScanHostKeys(context.Background(), "n1", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		got = append(got, k.Type()+" "+FingerprintOf(k))
	}
	want := []string{gossh.KeyAlgoED25519 + " " + ed.Fingerprint(), gossh.KeyAlgoRSA + " " + srv.Fingerprint()}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("scanned %q, want %q", got, want)
	}
	srv.Stop()
	if _, err := ScanHostKeys(context.Background(), "n1", srv.Addr(), 2*time.Second); !errors.Is(err, ErrUnreachable) || err.Error() != "node n1 ("+srv.Addr()+") is unreachable: connection refused" {
		t.Fatalf("scan of a stopped node: %v", err)
	}
}

// A reinstalled node that no longer holds a key of the trusted key's type
// fails negotiation; the task must still say the key changed, naming both
// fingerprints, not report a handshake failure.
func TestHostKeyTypeChanged(t *testing.T) {
	old := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.3", HostKeyType: "rsa"})
	n := node("n1", srv)
	n.HostKey = old.HostKey // trusted before the reinstall: ed25519
	_, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	_, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1"))
	want := fmt.Sprintf("node n1 (%s): host key changed: expected %s, offered %s", srv.Addr(), old.Fingerprint(), srv.Fingerprint())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want %q", err, want)
	}
}

// A pooled connection that died before anyone noticed (the next keepalive
// would have) fails only the opening of a session: nothing ran, so the
// attempt dials again instead of failing with "connection lost".
func TestDeadConnectionRedialed(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	n := node("n1", srv)
	tr, sh := newTransport(t, map[string]*Node{"n1": n}, Config{})
	ccfg, done, err := tr.cfg.clientConfig(n)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	client, err := gossh.Dial("tcp", srv.Addr(), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	client.Close()
	// In the pool, with no keepalive watching it.
	p := tr.pool(n)
	p.mu.Lock()
	p.conns = append(p.conns, &conn{client: client, limit: tr.cfg.MaxSessions})
	p.mu.Unlock()
	if _, err := sh.Run(context.Background(), request(newBase(t, "true"), "n1")); err != nil {
		t.Fatalf("Run over a dead pooled connection: %v", err)
	}
}

// node check finds a node where actions could not run: commands the
// wrapper needs are not on the login's PATH.
func TestCheckFindsMissingCommands(t *testing.T) {
	good := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	bare := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.3", Extra: "SetEnv PATH=/nonexistent"})
	tr, _ := newTransport(t, map[string]*Node{"good": node("good", good), "bare": node("bare", bare)}, Config{})
	if _, rtt, err := tr.Check(context.Background(), node("good", good)); err != nil || rtt <= 0 {
		t.Fatalf("Check of a complete node: rtt %v, %v", rtt, err)
	}
	_, _, err := tr.Check(context.Background(), node("bare", bare))
	want := fmt.Sprintf("node bare (%s) lacks commands actions need: tar, head, mkdir, mktemp, mv, chmod, rm, sleep, ln", bare.Addr())
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Check: %v, want %q", err, want)
	}
}

// A remote script's output streams line by line as it is written, stdout
// as well as stderr (a held-back line end delayed every stdout line until
// the next one, the last until the attempt ended).
func TestRemoteOutputStreams(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{IP: "127.0.0.2"})
	_, sh := newTransport(t, map[string]*Node{"n1": node("n1", srv)}, Config{})
	req := request(newBase(t, "echo one; echo uno >&2; sleep 1.5; echo two"), "n1")
	type seen struct {
		line handler.Line
		at   time.Time
	}
	var (
		mu    sync.Mutex
		lines []seen
	)
	req.Output = func(l handler.Line) {
		mu.Lock()
		lines = append(lines, seen{l, time.Now()})
		mu.Unlock()
	}
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, s := range lines {
		got = append(got, string(s.line.Stream)+" "+s.line.Text)
		if s.line.Text != "two" && ended.Sub(s.at) < time.Second {
			t.Errorf("line %q arrived %v before the attempt ended, want it as soon as written (1.5 s before)", s.line.Text, ended.Sub(s.at))
		}
	}
	slices.Sort(got)
	if want := []string{"e uno", "o one", "o two"}; !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// A port where no SSH server speaks, and a key file that is not a private
// key, are named as such.
func TestNotSSHAndNotAKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = ScanHostKey(context.Background(), "n1", ln.Addr().String(), 2*time.Second)
	want := fmt.Sprintf("node n1 (%s): ssh handshake failed: the server closed the connection before the handshake ended (is it an SSH server?", ln.Addr())
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("scan of a port that closes at once: %v, want %q", err, want)
	}

	sshPub := newPublicKey(t)
	name := filepath.Join(t.TempDir(), "id_ed25519.pub")
	if err := os.WriteFile(name, gossh.MarshalAuthorizedKey(sshPub), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readKey(name); err == nil || err.Error() != "this is a public key: give the private key's path (without .pub)" {
		t.Fatalf("readKey of a public key: %v", err)
	}
}
