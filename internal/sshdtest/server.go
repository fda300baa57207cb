package sshdtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

const (
	// sshdPath is where Debian's openssh-server installs sshd. It must be
	// absolute: sshd re-executes itself for every connection.
	sshdPath = "/usr/sbin/sshd"

	// privsepDir is sshd's privilege separation directory, compiled into
	// Debian's sshd; it refuses to start without it. Normally the
	// ssh.service unit makes it, and tests run no unit.
	privsepDir = "/run/sshd"

	// defaultIP keeps test servers off 127.0.0.1, where a real sshd of the
	// machine may listen. Every 127.0.0.0/8 address is local on Linux.
	defaultIP = "127.0.0.2"

	// startTimeout bounds how long Start and Restart wait for sshd to
	// answer.
	startTimeout = 10 * time.Second

	// portTries bounds how often Start picks another port when the one it
	// picked was taken before sshd could bind it.
	portTries = 5
)

// Options say how Start configures sshd. The zero value is a server on
// 127.0.0.2 at a free port with a fresh ed25519 host key.
type Options struct {
	// IP is the address sshd listens on, e.g. "127.0.0.2"; "" means
	// 127.0.0.2. With NetNS it is required and must be an address of the
	// namespace the host can reach: Link.NodeIP.
	IP string
	// Port is the port sshd listens on; 0 picks a free one, or 22 inside a
	// namespace, which is empty.
	Port int
	// MaxSessions caps the sessions sshd allows on one connection; 0
	// leaves sshd's default, 10.
	MaxSessions int
	// NetNS, when set, runs sshd inside that network namespace (see
	// NetNS): ip netns exec NAME sshd ...
	NetNS string
	// HostKeyType is the type of the host key: "ed25519" (the default),
	// "ecdsa" (P-256) or "rsa" (2048 bits).
	HostKeyType string
	// HostKeyDir, when set, keeps the host key in that directory and
	// reuses the one found there, so that a server started again, even in
	// another test, presents the same key. Otherwise a fresh key is made
	// in the server's Dir.
	HostKeyDir string
	// Extra is appended verbatim to sshd_config. sshd keeps the first
	// value it reads for most keywords, so Extra can add settings (another
	// HostKey, AcceptEnv, a Match block) but not change the ones Start
	// writes; use the fields above for those.
	Extra string
}

// Server is an OpenSSH sshd owned by one test, running from Start until
// Stop and again after Restart. Its fields are set by Start and never
// change.
type Server struct {
	// IP and Port are where sshd listens, also after Restart.
	IP   string
	Port int
	// User is the unprivileged login the server allows, the only one: see
	// User.
	User string
	// Home is User's home directory.
	Home string
	// ClientKey is the path of an unencrypted ed25519 private key in
	// OpenSSH format (mode 0600, owned by root), authorized to log in as
	// User.
	ClientKey string
	// HostKey is the public host key sshd presents; a client pins it with
	// ssh.FixedHostKey.
	HostKey ssh.PublicKey
	// HostKeyFile is the path of the host private key, in OpenSSH format.
	HostKeyFile string
	// Dir is the server's own directory: sshd_config, keys,
	// authorized_keys and the log. It is removed when the test ends.
	Dir string
	// Log is the file receiving sshd's log (-e, LogLevel VERBOSE), kept
	// across Restart.
	Log string

	netns  string
	config string // path of sshd_config

	mu     sync.Mutex
	cmd    *exec.Cmd     // the running sshd; nil when stopped
	exited chan struct{} // closed once cmd has exited and been waited for
}

// Addr is the server's address for net.Dial: IP:Port.
func (s *Server) Addr() string { return net.JoinHostPort(s.IP, strconv.Itoa(s.Port)) }

// Fingerprint is the SHA256 fingerprint of HostKey, as ssh-keygen -l and
// ssh print it ("SHA256:...").
func (s *Server) Fingerprint() string { return ssh.FingerprintSHA256(s.HostKey) }

// LogText returns what sshd has logged so far, over all its runs; "" if
// nothing could be read.
func (s *Server) LogText() string {
	b, _ := os.ReadFile(s.Log)
	return string(b)
}

