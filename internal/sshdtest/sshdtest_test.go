package sshdtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// dial logs in to srv as its User with its ClientKey, trusting only its
// HostKey, as solar's transport does.
func dial(t *testing.T, srv *Server) *ssh.Client {
	t.Helper()
	c, err := dialAs(srv.Addr(), srv.User, srv.ClientKey, srv.HostKey)
	if err != nil {
		t.Fatalf("log in to %s: %v\nsshd log:\n%s", srv.Addr(), err, srv.LogText())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialAs logs in to addr as user with the private key in keyFile,
// trusting only hostKey.
func dialAs(addr, user, keyFile string, hostKey ssh.PublicKey) (*ssh.Client, error) {
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, err
	}
	return ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:              user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   ssh.FixedHostKey(hostKey),
		HostKeyAlgorithms: hostKeyAlgorithms(hostKey),
		Timeout:           5 * time.Second,
	})
}

// output runs cmd in a new session on c and returns its trimmed stdout.
func output(c *ssh.Client, cmd string) (string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	out, err := sess.Output(cmd)
	return strings.TrimSpace(string(out)), err
}

// whoami checks that c runs commands as want.
func whoami(t *testing.T, c *ssh.Client, want string) {
	t.Helper()
	got, err := output(c, "id -un")
	if err != nil {
		t.Fatalf("id -un: %v", err)
	}
	if got != want {
		t.Fatalf("id -un = %q, want %q", got, want)
	}
}

func TestLogin(t *testing.T) {
	for _, tc := range []struct {
		keyType string
		want    string // HostKey.Type()
	}{
		{"", ssh.KeyAlgoED25519},
		{"ed25519", ssh.KeyAlgoED25519},
		{"ecdsa", ssh.KeyAlgoECDSA256},
		{"rsa", ssh.KeyAlgoRSA},
	} {
		t.Run("key="+tc.keyType, func(t *testing.T) {
			t.Parallel()
			srv := Start(t, Options{HostKeyType: tc.keyType})
			if srv.IP != "127.0.0.2" {
				t.Errorf("IP = %s, want the default 127.0.0.2", srv.IP)
			}
			if got := srv.HostKey.Type(); got != tc.want {
				t.Errorf("host key type %s, want %s", got, tc.want)
			}
			if fp := srv.Fingerprint(); !strings.HasPrefix(fp, "SHA256:") {
				t.Errorf("Fingerprint() = %q, want SHA256:...", fp)
			}
			for _, f := range []string{srv.ClientKey, srv.HostKeyFile} {
				if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v, want a 0600 file", f, err)
				}
			}
			whoami(t, dial(t, srv), srv.User)
			if !strings.Contains(srv.LogText(), "Accepted publickey for "+srv.User) {
				t.Errorf("the log does not show the login:\n%s", srv.LogText())
			}
		})
	}
}

// TestUser: the login is the unprivileged user, at home.
func TestUser(t *testing.T) {
	t.Parallel()
	name, home := User(t)
	srv := Start(t, Options{})
	if srv.User != name || srv.Home != home {
		t.Fatalf("server login %s (%s), want %s (%s)", srv.User, srv.Home, name, home)
	}
	c := dial(t, srv)
	if got, err := output(c, "id -u"); err != nil || got == "0" {
		t.Errorf("id -u = %q, %v: want an unprivileged uid", got, err)
	}
	if got, err := output(c, "cd && pwd"); err != nil || got != home {
		t.Errorf("home %q, %v: want %s", got, err, home)
	}
	if _, again := User(t); again != home {
		t.Errorf("second User() home %s, want %s", again, home)
	}
}

// TestOnlyTheUser: nobody but User logs in, not even root with the key.
func TestOnlyTheUser(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{})
	if c, err := dialAs(srv.Addr(), "root", srv.ClientKey, srv.HostKey); err == nil {
		c.Close()
		t.Fatal("root logged in")
	}
	if !strings.Contains(srv.LogText(), "User root from 127.0.0.1 not allowed because not listed in AllowUsers") {
		t.Errorf("the log does not say why root was refused:\n%s", srv.LogText())
	}
}

