package orch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/solarops/solar/internal/actor"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// A plan is run by one process at a time. The runner records itself in the
// plan's runner record (pid, host, start, a random token) in the
// transaction that starts the run. Whether that runner still lives is
// asked of the store where it can tell across machines, and of the kernel
// otherwise (a bbolt file is run from its own machine). Before it, the
// runner takes the plan's claim (store.Locks.TryClaim). On PostgreSQL the
// claim is a lease (store.Locks.Leased): it expires on the database's
// clock unless the runner renews it, so no other runner takes the plan (or
// one of its tasks' resource locks, leases too) while it lives, however
// its database sessions end. On a bbolt file every runner is granted it,
// and the record, written under the file's lock, decides. A runner that
// cannot renew its leases before its own deadline kills its running tasks,
// before the leases expire, and stops (watchLease). Every write of the
// run checks that the record still carries its token (fence), so a runner
// that lost its claim to another can never write again.

// ErrLostClaim means another process took over the plan while this runner
// still ran it.
var ErrLostClaim = errors.New("this runner lost its claim on the plan")

type runnerRecord struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	Token   string    `json:"token,omitempty"`
	// ProcStart is the runner process's start time in clock ticks after
	// boot (proc.Start): with Host and PID it tells the runner from a
	// process that got its pid later (isRunnerHere).
	ProcStart int64 `json:"proc_start,omitempty"`
}

// hostname is this machine's name, as runner records carry it.
var hostname = actor.Host()

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claim records this process as the plan's runner, refusing when another
// live process already is. locked means this process holds the plan's
// claim, and that it excludes every other (store.Locks.Leased): whoever the
// record names is then gone.
func claim(tx *store.Tx, uid string, now time.Time, token string, locked bool) error {
	if !locked {
		if rr, ok := liveRunner(tx, uid); ok && !rr.mine() {
			return rr.busy(uid)
		}
	}
	raw, err := json.Marshal(runnerRecord{PID: os.Getpid(), Host: hostname, Started: now.UTC(), Token: token, ProcStart: selfStart()})
	if err != nil {
		return err
	}
	return tx.Put(store.Plans, runnerKey(uid), raw)
}

// fence fails when the plan's runner record is no longer this runner's:
// another process took the plan over after this one lost its lock.
func fence(tx *store.Tx, uid, token string) error {
	var rr runnerRecord
	raw, err := tx.Get(store.Plans, runnerKey(uid))
	if err == nil && bytes.Contains(raw, []byte(token)) {
		return nil // still this runner's record (its random token), as on every write but the last
	}
	if err == nil {
		err = json.Unmarshal(raw, &rr)
	}
	if err != nil || rr.Token == token {
		return nil // no record: the run is ending (or was reset); nothing to fence
	}
	return fmt.Errorf("%w: plan %s is now run by pid %d on %s since %s; this runner stops",
		ErrLostClaim, uid, rr.PID, rr.Host, rr.Started.Local().Format(time.DateTime))
}

func (rr runnerRecord) mine() bool { return rr.PID == os.Getpid() && rr.local() }

// local reports whether the runner ran on this machine.
func (rr runnerRecord) local() bool { return rr.Host == "" || rr.Host == hostname }

// busy is the error of a change refused because rr runs plan uid.
func (rr runnerRecord) busy(uid string) error {
	where := ""
	if !rr.local() {
		where = " on " + rr.Host
	}
	return fmt.Errorf("%w: plan %s is being run by pid %d%s since %s; wait for it to finish, or stop it with solar orch stop %s",
		ErrRunning, uid, rr.PID, where, rr.Started.Local().Format(time.DateTime), uid)
}

