package pg_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

// limitedRole makes a role that may hold at most n sessions, owning the
// database of url, and returns url as that role: its (n+1)th connection
// is refused with SQLSTATE 53300, as when a server's max_connections is
// exhausted.
func limitedRole(t *testing.T, url string, n int) string {
	t.Helper()
	role := fmt.Sprintf("lim%d", schemas.Add(1))
	dbname := strings.SplitN(strings.TrimPrefix(url, "postgres:///"), "?", 2)[0]
	exec1(t, url, fmt.Sprintf("CREATE ROLE %s LOGIN CONNECTION LIMIT %d", role, n))
	exec1(t, url, fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", dbname, role))
	return strings.Replace(url, "user=postgres", "user="+role, 1)
}

// hold connects as the role of url, taking one of its slots until the
// returned function gives it back.
func hold(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, strings.Split(url, "&schema=")[0])
	if err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = c.Close(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

// refused checks that the role of url has no slot free: a connection is
// refused with "too many connections".
func refused(t *testing.T, url string) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), strings.Split(url, "&schema=")[0])
	if err == nil {
		c.Close(context.Background())
		t.Fatal("a connection beyond the role's limit was let in")
	}
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("a connection beyond the role's limit: %v, want SQLSTATE 53300", err)
	}
}

// stillWaiting fails the test if done has an answer within a moment: the
// store must be waiting for a connection slot, not giving up.
func stillWaiting(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned while every connection slot was taken: %v", what, err)
	case <-time.After(2 * time.Second):
	}
}

func answer(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s after a slot was freed: %v", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not return within 60s of a slot being freed", what)
	}
}

// TestTransactionWaitsForAConnectionSlot: a store in use (a runner) whose
// transaction needs a new connection while another client holds the last
// slot tries again, and the transaction succeeds once the slot is free.
func TestTransactionWaitsForAConnectionSlot(t *testing.T) {
	u := newURL(t, limitedRole(t, pgtest.Shared(t), 2))
	o := opts()
	o.ConnectWait = 2 * time.Minute
	s := open(t, u, o) // its pool holds one session
	// A holds the store's session inside its transaction...
	inside, finish, doneA := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	end := func() { once.Do(func() { close(finish) }) }
	t.Cleanup(end) // before the store's Close, which waits for A's session
	go func() {
		doneA <- s.Update(func(tx kv.Tx) error {
			close(inside)
			<-finish
			return tx.Put("one", "a", []byte("1"))
		})
	}()
	<-inside
	// ...another client takes the last slot, so that B must connect and
	// is refused.
	release := hold(t, u)
	refused(t, u)
	doneB := make(chan error, 1)
	go func() { doneB <- s.Update(func(tx kv.Tx) error { return tx.Put("one", "b", []byte("2")) }) }()
	stillWaiting(t, doneB, "Update")
	release()
	answer(t, doneB, "Update")
	end()
	answer(t, doneA, "the first Update")
	_ = s.View(func(tx kv.Tx) error {
		for _, k := range []string{"a", "b"} {
			if !tx.Has("one", k) {
				t.Errorf("key %s not written", k)
			}
		}
		return nil
	})
}

// TestOpenWaitsForAConnectionSlot: Open, and the first transaction of a
// command, wait for a slot as well.
func TestOpenWaitsForAConnectionSlot(t *testing.T) {
	u := newURL(t, limitedRole(t, pgtest.Shared(t), 1))
	o := opts()
	o.ConnectWait = 2 * time.Minute
	release := hold(t, u)
	refused(t, u)
	done := make(chan error, 1)
	go func() {
		s, err := pg.Open(u, o)
		if err == nil {
			err = s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", nil) })
			s.Close()
		}
		done <- err
	}()
	stillWaiting(t, done, "Open")
	release()
	answer(t, done, "Open")
}

// TestConnectGivesUp: a slot that stays taken ends the wait after
// ConnectWait, with an error saying how long it tried; a failed login is
// not tried again.
func TestConnectGivesUp(t *testing.T) {
	db := pgtest.Shared(t)
	u := newURL(t, limitedRole(t, db, 1))
	o := opts()
	o.ConnectWait = 1500 * time.Millisecond
	hold(t, u)
	_, err := pg.Open(u, o)
	if err == nil || !strings.Contains(err.Error(), "too many connections") || !strings.Contains(err.Error(), "(tried for ") {
		t.Errorf("Open with no slot free: %v, want too many connections, tried for", err)
	}
	o.ConnectWait = time.Hour
	start := time.Now()
	_, err = pg.Open(strings.Replace(db, "user=postgres", "user=nobody_here", 1), o)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "tried for") || time.Since(start) > 30*time.Second {
		t.Errorf("Open as a missing role: %v after %s, want a final error at once", err, time.Since(start))
	}
}

// TestFirstConnectFailsAtOnce: a store that never connected does not wait
// out ConnectWait for a network that refuses it (a mistyped port, a server
// that is down): the command fails with the network's error, not tried
// again. Once connected, the same refusal is a blip tried again (see
// TestTransactionWaitsForAConnectionSlot for the server's own refusals).
func TestFirstConnectFailsAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	o := opts()
	o.ConnectWait = 20 * time.Second
	_, err = pg.Open("postgres://solar@"+addr+"/solar?connect_timeout=5", o)
	if err == nil || strings.Contains(err.Error(), "tried for") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Open of a port nothing listens on: %v, want the refusal at once", err)
	}
}

// TestUpdateRunsAgainAfterItsConnectionIsLost: a transaction whose session
// the server ends before its commit (a restart, an administrator, an idle
// timeout) committed nothing, so it runs again on a new connection rather
// than fail a run; what it wrote the first time is not there twice.
func TestUpdateRunsAgainAfterItsConnectionIsLost(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	s := open(t, u, opts())
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, strings.Split(u, "&schema=")[0])
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	runs := 0
	err = s.Update(func(tx kv.Tx) error {
		runs++
		if _, err := tx.Get("one", "k"); err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		if runs == 1 {
			// End every other session of the database: this transaction's.
			if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
		}
		n, err := tx.NextSequence("one")
		if err != nil {
			return err
		}
		return tx.Put("one", "k", []byte(strconv.FormatUint(n, 10)))
	})
	if err != nil {
		t.Fatalf("Update whose connection was ended before its commit: %v", err)
	}
	if runs != 2 {
		t.Errorf("fn ran %d times, want 2 (once more on a new connection)", runs)
	}
	_ = s.View(func(tx kv.Tx) error {
		v, err := tx.Get("one", "k")
		if err != nil || string(v) != "1" {
			t.Errorf("k = %q, %v; want 1: the lost transaction committed nothing", v, err)
		}
		return nil
	})
}
