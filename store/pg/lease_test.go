package pg_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

func openLocks(t *testing.T, u string, o pg.LeaseOptions) *pg.Locks {
	t.Helper()
	l, err := pg.OpenLocks(u, opts(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// leaseRow is a lease written by hand: a holder this test is not.
type leaseRow struct {
	name, token, host, machine string
	pid                        int
	start                      int64
	ttl                        time.Duration
}

func putLease(t *testing.T, u string, r leaseRow) {
	t.Helper()
	exec1(t, u, "INSERT INTO "+schemaOf(u)+".lease VALUES ($1, $2, $3, $4, $5, $6, now(), now() + $7::bigint * interval '1 millisecond')",
		r.name, r.token, r.host, r.machine, r.pid, r.start, r.ttl.Milliseconds())
}

// thisMachine is what a lease records of this process: host, machine (boot
// id and pid namespace) and start time.
func thisMachine(t *testing.T) (host, machine string, start int64) {
	t.Helper()
	host, _ = os.Hostname()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skip("no boot id: ", err)
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skip("no pid namespace: ", err)
	}
	stat, _ := os.ReadFile("/proc/self/stat")
	f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+1:])
	start, _ = strconv.ParseInt(f[19], 10, 64)
	return host, strings.TrimSpace(string(boot)) + " " + ns, start
}

// TestLeaseHolders: a lease of a live holder, here or elsewhere, is
// refused until it expires on the database's clock; one whose holder is a
// process of this machine that is gone (its pid dead or reused) is taken
// at once.
func TestLeaseHolders(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	l := openLocks(t, u, pg.LeaseOptions{})
	host, machine, start := thisMachine(t)
	for _, c := range []struct {
		name string
		row  leaseRow
		free bool
	}{
		{"another machine", leaseRow{host: "elsewhere", machine: machine, pid: 1, start: 1}, false},
		{"same host name, another machine", leaseRow{host: host, machine: "another boot", pid: 1 << 22, start: 1}, false},
		{"a live process here", leaseRow{host: host, machine: machine, pid: os.Getpid(), start: start}, false},
		{"a dead process here", leaseRow{host: host, machine: machine, pid: 1 << 22, start: 1}, true},
		{"a reused pid here", leaseRow{host: host, machine: machine, pid: os.Getpid(), start: start + 1}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.row.name, c.row.token, c.row.ttl = "lease/"+c.name, "tok-"+c.name, time.Hour
			putLease(t, u, c.row)
			h, held, err := l.Holder(c.row.name)
			if err != nil || held == c.free {
				t.Fatalf("Holder = %+v, %v, %v; want held %v", h, held, err, !c.free)
			}
			if held && (h.Host != c.row.host || h.PID != c.row.pid || h.Left < 50*time.Minute || h.Silent > time.Minute) {
				t.Errorf("Holder = %+v, want %s pid %d, about an hour left", h, c.row.host, c.row.pid)
			}
			unlock, ok, err := l.TryLock(c.row.name)
			if err != nil || ok != c.free {
				t.Fatalf("TryLock = %v, %v; want %v", ok, err, c.free)
			}
			if ok {
				_ = unlock()
			}
		})
	}
	// An expired lease is free, whoever held it.
	putLease(t, u, leaseRow{name: "lease/expired", token: "old", host: "elsewhere", pid: 1, ttl: -time.Second})
	if unlock, ok, err := l.TryLock("lease/expired"); !ok || err != nil {
		t.Fatalf("TryLock of an expired lease: %v %v", ok, err)
	} else {
		_ = unlock()
	}
}

