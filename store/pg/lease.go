package pg

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/solarops/solar/internal/proc"
	"github.com/solarops/solar/store/kv"
)

// A lease is a row of the lease table: a name (plan/UID, resource/NAME,
// slot/...), its holder (a random token per Locks, with the host, machine
// and process that hold it, for the same-machine takeover and for
// messages) and when it expires. Every decision about time is taken by the
// database, with now(): a lease is free once its expires has passed on the
// server's clock, whatever the machines' clocks say. Its holder keeps it by
// renewing it; on its own side it only measures durations on its
// monotonic clock (LeaseOptions).
//
//   - acquire: one INSERT .. ON CONFLICT DO UPDATE that takes the row when
//     it is absent, expired, or already this holder's, and otherwise
//     returns the live holder (one round trip either way). A holder on
//     this machine whose process is gone (dead, or its pid reused by a
//     later process) is replaced at once by a compare-and-swap on its
//     token: a killed runner's plan is resumed on its machine without
//     waiting for the lease to expire.
//   - renew: one UPDATE of all a holder's leases, by token and name; fewer
//     rows than it holds means one was taken after it expired: lost.
//   - release: one DELETE by token and name, committed without waiting for
//     the WAL flush (a release lost in a server crash only leaves a row
//     that expires). Acquires and renewals wait for it: a lease the server
//     forgot in a crash could be taken by another holder at once.

// DefaultLeaseTTL is how long a lease lasts past its last renewal when
// LeaseOptions.TTL is zero.
const DefaultLeaseTTL = 15 * time.Second

// renewEvery is how often a holder renews its leases, so that a lost
// connection is noticed (and a new one made) within it.
const renewEvery = 500 * time.Millisecond

// renewTimeout bounds one renewal, connecting included: a connection that
// hangs is dropped and another made at the next renewal.
const renewTimeout = 2 * time.Second

// lockOpTimeout bounds an acquire or a release, connecting included.
const lockOpTimeout = 5 * time.Second

// LeaseOptions say how long leases last and when their holder gives them
// up.
type LeaseOptions struct {
	// TTL is how long a lease lasts after its last renewal, on the
	// database's clock; zero is DefaultLeaseTTL.
	TTL time.Duration
	// Reserve is the time the holder needs, before its leases expire, to
	// stop what it does under them (kill its tasks). Its deadline is the
	// moment its last successful renewal was sent, plus TTL, minus
	// Reserve, on its monotonic clock; it must be under TTL by at least
	// two renewals (MinLeaseTTL).
	Reserve time.Duration
}

// MinLeaseTTL is the shortest TTL a holder needing reserve accepts: it
// leaves a second of renewals before the deadline.
func MinLeaseTTL(reserve time.Duration) time.Duration { return reserve + 2*renewEvery }

func (o LeaseOptions) withDefaults() (LeaseOptions, error) {
	if o.TTL == 0 {
		o.TTL = DefaultLeaseTTL
	}
	if o.TTL < MinLeaseTTL(o.Reserve) {
		return o, fmt.Errorf("lease time %s is too short: give at least %s", o.TTL, MinLeaseTTL(o.Reserve))
	}
	return o, nil
}

// LeaseLostError says why a holder lost its leases. It wraps
// kv.ErrLeaseLost.
type LeaseLostError struct {
	// Since is when the last successful renewal (or the first acquire)
	// was sent, on this machine's clock: for people to read.
	Since time.Time
	// Taken is set when another holder took a lease after it expired;
	// otherwise the store could not be reached in time.
	Taken bool
	// Err is the last failure to reach the store, if any.
	Err error
}

func (e *LeaseLostError) Error() string {
	since := e.Since.Local().Format(time.TimeOnly)
	if e.Taken {
		return "another process took it over after it expired (last renewed at " + since + ")"
	}
	msg := "cannot reach the store since " + since
	if e.Err != nil {
		msg += " (" + oneLine(e.Err.Error()) + ")"
	}
	return msg
}

// Unwrap returns kv.ErrLeaseLost. The last failure only shows in the
// message: the loss, not a failure to connect, is what the holder must act
// on.
func (e *LeaseLostError) Unwrap() error { return kv.ErrLeaseLost }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Holder describes who holds a lease, as the database sees it now: Left
// and Silent are on the database's clock.
type Holder = kv.LockHolder

