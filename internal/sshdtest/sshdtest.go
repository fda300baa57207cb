package sshdtest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// sshdPath is Debian's OpenSSH server.
const sshdPath = "/usr/sbin/sshd"

// Options tune Start.
type Options struct {
	IP          string // loopback address to listen on; "" is 127.0.0.2
	Port        int    // 0 picks a free port (22 inside a namespace)
	MaxSessions int    // 0 leaves sshd's default, 10
	NetNS       string // run sshd inside this network namespace
	HostKeyType string // "ed25519" (default), "ecdsa" or "rsa"
	Extra       string // more sshd_config lines, verbatim
}

// Server is a running sshd.
type Server struct {
	IP          string
	Port        int
	User        string          // the unprivileged login user
	Home        string          // its home directory
	ClientKey   string          // unencrypted ed25519 private key authorized for User (0600)
	HostKey     gossh.PublicKey // the host key sshd presents
	HostKeyFile string          // its private key file
	Dir         string          // config, keys, authorized_keys, log
	Log         string          // sshd's stderr

	opts Options
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Addr is IP:Port.
func (s *Server) Addr() string { return net.JoinHostPort(s.IP, strconv.Itoa(s.Port)) }

// Fingerprint is the SHA256 fingerprint of the host key.
func (s *Server) Fingerprint() string { return gossh.FingerprintSHA256(s.HostKey) }

// LogText returns what sshd has logged so far.
func (s *Server) LogText() string {
	b, _ := os.ReadFile(s.Log)
	return string(b)
}

// Start starts sshd for t and stops it at cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		Require(t, "sshd", "apt-get install openssh-server")
	}
	user, home := User(t)
	if opts.IP == "" {
		opts.IP = "127.0.0.2"
	}
	if opts.HostKeyType == "" {
		opts.HostKeyType = "ed25519"
	}
	dir := t.TempDir()
	// sshd reads the keys as root, but the login user must reach nothing
	// here; the dir only needs to be traversable for AuthorizedKeysFile.
	Reachable(t, dir)
	s := &Server{IP: opts.IP, User: user, Home: home, Dir: dir, Log: filepath.Join(dir, "sshd.log"), opts: opts}
	hostKey, hostPub := genKey(t, opts.HostKeyType)
	s.HostKey = hostPub
	s.HostKeyFile = filepath.Join(dir, "host_key")
	writeFile(t, s.HostKeyFile, hostKey, 0o600)
	clientKey, clientPub := genKey(t, "ed25519")
	s.ClientKey = filepath.Join(dir, "client_key")
	writeFile(t, s.ClientKey, clientKey, 0o600)
	writeFile(t, filepath.Join(dir, "authorized_keys"), gossh.MarshalAuthorizedKey(clientPub), 0o644)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	for try := 0; try < 5; try++ {
		s.Port = opts.Port
		if s.Port == 0 {
			if opts.NetNS != "" {
				s.Port = 22
			} else if s.Port, err = freePort(opts.IP); err != nil {
				t.Fatal(err)
			}
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("sshd: %v\n%s", err, s.LogText())
	}
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ListenAddress %s\n", s.Addr())
	fmt.Fprintf(&b, "HostKey %s\n", s.HostKeyFile)
	b.WriteString("UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n")
	fmt.Fprintf(&b, "AuthorizedKeysFile %s\n", filepath.Join(s.Dir, "authorized_keys"))
	fmt.Fprintf(&b, "PidFile none\nAllowUsers %s\nLogLevel VERBOSE\n", s.User)
	if s.opts.MaxSessions > 0 {
		fmt.Fprintf(&b, "MaxSessions %d\n", s.opts.MaxSessions)
	}
	if s.opts.Extra != "" {
		b.WriteString(s.opts.Extra + "\n")
	}
	return b.String()
}

// start runs sshd and waits for its banner.
func (s *Server) start() error {
	cfg := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(s.config()), 0o644); err != nil {
		return err
	}
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{sshdPath, "-D", "-e", "-f", cfg}
	if s.opts.NetNS != "" {
		args = append([]string{"ip", "netns", "exec", s.opts.NetNS}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("sshd exited at start")
		default:
		}
		if banner(s.Addr()) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("sshd did not answer on %s within 10s", s.Addr())
}

// banner reports whether addr answers with an SSH banner.
func banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 8)
	n, _ := c.Read(buf)
	return strings.HasPrefix(string(buf[:n]), "SSH-2.0")
}

// Stop kills sshd and waits for it. It may be called again.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	// The listener is sshd's; sessions it forked may linger a moment.
	for i := 0; i < 100 && banner(s.Addr()); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart starts sshd again with the same address, config and keys.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	var err error
	for try := 0; try < 50; try++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("restart sshd: %v\n%s", err, s.LogText())
}

func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// genKey makes a private key in OpenSSH format and its public key.
func genKey(t testing.TB, kind string) ([]byte, gossh.PublicKey) {
	t.Helper()
	var priv any
	var err error
	switch kind {
	case "ed25519":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case "ecdsa":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("unknown key type %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), signer.PublicKey()
}

func writeFile(t testing.TB, name string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(name, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil {
		t.Fatal(err)
	}
}

// testUser is the unprivileged login of every test server.
const testUser = "solartest"

var userMu sync.Mutex

// User makes sure the unprivileged test user exists (with /bin/sh as its
// shell and an unlocked password field, which sshd without PAM insists on)
// and returns its name and home.
func User(t testing.TB) (name, home string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Require(t, "root", "tests that start sshd need root to create the test user")
	}
	userMu.Lock()
	defer userMu.Unlock()
	if _, err := exec.Command("id", "-u", testUser).Output(); err != nil {
		out, err := exec.Command("useradd", "-m", "-s", "/bin/sh", testUser).CombinedOutput()
		// Another test process may have made it meanwhile.
		if _, idErr := exec.Command("id", "-u", testUser).Output(); idErr != nil {
			t.Fatalf("useradd %s: %v: %s", testUser, err, out)
		}
	}
	// useradd locks the account ("!"), which sshd refuses without PAM.
	if out, err := exec.Command("usermod", "-p", "*", testUser).CombinedOutput(); err != nil {
		t.Fatalf("usermod: %v: %s", err, out)
	}
	out, err := exec.Command("sh", "-c", "getent passwd "+testUser+" | cut -d: -f6").Output()
	if err != nil {
		t.Fatal(err)
	}
	home = strings.TrimSpace(string(out))
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return testUser, home
}