func TestTwoServers(t *testing.T) {
	t.Parallel()
	a := Start(t, Options{})
	b := Start(t, Options{IP: "127.0.0.3"})
	if b.IP != "127.0.0.3" || !strings.HasPrefix(b.Addr(), "127.0.0.3:") {
		t.Fatalf("second server at %s, want 127.0.0.3", b.Addr())
	}
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("two servers share a host key")
	}
	whoami(t, dial(t, a), a.User)
	whoami(t, dial(t, b), b.User)
	// Each server has its own key pair: a's client key does not open b.
	if c, err := dialAs(b.Addr(), b.User, a.ClientKey, b.HostKey); err == nil {
		c.Close()
		t.Error("a's client key logged in to b")
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{})
	addr, fp := srv.Addr(), srv.Fingerprint()
	old := dial(t, srv)
	whoami(t, old, srv.User)

	srv.Stop()
	srv.Stop() // idempotent
	if _, err := net.DialTimeout("tcp", addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a stopped server: %v, want connection refused", err)
	}
	// The server's side closed the connection: the client sees it end.
	ended := make(chan error, 1)
	go func() { ended <- old.Wait() }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("a connection to the stopped server is still open")
	}

	srv.Restart(t)
	if srv.Addr() != addr || srv.Fingerprint() != fp {
		t.Fatalf("after Restart at %s with key %s, want %s with %s", srv.Addr(), srv.Fingerprint(), addr, fp)
	}
	// dial pins the host key: a changed key would fail here.
	whoami(t, dial(t, srv), srv.User)
	// Restart of a running server stops it first.
	srv.Restart(t)
	whoami(t, dial(t, srv), srv.User)
}

// TestStopKillsSessions: what a session runs dies with the server.
func TestStopKillsSessions(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{})
	c := dial(t, srv)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("echo $$; exec sleep 600"); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if st, ok := readStat(pid); ok && st.state != 'Z' {
		t.Errorf("the session's command (pid %d) outlived Stop", pid)
	}
}

func TestHostKeyDir(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	a := Start(t, Options{HostKeyDir: keys, HostKeyType: "ecdsa"})
	b := Start(t, Options{HostKeyDir: keys, HostKeyType: "ecdsa"})
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatalf("servers sharing HostKeyDir present %s and %s", a.Fingerprint(), b.Fingerprint())
	}
	// A server started anew, as a rebuilt node, keeps the key too.
	a.Stop()
	c := Start(t, Options{HostKeyDir: keys, HostKeyType: "ecdsa"})
	if c.Fingerprint() != a.Fingerprint() {
		t.Fatalf("a new server in HostKeyDir presents %s, want %s", c.Fingerprint(), a.Fingerprint())
	}
	whoami(t, dial(t, c), c.User)
}

func TestMaxSessions(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want int // sessions one connection may hold open at once
	}{
		{max: 2, want: 2},
		{max: 0, want: 10}, // sshd's default
	} {
		t.Run(fmt.Sprint("max=", tc.max), func(t *testing.T) {
			t.Parallel()
			c := dial(t, Start(t, Options{MaxSessions: tc.max}))
			open := 0
			for ; open <= tc.want; open++ {
				sess, err := c.NewSession()
				if err != nil {
					break
				}
				t.Cleanup(func() { sess.Close() })
			}
			if open != tc.want {
				t.Errorf("%d sessions opened on one connection, want %d", open, tc.want)
			}
		})
	}
}

func TestExtra(t *testing.T) {
	t.Parallel()
	srv := Start(t, Options{Extra: "AcceptEnv SOLAR_*\n"})
	sess, err := dial(t, srv).NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Setenv("SOLAR_PROBE", "yes"); err != nil {
		t.Fatalf("Setenv refused although Extra accepts it: %v", err)
	}
	out, err := sess.Output("echo $SOLAR_PROBE")
	if err != nil || strings.TrimSpace(string(out)) != "yes" {
		t.Fatalf("SOLAR_PROBE = %q, %v; want yes", out, err)
	}
}

// TestStartFails: a server that cannot start fails the test with its log.
func TestStartFails(t *testing.T) {
	t.Parallel()
	ft := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(ft, Options{Extra: "NoSuchKeyword yes"})
	}()
	<-done
	if ft.skipped {
		t.Skip(ft.msg)
	}
	if !ft.failed || !strings.Contains(ft.msg, "NoSuchKeyword") {
		t.Fatalf("Start with a bad config: failed=%v %q, want a failure quoting sshd's complaint", ft.failed, ft.msg)
	}
}