// Start starts /usr/sbin/sshd for t and returns once it answers at Addr
// with an SSH-2.0 banner and its own host key; a server that does not
// within 10 seconds fails t with its log. sshd is stopped when t ends (see
// Stop); should the test process die without cleaning up, sshd's listener
// dies with it and frees the port.
//
// The server allows one login: User, with public key ClientKey. Passwords,
// keyboard-interactive and PAM are off, so the server behaves like a
// hardened node. The test is skipped when sshd or root is missing (see
// Require).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		Require(t, "sshd", "apt-get install openssh-server")
	}
	if opts.NetNS != "" {
		if _, err := exec.LookPath("ip"); err != nil {
			Require(t, "ip", "apt-get install iproute2")
		}
		if opts.IP == "" {
			t.Fatalf("sshdtest: Options.NetNS %s needs Options.IP, an address of the namespace: Link.NodeIP", opts.NetNS)
		}
	}
	user, home := User(t)
	if opts.IP == "" {
		opts.IP = defaultIP
	}
	if opts.HostKeyType == "" {
		opts.HostKeyType = "ed25519"
	}
	if err := os.MkdirAll(privsepDir, 0o755); err != nil {
		t.Fatalf("sshdtest: sshd's privilege separation directory: %v", err)
	}
	dir := t.TempDir()
	// sshd opens AuthorizedKeysFile as the user logging in.
	Reachable(t, dir)
	s := &Server{
		IP:        opts.IP,
		User:      user,
		Home:      home,
		ClientKey: filepath.Join(dir, "client_ed25519"),
		Dir:       dir,
		Log:       filepath.Join(dir, "sshd.log"),
		netns:     opts.NetNS,
		config:    filepath.Join(dir, "sshd_config"),
	}
	keyDir := opts.HostKeyDir
	if keyDir == "" {
		keyDir = dir
	}
	var err error
	if s.HostKeyFile, s.HostKey, err = hostKey(keyDir, opts.HostKeyType); err != nil {
		t.Fatalf("sshdtest: host key: %v", err)
	}
	clientPub, err := writeKey(s.ClientKey, "ed25519", "sshdtest client key")
	if err != nil {
		t.Fatalf("sshdtest: client key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	for try := 1; ; try++ {
		s.Port = opts.Port
		picked := s.Port == 0 && s.netns == ""
		if s.Port == 0 && s.netns != "" {
			s.Port = 22
		}
		if picked {
			if s.Port, err = freePort(s.IP); err != nil {
				t.Fatalf("sshdtest: no free port on %s: %v", s.IP, err)
			}
		}
		if err := os.WriteFile(s.config, []byte(s.sshdConfig(opts)), 0o644); err != nil {
			t.Fatal(err)
		}
		err = s.run()
		if err == nil {
			return s
		}
		if !picked || !errors.Is(err, errAddrInUse) || try == portTries {
			t.Fatalf("sshdtest: start sshd on %s: %v\nsshd log (%s):\n%s", s.Addr(), err, s.Log, s.LogText())
		}
	}
}

// sshdConfig is the server's sshd_config.
func (s *Server) sshdConfig(opts Options) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# Written by sshdtest for one test.")
	line("ListenAddress %s", s.Addr())
	line("HostKey %s", s.HostKeyFile)
	line("PidFile none")
	line("LogLevel VERBOSE")
	// No PAM: a container has no PAM stack worth the name, and without it
	// the account checks are sshd's own (see User).
	line("UsePAM no")
	// The server's files belong to root and lie in the test's temp dir,
	// which StrictModes would reject as the user's authorized_keys.
	line("StrictModes no")
	line("PubkeyAuthentication yes")
	line("PasswordAuthentication no")
	line("KbdInteractiveAuthentication no")
	line("AuthorizedKeysFile %s", filepath.Join(s.Dir, "authorized_keys"))
	line("AllowUsers %s", s.User)
	if opts.MaxSessions > 0 {
		line("MaxSessions %d", opts.MaxSessions)
	}
	if opts.Extra != "" {
		line("%s", strings.TrimRight(opts.Extra, "\n"))
	}
	return b.String()
}