// holder is a lease holder's identity: the token is the Locks's own; the
// rest says which process, on which machine, holds it.
type holder struct {
	token string
	host  string
	// machine is the boot id and pid namespace: two processes whose
	// machine and host agree see each other's pids. Empty when unknown:
	// then no pid is trusted.
	machine string
	pid     int
	start   int64 // the process's start time, in clock ticks after boot
}

// self is this process as a lease holder, but for the token.
var self = sync.OnceValue(func() holder {
	h := holder{pid: os.Getpid(), host: "unknown"}
	if name, err := os.Hostname(); err == nil {
		h.host = name
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, nsErr := os.Readlink("/proc/self/ns/pid")
	if err == nil && nsErr == nil {
		h.machine = strings.TrimSpace(string(boot)) + " " + ns
	}
	h.start, _, _ = proc.Start(h.pid)
	return h
})

// newHolder is this process as the holder of a new Locks.
func newHolder() holder {
	h := self()
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	h.token = hex.EncodeToString(b)
	return h
}

// gone reports whether the process that holds a lease (host, machine, pid
// and start as recorded) is known to have ended: it ran on this machine
// and no process with its pid and start time runs now. A holder elsewhere
// is never known to be gone; its lease expires.
func gone(host, machine string, pid int, start int64) bool {
	me := self()
	if machine == "" || machine != me.machine || host != me.host || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	now, zombie, ok := proc.Start(pid)
	// A process that cannot be read is trusted to live.
	return ok && (zombie || now != start)
}

// leaseSQL are the lease statements of one schema.
type leaseSQL struct {
	acquire, takeOver, renew, release, releaseAll, holderOf, held string
	reserve                                                       string // a rate's (rates.go)
}

func newLeaseSQL(schema string) leaseSQL {
	t := schema + ".lease"
	const cols = "holder, host, machine, pid, pid_start"
	ttl := "now() + $7::bigint * interval '1 millisecond'"
	return leaseSQL{
		// $1 name, $2 token, $3 host, $4 machine, $5 pid, $6 start, $7 TTL
		// in ms. The row is not even locked when its live holder is
		// another (a waiter polls): no write, so no WAL to flush.
		acquire: `WITH cur AS (SELECT ` + cols + ` FROM ` + t + ` WHERE name = $1 AND expires > now()),
			got AS (INSERT INTO ` + t + ` AS l (name, ` + cols + `, renewed, expires)
				SELECT $1, $2, $3, $4, $5, $6, now(), ` + ttl + `
				WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.holder <> $2)
				ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, host = EXCLUDED.host,
					machine = EXCLUDED.machine, pid = EXCLUDED.pid, pid_start = EXCLUDED.pid_start,
					renewed = EXCLUDED.renewed, expires = EXCLUDED.expires
				WHERE l.expires <= now() OR l.holder = EXCLUDED.holder
				RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM got), cur.holder, cur.host, cur.machine, cur.pid, cur.pid_start
			FROM (SELECT) AS one LEFT JOIN cur ON true`,
		// $8 is the token of the gone holder being replaced.
		takeOver: `UPDATE ` + t + ` SET holder = $2, host = $3, machine = $4, pid = $5, pid_start = $6,
			renewed = now(), expires = ` + ttl + ` WHERE name = $1 AND holder = $8`,
		renew: `UPDATE ` + t + ` SET renewed = now(), expires = now() + $2::bigint * interval '1 millisecond'
			WHERE holder = $1 AND name = ANY($3::text[])`,
		release: `DELETE FROM ` + t + ` WHERE holder = $1 AND name = ANY($2::text[])`,
		// Expired rows of holders long gone go too: they hold nothing.
		releaseAll: `DELETE FROM ` + t + ` WHERE holder = $1 OR expires < now()`,
		holderOf: `SELECT host, machine, pid, pid_start,
			(extract(epoch FROM expires - now()) * 1000)::bigint, (extract(epoch FROM now() - renewed) * 1000)::bigint
			FROM ` + t + ` WHERE name = $1 AND expires > now()`,
		held:    `SELECT host, machine, pid, pid_start FROM ` + t + ` WHERE name = $1 AND expires > now()`,
		reserve: reserveSQL(schema),
	}
}
