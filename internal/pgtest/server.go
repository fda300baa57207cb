package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// requireAllEnv names the environment variable that turns every skip for a
// missing component into a failure (as in internal/sshdtest): CI sets it.
const requireAllEnv = "SOLAR_TEST_REQUIRE_ALL"

// installHint says how to get what is missing.
const installHint = "apt-get install postgresql"

// serverUser is the account the server runs as when the tests run as root:
// postgres refuses to run as root.
const serverUser = "postgres"

// superuser is the role initdb creates, and the user of every URL.
const superuser = "postgres"

// defaultPort is PostgreSQL's port, the socket's name when the server
// listens on no TCP address.
const defaultPort = 5432

// startTimeout bounds pg_ctl start and stop.
const startTimeout = 30 * time.Second

// ErrNotInstalled means initdb or pg_ctl, or the postgres account needed to
// run them as root, is missing on this machine.
var ErrNotInstalled = errors.New("PostgreSQL server not installed")

// Options say how StartServerWith configures the server. The zero value is
// the honest one: fsync on.
type Options struct {
	// NoFsync turns fsync off: faster, and a crash of the machine loses
	// the cluster, which a test does not mind. Benchmarks keep it on.
	NoFsync bool
	// Listen are IP addresses of this machine the server also listens on
	// by TCP, beside its Unix socket, such as the host end of a veth pair
	// (internal/sshdtest.Link.HostIP): each must be assigned when the
	// server starts. The port is one free on the first of them. Each is
	// trusted as ADDR/32, so that this machine's own TCP clients connect.
	Listen []string
	// Trust are networks in CIDR notation (such as "10.213.0.0/30", a
	// link's subnet) whose TCP clients connect as any role without a
	// password: a line "host all all NET trust" in pg_hba.conf each.
	Trust []string
}

// Server is a running PostgreSQL cluster of a test process, reachable on a
// Unix socket by the superuser "postgres" without a password.
type Server struct {
	// Dir holds the cluster (Dir/data), its log (Dir/log) and its socket
	// directory (SocketDir).
	Dir       string
	SocketDir string
	// Port is the server's port, on its socket and its Listen addresses:
	// 5432 unless Options.Listen chose a free one.
	Port int

	bin      string   // directory of initdb, pg_ctl
	asUser   []string // prefix that runs a command as the server's user
	conf     string   // the server's options (pg_ctl start -o)
	watchdog *exec.Cmd
	pipe     *os.File // its stdin's write end; closed when this process ends
	stopOnce sync.Once
	stopErr  error
}

// StartServer starts a server with fsync on. Stop it with Stop; if this
// process ends first, its watchdog stops it.
func StartServer() (*Server, error) { return StartServerWith(Options{}) }