// errAddrInUse is run's error when sshd could not bind its address.
var errAddrInUse = errors.New("address already in use")

// run starts sshd with s's config and waits until it answers (see probe).
// On failure sshd is stopped again.
func (s *Server) run() error {
	logf, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logStart, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		logf.Close()
		return err
	}
	args := []string{sshdPath, "-D", "-e", "-f", s.config}
	if s.netns != "" {
		// ip netns exec executes sshd in its own place: the pid stays
		// sshd's.
		args = append([]string{"ip", "netns", "exec", s.netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary killed on timeout runs no cleanup; its servers must
	// not outlive it, holding their ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			s.Stop()
			if strings.Contains(s.logSince(logStart), "Address already in use") {
				return fmt.Errorf("sshd exited (%v): %w", waitErr, errAddrInUse)
			}
			return fmt.Errorf("sshd exited at start: %v", waitErr)
		default:
		}
		err := s.probe()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("no answer within %v: %w", startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logSince returns what sshd has logged from offset on.
func (s *Server) logSince(offset int64) string {
	text := s.LogText()
	if int64(len(text)) < offset {
		return ""
	}
	return text[offset:]
}

// errProbeDone ends a probe's handshake once the host key is known.
var errProbeDone = errors.New("probe done")

// probe reports whether s's sshd answers at Addr: the server's first line
// is an SSH-2.0 banner and, in the key exchange that follows, it presents
// HostKey. The key check tells our sshd from another server that holds the
// port, which sshd then fails to bind. The probe does not log in.
func (s *Server) probe() error {
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	banner, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the banner: %w", err)
	}
	if !strings.HasPrefix(banner, "SSH-2.0-") {
		return fmt.Errorf("banner %q is not SSH-2.0", strings.TrimSpace(banner))
	}
	var offered ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: s.User,
		// Ask for our key's algorithm only: an Extra HostKey of another
		// type must not be offered instead.
		HostKeyAlgorithms: hostKeyAlgorithms(s.HostKey),
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			offered = key
			return errProbeDone
		},
	}
	// The client reads the banner itself: hand it back first.
	replay := &replayConn{Conn: conn, r: io.MultiReader(strings.NewReader(banner), r)}
	_, _, _, err = ssh.NewClientConn(replay, s.Addr(), cfg)
	switch {
	case offered == nil:
		return fmt.Errorf("key exchange: %w", err)
	case !bytes.Equal(offered.Marshal(), s.HostKey.Marshal()):
		return fmt.Errorf("another server holds the port: it presents host key %s, not %s",
			ssh.FingerprintSHA256(offered), s.Fingerprint())
	}
	return nil
}

// hostKeyAlgorithms are the signature algorithms that prove key.
func hostKeyAlgorithms(key ssh.PublicKey) []string {
	if key.Type() == ssh.KeyAlgoRSA {
		// OpenSSH no longer signs with SHA-1 ("ssh-rsa").
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{key.Type()}
}

// replayConn is a net.Conn whose reads come from r.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// freePort returns a port on ip that nothing listens on now. Another
// process may take it before sshd binds it: Start then tries another.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop ends the server as a crashed or powered-off machine ends it: sshd
// and every process it started (the per-connection sshd processes and the
// commands they run) are killed with SIGKILL. When Stop returns, they are
// gone, every connection to the server has been closed by the server's
// side, and Addr refuses connections. Commands that detached themselves
// from their session (setsid and a double fork) are out of reach and left
// running.
//
// Stop may be called more than once, and concurrently; Start registers it
// with t.Cleanup.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
		// Reaped already: its pid may belong to another process now.
	default:
		killTree(s.cmd.Process.Pid)
	}
	<-s.exited
	s.cmd = nil
}

// Restart starts sshd again after Stop, or stops and starts it when it
// runs, with the same config, keys and address: clients that trusted its
// host key still do. Restart fails t with the log if sshd does not answer
// within 10 seconds, for example when another process took the port while
// the server was down.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.run(); err != nil {
		t.Fatalf("sshdtest: restart sshd on %s: %v\nsshd log (%s):\n%s", s.Addr(), err, s.Log, s.LogText())
	}
}