// TestLeaseOfAFrozenHolder: a holder that stops renewing (a frozen
// process, SIGSTOP) keeps its lease until it expires on the database's
// clock; then another takes it, and the holder, thawed, finds it lost.
func TestLeaseOfAFrozenHolder(t *testing.T) {
	const ttl = 3 * time.Second
	if u := os.Getenv("PG_LEASE_CHILD"); u != "" {
		l, err := pg.OpenLocks(u, opts(), pg.LeaseOptions{TTL: ttl, Reserve: time.Second})
		if err == nil {
			_, _, err = l.TryLock("res")
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		<-l.Lost()
		fmt.Println("lost:", l.Err(), errors.Is(l.Err(), kv.ErrLeaseLost))
		os.Exit(0)
	}
	u := newURL(t, pgtest.Shared(t))
	l := openLocks(t, u, pg.LeaseOptions{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseOfAFrozenHolder$")
	cmd.Env = append(os.Environ(), "PG_LEASE_CHILD="+u)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewReader(out)
	if line, _ := lines.ReadString('\n'); line != "locked\n" {
		t.Fatalf("child: %q", line)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	for {
		h, held, err := l.Holder("res")
		if err != nil {
			t.Fatal(err)
		}
		unlock, ok, err := l.TryLock("res")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if held && h.Left > 0 {
				t.Fatalf("took a lease with %s left", h.Left)
			}
			// The child renewed at most half a second before it froze.
			if d := time.Since(frozen); d < ttl-time.Second {
				t.Fatalf("took the lease %s after its holder froze, before its %s could expire", d, ttl)
			}
			defer unlock()
			break
		}
		if !held || h.PID != cmd.Process.Pid {
			t.Fatalf("refused, but Holder = %+v %v", h, held)
		}
		if time.Since(frozen) > 30*time.Second {
			t.Fatal("the lease of a frozen holder never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	line, _ := lines.ReadString('\n')
	if !strings.HasPrefix(line, "lost: ") || !strings.HasSuffix(line, " true\n") {
		t.Fatalf("the thawed holder says %q, want that it lost its lease", line)
	}
}

// TestLeaseAcrossServerCrash: the server crashes (pg_ctl stop -m
// immediate) and comes back; the holder makes a new connection and renews
// its leases, which no one else may take meanwhile. Kept down past the
// holder's deadline, the server's crash loses the leases for the holder
// before they expire.
func TestLeaseAcrossServerCrash(t *testing.T) {
	srv := pgtest.Own(t)
	db, err := srv.NewDatabase("lease")
	if err != nil {
		t.Fatal(err)
	}
	u := newURL(t, db)
	holder := openLocks(t, u, pg.LeaseOptions{TTL: 15 * time.Second, Reserve: 3 * time.Second})
	if _, ok, err := holder.TryLock("plan/1"); !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a renewal or two fail
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	other := openLocks(t, u, pg.LeaseOptions{})
	// Another holder in this process is a live process of this machine:
	// it must wait like any other.
	for i := 0; i < 10; i++ {
		if _, ok, err := other.TryLock("plan/1"); ok || err != nil {
			t.Fatalf("another holder took the lease after the restart: %v %v", ok, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := holder.Err(); err != nil {
		t.Fatalf("the holder lost its lease over a short restart: %v", err)
	}
	h, held, err := other.Holder("plan/1")
	if err != nil || !held || h.Silent > 2*time.Second {
		t.Fatalf("after the restart Holder = %+v %v %v: the holder does not renew", h, held, err)
	}
	if _, ok, err := holder.TryLock("res/1"); !ok || err != nil {
		t.Fatalf("TryLock after the restart: %v %v", ok, err)
	}

	// Down for longer than the holder's deadline.
	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-holder.Lost():
	case <-time.After(60 * time.Second):
		t.Fatal("the holder never noticed it cannot renew its leases")
	}
	lostAt := time.Now()
	if err := holder.Err(); !errors.Is(err, kv.ErrLeaseLost) || !strings.Contains(err.Error(), "cannot reach the store since ") {
		t.Fatalf("Err = %v", err)
	}
	if _, _, err := holder.TryLock("res/2"); !errors.Is(err, kv.ErrLeaseLost) {
		t.Fatalf("TryLock after the loss: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The loss came before the lease expired (one machine here: its
	// clock and the server's are one).
	var expires time.Time
	queryRow(t, u, "SELECT expires FROM "+schemaOf(u)+".lease WHERE name = 'plan/1'", &expires)
	if !lostAt.Before(expires) {
		t.Fatalf("the holder gave up its lease at %s, after it expired at %s", lostAt, expires)
	}
}

// TestLeaseUnderIdleSessionTimeout: a server that ends idle sessions
// (idle_session_timeout) ends none that holds leases, whose renewals keep
// it busy; and a lock session that was ended while it held nothing makes a
// new connection for its next lock.
func TestLeaseUnderIdleSessionTimeout(t *testing.T) {
	srv := pgtest.Own(t)
	if err := srv.Set("idle_session_timeout", "2s"); err != nil {
		t.Fatal(err)
	}
	db, err := srv.NewDatabase("lease")
	if err != nil {
		t.Fatal(err)
	}
	u := newURL(t, db)
	holder := openLocks(t, u, pg.LeaseOptions{})
	other := openLocks(t, u, pg.LeaseOptions{})
	unlock, ok, err := holder.TryLock("plan/1")
	if !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	time.Sleep(5 * time.Second)
	if _, ok, err := other.TryLock("plan/1"); ok || err != nil {
		t.Fatalf("another holder took the lease of an idle session: %v %v", ok, err)
	}
	if err := holder.Err(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // both sessions idle past the timeout
	for _, l := range []*pg.Locks{holder, other} {
		unlock, ok, err := l.TryLock("plan/1")
		if !ok || err != nil {
			t.Fatalf("TryLock after an idle timeout: %v %v", ok, err)
		}
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

func schemaOf(u string) string { return u[strings.Index(u, "&schema=")+len("&schema="):] }

func queryRow(t *testing.T, url, sql string, dest ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, strings.Split(url, "&schema=")[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, sql).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