// fakeTB records how a helper ends a test, instead of ending it.
type fakeTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestRequire(t *testing.T) {
	for _, tc := range []struct {
		env        string
		skip, fail bool
		want       string
	}{
		{env: "", skip: true, want: "widget not available: apt-get install widget"},
		{env: "0", skip: true, want: "widget not available: apt-get install widget"},
		{env: "1", fail: true, want: "widget is required (SOLAR_TEST_REQUIRE_ALL=1): apt-get install widget"},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv("SOLAR_TEST_REQUIRE_ALL", tc.env)
			ft := &fakeTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				Require(ft, "widget", "apt-get install widget")
				t.Error("Require returned")
			}()
			<-done
			if ft.skipped != tc.skip || ft.failed != tc.fail || ft.msg != tc.want {
				t.Errorf("skipped=%v failed=%v %q; want skipped=%v failed=%v %q",
					ft.skipped, ft.failed, ft.msg, tc.skip, tc.fail, tc.want)
			}
		})
	}
}

// TestPartition: a server in a namespace is reachable at NodeIP; Cut
// makes the link drop everything silently, and Heal brings it back with
// the connections that were open.
func TestPartition(t *testing.T) {
	t.Parallel()
	link := NetNS(t, "part")
	srv := Start(t, Options{NetNS: link.NS, IP: link.NodeIP})
	if srv.Port != 22 {
		t.Errorf("port %d in a namespace, want 22", srv.Port)
	}
	open := dial(t, srv)
	whoami(t, open, srv.User)
	// The node sees the host at HostIP.
	if got, err := output(open, "echo $SSH_CLIENT"); err != nil || !strings.HasPrefix(got, link.HostIP+" ") {
		t.Errorf("SSH_CLIENT = %q, %v; want the host at %s", got, err, link.HostIP)
	}

	link.Cut(t)
	link.Cut(t) // idempotent
	start := time.Now()
	_, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
	var nerr net.Error
	if !errors.As(err, &nerr) || !nerr.Timeout() {
		t.Fatalf("dial across a cut link: %v after %v, want a timeout (no refusal, no error)", err, time.Since(start))
	}
	// The open connection hears nothing, not even an end.
	answered := make(chan error, 1)
	go func() {
		_, err := output(open, "id -un")
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a command across a cut link ended: %v", err)
	case <-time.After(2 * time.Second):
	}

	link.Heal(t)
	link.Heal(t) // idempotent
	whoami(t, dial(t, srv), srv.User)
	// Nothing tore the old connection down: the stalled command completes.
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the command stalled by the partition: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the connection open across the partition never resumed")
	}
}

// TestShape: a shaped link carries traffic through a token bucket filter
// on both ends, and keeps its shape across Cut and Heal.
func TestShape(t *testing.T) {
	t.Parallel()
	link := NetNS(t, "shape")
	srv := Start(t, Options{NetNS: link.NS, IP: link.NodeIP})
	link.Shape(t, "256kbit")
	shaped := func(when string) {
		t.Helper()
		for _, cmd := range [][]string{
			{"tc", "-s", "qdisc", "show", "dev", link.hostDev},
			{"ip", "netns", "exec", link.NS, "tc", "-s", "qdisc", "show", "dev", link.nodeDev},
		} {
			out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v: %s", strings.Join(cmd, " "), err, out)
			}
			// The rate prints as 256Kbit; traffic went through it.
			if !strings.Contains(string(out), "qdisc tbf") || !strings.Contains(string(out), "rate 256Kbit") || strings.Contains(string(out), "Sent 0 bytes") {
				t.Errorf("%s, %s:\n%s\nwant a tbf at 256Kbit that carried the traffic", when, strings.Join(cmd, " "), out)
			}
		}
	}
	whoami(t, dial(t, srv), srv.User)
	shaped("shaped")
	link.Cut(t)
	link.Heal(t)
	whoami(t, dial(t, srv), srv.User)
	shaped("after Cut and Heal")
}

// TestNetNSDistinct: links of one process get their own subnets and names.
func TestNetNSDistinct(t *testing.T) {
	t.Parallel()
	a, b := NetNS(t, "a/b c"), NetNS(t, "a/b c")
	if a.NS == b.NS || a.HostIP == b.HostIP || a.NodeIP == b.NodeIP {
		t.Fatalf("two links share names or addresses: %+v %+v", a, b)
	}
	if strings.ContainsAny(a.NS, "/ ") {
		t.Errorf("namespace name %q has characters ip netns rejects", a.NS)
	}
	for _, l := range []*Link{a, b} {
		if !strings.HasPrefix(l.HostIP, "10.213.") || !strings.HasPrefix(l.NodeIP, "10.213.") {
			t.Errorf("link %s: %s and %s, want 10.213.0.0/16", l.NS, l.HostIP, l.NodeIP)
		}
	}
}
