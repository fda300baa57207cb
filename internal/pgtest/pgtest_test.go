package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func query(t *testing.T, url, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestStartIsHonestAndSocketOnly(t *testing.T) {
	u := Start(t)
	if got := query(t, u, "SHOW fsync"); got != "on" {
		t.Errorf("fsync = %s: benchmarks need it on", got)
	}
	if got := query(t, u, "SHOW listen_addresses"); got != "" {
		t.Errorf("listen_addresses = %q: the server must not listen on TCP", got)
	}
	if got := query(t, u, "SELECT current_database()"); got != "solar_test" {
		t.Errorf("database %s", got)
	}
}

func TestSharedGivesFreshDatabases(t *testing.T) {
	a, b := Shared(t), Shared(t)
	if a == b {
		t.Fatalf("two calls gave the same database %s", a)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	if got := query(t, b, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'only_in_a'"); got != "0" {
		t.Fatal("a table of one database shows in the other")
	}
}

func TestStopRemovesEverything(t *testing.T) {
	s, err := StartServerWith(Options{NoFsync: true})
	if err != nil {
		skipOrFail(t, err)
	}
	u, err := s.NewDatabase("x")
	if err != nil {
		t.Fatal(err)
	}
	if got := query(t, u, "SHOW fsync"); got != "off" {
		t.Errorf("NoFsync: fsync = %s", got)
	}
	if _, err := s.NewDatabase("Bad-Name"); err == nil {
		t.Error("NewDatabase took a name that needs quoting")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left %s: %v", s.Dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, u); err == nil {
		c.Close(ctx)
		t.Error("the server still answers after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// TestWatchdogCleansUpAfterKill starts a server in a child process, kills
// the child with SIGKILL, and expects the server gone and its directory
// removed all the same.
func TestWatchdogCleansUpAfterKill(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		s, err := StartServerWith(Options{NoFsync: true})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(s.Dir)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if _, err := findBin(); err != nil {
		skipOrFail(t, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogCleansUpAfterKill$")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "/") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child: %q %v", line, err)
	}
	dir := strings.TrimSpace(line)
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	pid := 0
	if b, err := os.ReadFile(pidFile); err == nil {
		_, _ = fmt.Sscan(string(b), &pid)
	}
	if pid == 0 {
		t.Fatalf("no postmaster pid in %s", pidFile)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, statErr := os.Stat(dir)
		alive := syscall.Kill(pid, 0) == nil
		if errors.Is(statErr, os.ErrNotExist) && !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the test process died: dir %s stat %v, postmaster %d alive %v", dir, statErr, pid, alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fakeTB records how skipOrFail ended a test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                       {}
func (f *fakeTB) Skipf(format string, a ...any) { f.skipped = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.failed = fmt.Sprintf(format, a...)
}

func TestMissingServerSkipsUnlessRequired(t *testing.T) {
	missing := fmt.Errorf("%w: no initdb (%s)", ErrNotInstalled, installHint)
	for _, c := range []struct {
		env        string
		skip, fail bool
	}{{"", true, false}, {"1", false, true}} {
		t.Run("require="+c.env, func(t *testing.T) {
			t.Setenv(requireAllEnv, c.env)
			f := &fakeTB{}
			skipOrFail(f, missing)
			if (f.skipped != "") != c.skip || (f.failed != "") != c.fail {
				t.Fatalf("skipped %q failed %q", f.skipped, f.failed)
			}
			if msg := f.skipped + f.failed; !strings.Contains(msg, "apt-get install postgresql") {
				t.Errorf("no install hint in %q", msg)
			}
		})
	}
	f := &fakeTB{}
	skipOrFail(f, errors.New("initdb: disk full"))
	if f.failed == "" {
		t.Error("a server that fails to start for another reason was skipped")
	}
}

// TestCrashStartAndSet: a crashed server takes no connection until it is
// started again; a setting made with Set reaches new sessions.
func TestCrashStartAndSet(t *testing.T) {
	s := Own(t)
	u, err := s.NewDatabase("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("idle_session_timeout", "7s"); err != nil {
		t.Fatal(err)
	}
	if got := query(t, u, "SHOW idle_session_timeout"); got != "7s" {
		t.Errorf("idle_session_timeout = %s after Set", got)
	}
	if err := s.Crash(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, u); err == nil {
		c.Close(ctx)
		t.Fatal("a crashed server takes connections")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, u, "SHOW idle_session_timeout"); got != "7s" {
		t.Errorf("idle_session_timeout = %s after a restart", got)
	}
}