// StartServerWith starts a server configured by opts.
func StartServerWith(opts Options) (_ *Server, err error) {
	trust, err := checkTCP(opts)
	if err != nil {
		return nil, err
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	var asUser []string
	var uid, gid int
	if os.Geteuid() == 0 {
		u, err := user.Lookup(serverUser)
		if err != nil {
			return nil, fmt.Errorf("%w: no %s account to run it as root (%s)", ErrNotInstalled, serverUser, installHint)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		asUser = []string{"runuser", "-u", serverUser, "--"}
	}
	dir, err := os.MkdirTemp("", "solar-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, SocketDir: filepath.Join(dir, "sock"), Port: defaultPort, bin: bin, asUser: asUser}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	if err := os.Mkdir(s.SocketDir, 0o700); err != nil {
		return nil, err
	}
	if asUser != nil {
		// The server's user must reach its directory; the parent is
		// world-readable /tmp (or TMPDIR, which must be as reachable).
		for _, d := range []string{dir, s.SocketDir} {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
	}
	if err := s.startWatchdog(); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	// initdb's own fsync of the new cluster protects nothing a test needs.
	if out, err := s.run("initdb", "-D", data, "-U", superuser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	fsync := "on"
	if opts.NoFsync {
		fsync = "off"
	}
	listen := ""
	if len(opts.Listen) > 0 {
		if s.Port, err = freePort(opts.Listen[0]); err != nil {
			return nil, err
		}
		if err := appendHBA(filepath.Join(data, "pg_hba.conf"), trust); err != nil {
			return nil, err
		}
		listen = strings.Join(opts.Listen, ",")
	}
	s.conf = fmt.Sprintf("-c listen_addresses='%s' -p %d -k %s -c fsync=%s", listen, s.Port, s.SocketDir, fsync)
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// start starts the server of an initialised cluster and waits until it
// takes connections.
func (s *Server) start() error {
	if out, err := s.run("pg_ctl", "start", "-D", filepath.Join(s.Dir, "data"), "-w", "-s", "-t", strconv.Itoa(int(startTimeout/time.Second)),
		"-l", filepath.Join(s.Dir, "log"), "-o", s.conf); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s%s", err, out, log)
	}
	return nil
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: every
// session ends at once, and the next start recovers from the WAL) and
// waits until it is down. Start brings it back.
func (s *Server) Crash() error {
	if out, err := s.run("pg_ctl", "stop", "-D", filepath.Join(s.Dir, "data"), "-m", "immediate", "-s", "-w"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Start starts a server stopped by Crash again, with the same settings.
func (s *Server) Start() error { return s.start() }

// Set changes a setting of the whole server (ALTER SYSTEM) and has it
// reloaded, so that new and existing sessions follow it, as an
// administrator's change of postgresql.conf does.
func (s *Server) Set(name, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// ALTER SYSTEM takes no parameters; the name is an identifier and the
	// value a literal, both quoted.
	stmt := "ALTER SYSTEM SET " + pgx.Identifier{name}.Sanitize() + " = '" + strings.ReplaceAll(value, "'", "''") + "'"
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("set %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reload the configuration: %w", err)
	}
	return nil
}

// findBin returns the directory of initdb and pg_ctl: PATH first, then the
// newest /usr/lib/postgresql/VERSION/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				p = r
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest version first: 16 before 9.6.
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(a)), 64)
		vb, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(b)), 64)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	for _, d := range dirs {
		if isExec(filepath.Join(d, "pg_ctl")) && isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: no initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin (%s)", ErrNotInstalled, installHint)
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// command builds a command of the server's tools, run as its user.
func (s *Server) command(tool string, args ...string) *exec.Cmd {
	argv := append(slices.Clone(s.asUser), filepath.Join(s.bin, tool))
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/" // runuser's user may not reach the test's working directory
	return cmd
}

func (s *Server) run(tool string, args ...string) ([]byte, error) {
	return s.command(tool, args...).CombinedOutput()
}

// startWatchdog starts a shell that waits for the end of its stdin, a pipe
// whose write end only this process holds (close-on-exec), then stops the
// server and removes its directory. It runs in a process group of its own,
// so a ^C to the test does not kill it before it cleans up.
func (s *Server) startWatchdog() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	stop := s.command("pg_ctl", "stop", "-D", filepath.Join(s.Dir, "data"), "-m", "immediate", "-s").Args
	script := `cat >/dev/null; "$@" >/dev/null 2>&1; rm -rf "$0"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, s.Dir}, stop...)...)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	r.Close()
	s.watchdog, s.pipe = cmd, w
	return nil
}

// Stop stops the server at once (pg_ctl stop -m immediate) and removes its
// directory. Calling it again does nothing.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.watchdog != nil {
			_ = s.watchdog.Process.Kill()
			_ = s.watchdog.Wait()
			_ = s.pipe.Close()
		}
		if _, err := os.Stat(filepath.Join(s.Dir, "data", "postmaster.pid")); err == nil {
			if out, err := s.run("pg_ctl", "stop", "-D", filepath.Join(s.Dir, "data"), "-m", "immediate", "-s", "-w"); err != nil {
				s.stopErr = fmt.Errorf("pg_ctl stop: %v: %s", err, out)
			}
		}
		if err := os.RemoveAll(s.Dir); err != nil && s.stopErr == nil {
			s.stopErr = err
		}
	})
	return s.stopErr
}

// URL returns the URL of database db on the server, as store/pg and pgx
// take it: the Unix socket directory in the host parameter.
func (s *Server) URL(db string) string {
	q := url.Values{"host": {s.SocketDir}, "user": {superuser}}
	if s.Port != defaultPort {
		q.Set("port", strconv.Itoa(s.Port))
	}
	return "postgres:///" + db + "?" + q.Encode()
}

// TCPURL returns the URL of database db on the server by TCP to host, one
// of Options.Listen, for a client on this machine or in a network that
// Options.Trust lets in. TLS is off: the server has no certificate.
func (s *Server) TCPURL(db, host string) string {
	u := url.URL{Scheme: "postgres", User: url.User(superuser), Host: net.JoinHostPort(host, strconv.Itoa(s.Port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// dbName is what NewDatabase accepts: an identifier that needs no quoting.
var dbName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(name string) (string, error) {
	if !dbName.MatchString(name) {
		return "", fmt.Errorf("database name %q: use lower-case letters, digits and _, at most 63", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// Own starts a server of the test's own, with fsync on, for a test that
// crashes or reconfigures it. It is stopped at cleanup.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Start starts a server of the test's own, with fsync on, creates a
// database in it and returns its URL. The server is stopped at cleanup.
func Start(t testing.TB) string {
	t.Helper()
	s := Own(t)
	u, err := s.NewDatabase("solar_test")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
	n    atomic.Int64
}

// Shared returns the URL of a new, empty database on the server this test
// binary shares between its tests, started on first use with fsync on. The
// server lives as long as the process; its watchdog stops it then.
func Shared(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.srv, shared.err = StartServer() })
	if shared.err != nil {
		skipOrFail(t, shared.err)
	}
	u, err := shared.srv.NewDatabase(fmt.Sprintf("t%d_%d", os.Getpid(), shared.n.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// skipOrFail ends t because the server could not start: a skip with the
// install hint when PostgreSQL is missing, unless SOLAR_TEST_REQUIRE_ALL=1.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	switch {
	case !errors.Is(err, ErrNotInstalled):
		t.Fatalf("pgtest: %v", err)
	case os.Getenv(requireAllEnv) == "1":
		t.Fatalf("PostgreSQL is required (%s=1): %v", requireAllEnv, err)
	default:
		t.Skipf("PostgreSQL not available: %v", strings.TrimPrefix(err.Error(), ErrNotInstalled.Error()+": "))
	}
}
