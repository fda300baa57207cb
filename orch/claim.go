package orch

import (
	"bytes"
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

	"github.com/solarops/solar/store"
)

// A plan is run by one process at a time. The runner records itself in the
// plan's runner record (pid, host, start, a random token) in the
// transaction that starts the run. Whether that runner still lives is
// asked of the store where it can tell across machines (PostgreSQL: the
// runner holds an advisory lock named after the plan for its session's
// life, and a dead machine's session, and lock, go with it), and of the
// kernel otherwise (a bbolt file is run from its own machine). Every write
// of the run checks that the record still carries its token (fence), so a
// runner that lost its claim to another can never write again.

// ErrLostClaim means another process took over the plan while this runner
// still ran it.
var ErrLostClaim = errors.New("this runner lost its claim on the plan")

type runnerRecord struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	Token   string    `json:"token,omitempty"`
}

// planLock names the store lock a runner of plan uid holds.
func planLock(uid string) string { return "plan/" + uid }

// hostname is this machine's name, as runner records carry it.
var hostname = func() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}()

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claim records this process as the plan's runner, refusing when another
// live process already is. locked means this process holds the plan's
// store lock: whoever the record names is then gone.
func claim(tx *store.Tx, uid string, now time.Time, token string, locked bool) error {
	if rr, ok := liveRunner(tx, uid); ok && !rr.mine() && !locked {
		return rr.busy(uid)
	}
	raw, err := json.Marshal(runnerRecord{PID: os.Getpid(), Host: hostname, Started: now.UTC(), Token: token})
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
	if held, known := tx.LockHeld(planLock(uid)); known {
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

// Running reports the pid (and, when not this machine, the host) of the
// live process running plan uid, if any.
func Running(tx *store.Tx, uid string) (int, bool) {
	rr, ok := liveRunner(tx, uid)
	return rr.PID, ok
}

// RequestStop asks the runner of plan uid to stop softly: it reads the
// request between tasks, from any machine.
func RequestStop(tx *store.Tx, uid string, kill bool) (pid int, running bool, err error) {
	rr, ok := liveRunner(tx, uid)
	if !ok {
		return 0, false, nil
	}
	var v []byte
	if kill {
		v = []byte(stopKill)
	}
	return rr.PID, true, tx.Put(store.Plans, stopKey(uid), v)
}

// stopKill is the value of a stop request that also kills running tasks.
const stopKill = "kill"

// claimedElsewhere is the error of a run whose plan lock another process
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