// liveRunner returns the record of the live process running plan uid.
func liveRunner(tx *store.Tx, uid string) (runnerRecord, bool) {
	var rr runnerRecord
	raw, err := tx.Get(store.Plans, runnerKey(uid))
	if err != nil || json.Unmarshal(raw, &rr) != nil {
		return runnerRecord{}, false
	}
	if held, known := tx.ClaimHeld(uid); known {
		if !held {
			return runnerRecord{}, false
		}
		return rr, true
	}
	if !rr.local() || !alive(rr.PID) {
		return runnerRecord{}, false
	}
	return rr, true
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill(0)
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// claimedElsewhere is the error of a run whose plan claim another process
// holds.
func (r *Runner) claimedElsewhere(sdb *sharedDB) error {
	var rr runnerRecord
	found := false
	_ = sdb.View(func(tx *store.Tx) error {
		rr, found = liveRunner(tx, r.UID)
		return nil
	})
	if found {
		return rr.busy(r.UID)
	}
	return fmt.Errorf("%w: plan %s is being claimed by another process; try again", ErrRunning, r.UID)
}

// leaseMargin is what the runner keeps, besides its tasks' kill grace,
// between its deadline and the expiry of its leases: the time to cancel
// its tasks and reach remote nodes.
const leaseMargin = 2 * time.Second

// leaseReserve is how long before its leases expire the runner gives them
// up: its tasks get their kill grace (SIGTERM, then SIGKILL) in that time.
func (r *Runner) leaseReserve() time.Duration {
	grace := handler.DefaultKillGrace
	if r.Shell != nil && r.Shell.KillGrace > 0 {
		grace = r.Shell.KillGrace
	}
	return grace + leaseMargin
}

// MinLeaseTTL is the shortest Runner.LeaseTTL a runner accepts.
func MinLeaseTTL() time.Duration {
	return store.MinLeaseTTL(handler.DefaultKillGrace + leaseMargin)
}

// staleLease is how long a live runner's lease may go without a renewal
// (it renews every half second) before another runner takes it for a dead
// one's, says so, and waits for it to expire.
const staleLease = 3 * time.Second

// leasePoll is how often a runner waiting for another's lease looks again.
const leasePoll = 250 * time.Millisecond

// takePlan takes the plan's claim: on a store whose claims are leases, a
// runner of this machine that is gone leaves it at once. Another holder is
// watched: one seen renewing its lease lives, and is refused; one silent
// for staleLease (dead, or cut off from the store, on another machine) is
// waited for until its lease expires on the store's clock, since it kills
// its tasks before then. stop or ctx ends the wait. Where claims are not
// leases it is granted at once (see claim).
func (r *Runner) takePlan(ctx context.Context, stop <-chan struct{}, sdb *sharedDB, locks store.Locks) (unlock func() error, err error) {
	told := false
	silent := time.Duration(-1) // as last seen; -1: not seen
	for {
		unlock, ok, err := locks.TryClaim(r.UID)
		if err != nil || ok {
			return unlock, err
		}
		h, held, err := locks.ClaimHolder(r.UID)
		if err != nil {
			return nil, err
		}
		if held && h.Silent < silent {
			return nil, r.claimedElsewhere(sdb) // it renewed its lease since the last look
		}
		if held {
			silent = h.Silent
		}
		if held && h.Silent >= staleLease && !told && r.Note != nil {
			told = true
			r.Note(fmt.Sprintf("plan %s: its runner (pid %d on %s) has not renewed its lease for %s; waiting up to %s for it to expire",
				r.UID, h.PID, h.Host, h.Silent.Round(time.Second), h.Left.Round(time.Second)))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stop:
			return nil, fmt.Errorf("%w: stopped while waiting for the lease of plan %s", ErrRunning, r.UID)
		case <-time.After(leasePoll):
		}
	}
}

// watchLease kills the run's tasks, as orch stop --kill does, when the run
// loses its leases (until done is closed); locks that are not leases are
// never lost. The run then stops with lostLease's error.
func (ex *execution) watchLease(locks store.Locks, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-locks.Lost():
	}
	err := fmt.Errorf("lost the lease on plan %s: %w; its tasks were killed; resume with solar orch resume %s",
		ex.rec.UID, locks.Err(), ex.rec.UID)
	ex.leaseLost.Store(&err)
	if ex.r.Note != nil {
		ex.r.Note(fmt.Sprintf("lost the lease on plan %s: killing running tasks", ex.rec.UID))
	}
	ex.ctl.killing.Store(true)
	ex.ctl.kill()
	ex.ctl.closeStop()
}

// lostLease is the error of a run that lost its leases, or nil.
func (ex *execution) lostLease() error {
	if p := ex.leaseLost.Load(); p != nil {
		return *p
	}
	return nil
}
