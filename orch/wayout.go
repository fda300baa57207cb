package orch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// Every refusal names a way out that works in the state the store is in:
// the advice below is chosen by looking at that state (is the plan
// running, unfinished, stale; is anything staged for its stale tasks, and
// is it in another plan already), never fixed text. docs/team-store.md
// ("When solar refuses") lists each refusal with its way out, and
// cmd/solar/testdata/script/no_dead_ends.txtar follows each one.

// SupersededPlan is what superseding did to an older plan.
type SupersededPlan struct {
	UID string
	// Skipped are the tasks not started, now SKIPPED "superseded by NEW".
	Skipped []string
	// Kept counts the plan's other finished tasks by status: superseding
	// leaves them as they were (an ERROR stays ERROR).
	Kept map[Status]int
}

func supersededPlan(uid string, skipped []string, states map[string]State) SupersededPlan {
	out := SupersededPlan{UID: uid, Skipped: skipped, Kept: map[Status]int{}}
	now := make(map[string]bool, len(skipped))
	for _, id := range skipped {
		now[id] = true
	}
	for id, st := range states {
		if !now[id] && st.Status.Finished() {
			out.Kept[st.Status]++
		}
	}
	return out
}

// pendingShown is how many clashing entries a refusal of ch process
// names: 10,000 of them made a line of 360 KB.
const pendingShown = 10

// clash is a staged entry that an unfinished plan still has to run.
type clash struct{ key, uid string }

// refusePending is the ErrPending refusal of the entries clashes, with,
// for each plan they are pending in, the way out that works for it: a
// stale plan can only be replaced (--supersede); a fresh one can also be
// run or stopped.
func refusePending(tx *store.Tx, clashes []clash) error {
	var uids []string
	seen := map[string]bool{}
	parts := make([]string, 0, pendingShown+1)
	for i, c := range clashes {
		if i < pendingShown {
			parts = append(parts, c.key+" (plan "+c.uid+")")
		}
		if !seen[c.uid] {
			seen[c.uid] = true
			uids = append(uids, c.uid)
		}
	}
	if more := len(clashes) - pendingShown; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	sort.Strings(uids)
	advice := make([]string, len(uids))
	for i, uid := range uids {
		why, err := staleWhy(tx, uid)
		if err != nil {
			return err
		}
		name := "that plan"
		if len(uids) > 1 {
			name = "plan " + uid
		}
		if why != "" {
			advice[i] = fmt.Sprintf("plan %s is stale (%s): pass --supersede to replace it", uid, why)
		} else {
			advice[i] = fmt.Sprintf("run or stop %s (solar orch resume %s / solar orch stop %s), or pass --supersede", name, uid, uid)
		}
	}
	return fmt.Errorf("%w: %s; %s", ErrPending, strings.Join(parts, ", "), strings.Join(advice, "; "))
}

// staleWhy says why unfinished plan uid is stale for a task it has still
// to run, or "" when it is not.
func staleWhy(tx *store.Tx, uid string) (string, error) {
	rec, states, err := LoadRef(tx, uid)
	if err != nil {
		return "", err
	}
	stale, err := StaleNow(tx, rec, states)
	if err != nil || len(stale) == 0 {
		return "", err
	}
	why := stale[0].Why
	if len(stale) > 1 {
		why += fmt.Sprintf(", and %d more stale tasks", len(stale)-1)
	}
	return why, nil
}

// staleWayOut says what to do instead of running the stale tasks of plan
// rec. A plan made later that has their staged changes already is run; a
// change staged and in no other plan is processed, replacing what of rec
// would still run (--supersede is needed when rec is unfinished, and harmless
// when it is not); when nothing is staged for them any more (a later plan
// committed it), running them again means staging their action anew.
func staleWayOut(tx *store.Tx, rec *Record, stale []StaleTask) (string, error) {
	byID := make(map[string]*nodeRef, len(rec.Plan.Nodes))
	for _, n := range rec.Plan.Nodes {
		byID[n.ID] = &nodeRef{res: n.Resource, action: n.Action}
	}
	var staged []string
	for _, s := range stale {
		n := byID[s.ID]
		if n == nil {
			continue
		}
		stamps, err := staging.StampsFor(tx, n.res)
		if err != nil {
			return "", err
		}
		for _, st := range stamps {
			if st.Plan != rec.UID {
				staged = append(staged, st.Key)
			}
		}
	}
	if len(staged) == 0 {
		return restageAdvice(stale, byID), nil
	}
	pending, err := Pending(tx)
	if err != nil {
		return "", err
	}
	for _, k := range staged {
		if uid := pending[k]; uid != "" && uid != rec.UID {
			return fmt.Sprintf("plan %s has their staged changes: run it instead (solar orch run-once %s)", uid, uid), nil
		}
	}
	return "solar ch process --supersede makes a new plan of what is staged now, replacing this plan's tasks not started", nil
}

type nodeRef struct{ res, action string }

// restageShown is how many "ch stage -a" commands restageAdvice spells out.
const restageShown = 3

// restageAdvice is the way out when nothing is staged for the stale tasks
// any more: what made them stale was committed, so the plan's old values
// must not run; their actions run again, with their current values, once
// staged by hand and processed.
func restageAdvice(stale []StaleTask, byID map[string]*nodeRef) string {
	var cmds []string
	seen := map[nodeRef]bool{}
	for _, s := range stale {
		n := byID[s.ID]
		if n == nil || seen[*n] {
			continue
		}
		seen[*n] = true
		if len(cmds) == restageShown {
			cmds = append(cmds, "and so on")
			break
		}
		cmds = append(cmds, fmt.Sprintf("solar ch stage -a %s -n %s", n.action, n.res))
	}
	return fmt.Sprintf("nothing is staged for them now; to run them again with their current values, stage them (%s), then solar ch process", strings.Join(cmds, "; "))
}

// IdleAdvice says, for "orch stop" of plan uid when no process runs it,
// what state the plan is in and what finishes it: a finished plan needs
// nothing (retry runs its failures again); an unfinished one is resumed,
// or replaced by processing what is staged, the only way when it is stale.
func IdleAdvice(tx *store.Tx, uid string) (string, error) {
	_, states, err := LoadRef(tx, uid)
	if err != nil {
		return "", err
	}
	if !Open(tx, uid) || Done(states) {
		n := 0
		for _, st := range states {
			if st.Status == StatusError {
				n++
			}
		}
		if n > 0 {
			return fmt.Sprintf("plan %s is not running; it is finished with %d ERROR (solar orch retry %s runs them again)", uid, n, uid), nil
		}
		return fmt.Sprintf("plan %s is not running; it is finished (solar orch report %s)", uid, uid), nil
	}
	why, err := staleWhy(tx, uid)
	if err != nil {
		return "", err
	}
	if why != "" {
		return fmt.Sprintf("plan %s is not running; it is unfinished and stale (%s): solar ch process --supersede replaces its tasks not started", uid, why), nil
	}
	return fmt.Sprintf("plan %s is not running; it is unfinished: solar orch resume %s finishes it, or solar ch process --supersede replaces its tasks not started", uid, uid), nil
}
