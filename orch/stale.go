package orch

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// ErrStale means a plan would run tasks on resources that changed since it
// was made: what the operator reviewed is no longer what would run.
var ErrStale = invalid.New("plan is stale")

// StaleTask is a task of a plan that must not run any more, and why.
type StaleTask struct {
	ID  string
	Why string
}

// Stale returns the tasks among ids of plan rec whose resource was
// committed by a later plan, has a change staged after the plan was
// made (new values, or a removal; an action staged by hand changes no
// value and does not count), or (in a pinned plan) has a base other than
// the one the task was pinned to: its base was upgraded after the plan. Entries that the plan's own run left (pending refreshes, outputs
// that reached a resource) do not count, nor do the plan's own entries
// still staged after a failure: retry must keep working.
func Stale(tx *store.Tx, rec *Record, ids []string) ([]StaleTask, error) {
	byID := make(map[string]string, len(rec.Plan.Nodes))
	for _, n := range rec.Plan.Nodes {
		byID[n.ID] = n.Resource
	}
	// Stamps of many resources are read in one pass over the staged log
	// rather than a lookup each.
	var stamps map[string][]staging.Stamp
	if len(ids) >= staleScanFrom {
		var err error
		if stamps, err = staging.AllStamps(tx); err != nil {
			return nil, err
		}
	}
	pinned, err := pinnedDigests(tx, rec.UID)
	if err != nil {
		return nil, err
	}
	digests := map[string]string{} // resource -> its base's digest now
	why := map[string]string{}     // resource -> reason, "" when fresh
	var out []StaleTask
	for _, id := range ids {
		res := byID[id]
		reason, seen := why[res]
		if !seen {
			ents, err := stampsOf(tx, stamps, res)
			if err != nil {
				return nil, err
			}
			why[res] = staleResource(tx, rec, res, ents)
			reason = why[res]
		}
		if was, ok := pinned[id]; ok && reason == "" {
			if reason, err = upgradedBase(tx, digests, res, was); err != nil {
				return nil, err
			}
		}
		if reason != "" {
			out = append(out, StaleTask{ID: id, Why: reason})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// staleScanFrom is how many tasks a staleness check takes for the stamps
// of the whole log to be read at once (tests lower it).
var staleScanFrom = 1000

// stampsOf returns the stamps of resource res: from all, when read, else
// from the store.
func stampsOf(tx *store.Tx, all map[string][]staging.Stamp, res string) ([]staging.Stamp, error) {
	if all != nil {
		return all[res], nil
	}
	return staging.StampsFor(tx, res)
}

// staleResource says why resource res, with the staged entries ents, makes
// plan rec stale, or "".
func staleResource(tx *store.Tx, rec *Record, res string, ents []staging.Stamp) string {
	if plan := staging.CommittedPlan(tx, res); plan > rec.UID {
		return fmt.Sprintf("%s was committed by the later plan %s", res, plan)
	}
	for _, e := range ents {
		if e.Plan == rec.UID || !e.StagedAt.After(rec.CreatedAt) {
			continue
		}
		if len(e.Diff) == 0 && e.Action != staging.ActionRemove {
			continue // an action staged by hand changes no value
		}
		return fmt.Sprintf("%s has a change staged after the plan (%s, %s)", res, e.Key, e.StagedAt.Local().Format(time.DateTime))
	}
	return ""
}

// RefuseStale fails with ErrStale, naming each stale task among ids and
// why, and what to do instead (see staleWayOut), when plan rec is stale
// for any of them.
func RefuseStale(tx *store.Tx, rec *Record, ids []string) error {
	stale, err := Stale(tx, rec, ids)
	if err != nil || len(stale) == 0 {
		return err
	}
	shown := stale[:min(len(stale), staleShown)]
	parts := make([]string, len(shown))
	for i, s := range shown {
		parts[i] = s.ID + " (" + s.Why + ")"
	}
	if more := len(stale) - len(shown); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more stale tasks", more))
	}
	way, err := staleWayOut(tx, rec, stale)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: plan %s would run %s; nothing was run: %s",
		ErrStale, rec.UID, strings.Join(parts, ", "), way)
}

// staleShown is how many stale tasks a refusal names: a plan of 100,000
// stale tasks made a line of 9 MB.
const staleShown = 10

// pinnedDigests returns the base digest each task of plan uid was pinned
// to, by task id, read in one pass over the pins; nil for a plan made
// before pins.
func pinnedDigests(tx *store.Tx, uid string) (map[string]string, error) {
	if !Pinned(tx, uid) {
		return nil, nil
	}
	out := map[string]string{}
	prefix := pinPrefix(uid)
	err := tx.ForEach(store.Plans, prefix, func(k string, raw []byte) error {
		// Only the base of a pin is read here, not its values.
		var p struct {
			Base BaseRef `json:"base"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("decode pin of %s: %w", k, err)
		}
		out[strings.TrimPrefix(k, prefix)] = p.Base.Digest
		return nil
	})
	return out, err
}

// upgradedBase says why resource res, whose task was pinned to the base
// digest was, makes its plan stale: its base now is another one. digests
// keeps each resource's digest now, read once. A resource gone says
// nothing here (its removal does, or the runner).
func upgradedBase(tx *store.Tx, digests map[string]string, res, was string) (string, error) {
	now, ok := digests[res]
	if !ok {
		raw, err := tx.Peek(store.Resources, res)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		var r struct {
			Base struct {
				Digest string `json:"digest"`
			} `json:"base"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return "", fmt.Errorf("decode resource %s: %w", res, err)
		}
		now = r.Base.Digest
		digests[res] = now
	}
	if now == was {
		return "", nil
	}
	return fmt.Sprintf("base of %s was upgraded after the plan (%s → %s)", res, bases.Short(was), bases.Short(now)), nil
}
