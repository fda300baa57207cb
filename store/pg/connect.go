package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pauses between two tries of a connection: growing from the first to the
// last, each jittered by half, so that clients that failed together do not
// come back together.
const (
	firstConnectPause = 50 * time.Millisecond
	lastConnectPause  = 2 * time.Second
)

// acquire takes a connection of the pool for op. When the pool must connect
// and that fails for a reason that passes (see passing), it tries again
// until Options.ConnectWait has gone by since the first failure: one client holding the server's
// last connection slot for a moment must not end a run. Until the store
// has connected once, only the server's own "no room" and "starting"
// answers are tried again: a mistyped host or a server that is down fails
// a command at once rather than after the wait. The error is an Error of
// the store.
func (s *Store) acquire(ctx context.Context, op string) (*pgxpool.Conn, error) {
	var start time.Time // of the first failure: a success costs no clock
	pause := firstConnectPause
	for tries := 1; ; tries++ {
		c, err := s.pool.Acquire(ctx)
		if err == nil {
			s.connected.Store(true)
			return c, nil
		}
		if tries == 1 {
			start = time.Now()
		}
		left := time.Until(start.Add(s.opts.ConnectWait))
		if !passing(err, s.connected.Load()) || left <= 0 {
			if tries > 1 {
				err = &retried{err: err, took: time.Since(start).Round(100 * time.Millisecond)}
			}
			return nil, s.fail(op, err)
		}
		time.Sleep(min(pause/2+rand.N(pause), left))
		pause = min(2*pause, lastConnectPause)
	}
}

// retried is a connection that still failed after being tried again for a
// while.
type retried struct {
	err  error
	took time.Duration
}

func (r *retried) Error() string { return fmt.Sprintf("%v (tried for %s)", r.err, r.took) }
func (r *retried) Unwrap() error { return r.err }

// passing reports whether a failed connection may succeed if tried again:
// the server said it has no room (SQLSTATE class 53: too many connections,
// out of memory...), is starting or shutting down (57P03, 57P01), or lost
// the connection (class 08); or the network refused, reset or timed out the
// connection, or found no socket (a local server restarting). A server's
// other answers (a failed login, a missing database or role) are final.
// Before the first connection (seen false) only the server's answers pass:
// a network that refuses or loses the first connection is more likely a
// wrong address than a blip.
func passing(err error, seen bool) bool {
	if !errors.As(err, new(*pgconn.ConnectError)) {
		return false
	}
	pass := false
	final := false
	walk(err, func(e error) {
		if pe, ok := e.(*pgconn.PgError); ok {
			switch {
			case strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "08"), pe.Code == "57P03", pe.Code == "57P01":
				pass = true
			default:
				final = true
			}
			return
		}
		if !seen {
			return
		}
		if ne, ok := e.(net.Error); ok && ne.Timeout() {
			pass = true
		}
		for _, n := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ENOENT, io.EOF, io.ErrUnexpectedEOF, context.DeadlineExceeded} {
			if e == n {
				pass = true
			}
		}
	})
	return pass && !final
}

// walk calls fn on err and every error it wraps, through joins too.
func walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, fn)
		}
	}
}
