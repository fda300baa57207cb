package orch

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/solarops/solar/store"
)

// Changes to a plan's tasks made by other commands (discard, supersede,
// filter) while a process runs the plan must reach that process, or be
// refused: nothing may report success and then be undone by the runner.
//
// Both are cheap because the runner holds the store's file lock whenever
// its store is open, and writes what it has buffered before it lets go.
// Another process can therefore only write while the runner's store is
// closed, and then sees every task the runner has started as INPROGRESS.
// Such a task is refused (it runs already); a task not started yet is
// marked SKIPPED (or NOOP, by orch noop: noop.go) and the plan's edit
// counter bumped. The runner reads the counter before it starts a task
// whenever it had let go of the store since it last looked, and honours
// what it finds (control.ended).

func editKey(uid string) string { return "edit/" + uid }

// editCount returns how many times other commands changed plan uid's
// tasks.
func editCount(tx *store.Tx, uid string) uint64 {
	raw, err := tx.Get(store.Plans, editKey(uid))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(string(raw), 10, 64)
	return n
}

// skipTasks marks tasks of plan uid SKIPPED with reason, in states too.
// When a live process runs the plan and has started one of them, nothing
// is written and the error (wrapping ErrRunning) names the tasks and the
// process.
func skipTasks(tx *store.Tx, uid string, ids []string, states map[string]State, reason string, now time.Time) error {
	return endTasks(tx, uid, ids, states, State{Status: StatusSkipped, Reason: reason, End: now}, now)
}

// endTasks gives tasks ids of plan uid the final state end without running
// them (SKIPPED, or NOOP marked by orch noop), in states too, as
// skipTasks describes.
func endTasks(tx *store.Tx, uid string, ids []string, states map[string]State, end State, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if err := refuseStarted(tx, uid, ids, states); err != nil {
		return err
	}
	for _, id := range ids {
		states[id] = end
		if err := PutState(tx, uid, id, end); err != nil {
			return err
		}
	}
	if err := fleetSkipped(tx, uid, ids, now); err != nil {
		return err
	}
	return tx.Put(store.Plans, editKey(uid), []byte(strconv.FormatUint(editCount(tx, uid)+1, 10)))
}

// refuseStarted fails when a live process runs plan uid and has started
// one of ids.
func refuseStarted(tx *store.Tx, uid string, ids []string, states map[string]State) error {
	pid, running := Running(tx, uid)
	if !running {
		return nil
	}
	var started []string
	for _, id := range ids {
		if states[id].Status == StatusInProgress {
			started = append(started, id)
		}
	}
	if len(started) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s already started in plan %s, run by pid %d; wait for it to finish, or stop the run with solar orch stop %s",
		ErrRunning, strings.Join(started, ", "), uid, pid, uid)
}

// RefuseRunning fails, naming the process, when a live process runs plan
// uid: for changes that cannot reach a run in progress (reset, retry,
// restart).
func RefuseRunning(tx *store.Tx, uid string) error {
	if rr, running := liveRunner(tx, uid); running {
		return rr.busy(uid)
	}
	return refuseSubmitted(tx, uid)
}

// FilterPlan keeps the tasks of plan uid that keep names and marks every
// other unfinished one SKIPPED "filtered". It returns how many it skipped.
// A live run of the plan sees the change before it starts another task; a
// task it has already started cannot be filtered out.
func FilterPlan(tx *store.Tx, rec *Record, keep map[string]bool, now time.Time) (int, error) {
	states, err := States(tx, rec)
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, n := range rec.Plan.Nodes {
		if !keep[n.ID] && !states[n.ID].Status.Finished() {
			ids = append(ids, n.ID)
		}
	}
	if err := skipTasks(tx, rec.UID, ids, states, ReasonFiltered, now); err != nil {
		return 0, err
	}
	return len(ids), closeIfDone(tx, rec.UID, states)
}
