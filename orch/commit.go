package orch

import (
	"errors"
	"fmt"
	"hash/maphash"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// resSeed seeds the digests of resource records that tell the runner
// whether a resource it decoded is still what the store holds.
var resSeed = maphash.MakeSeed()

// keepResource lets cat reuse the resource that prepare decoded for a task,
// if its record has not changed since (another command may have changed it
// while the store was closed, and the run's own outputs change it): the
// staging commit then need not decode it again. The task's copy is
// dropped either way; each task commits once.
func (l *ledger) keepResource(cat *resources.Catalog, tx *store.Tx, info *taskInfo) {
	res := info.res
	if res == nil {
		return
	}
	info.res = nil
	raw, err := tx.Peek(store.Resources, res.Name)
	if err == nil && maphash.Bytes(resSeed, raw) == info.resSum {
		cat.Keep(res)
	}
}

// apply writes one state change and, for a task that succeeded, its
// consequences: outputs sent to the resource (and on to its receivers),
// the commit of its staged entry, and refreshes for the react subscribers
// its change triggers. A task marked NOOP (orch noop) did not run: it has
// none.
func (l *ledger) apply(tx *store.Tx, cat *resources.Catalog, id string, st State) error {
	if st.Status == StatusSkipped {
		// Another command's skip (discarded, filtered) or NOOP mark
		// outranks the walker's skip (stopped, upstream failed): resume
		// must not run it.
		if raw, err := tx.Peek(store.Plans, taskKey(l.uid, id)); err == nil {
			if old, err := decodeState(raw); err == nil && (old.Status == StatusSkipped || MarkedNoop(old)) {
				return nil
			}
		}
	}
	if err := PutState(tx, l.uid, id, st); err != nil {
		return err
	}
	if st.Status.Finished() && l.mayHaveProcs(id) {
		if err := tx.Delete(store.Plans, procsKey(l.uid, id)); err != nil {
			return err
		}
	}
	if st.Status != StatusSuccess && st.Status != StatusNoop || MarkedNoop(st) {
		return nil
	}
	info := l.infos[id]
	n := info.node
	// What the commit below reads, at once where reads cost a round trip.
	if err := tx.Prefetch(resources.CommitKeys(n.Resource, staging.Key(n.Resource, n.Action))...); err != nil {
		return err
	}
	cat.Reset()
	l.keepResource(cat, tx, info)
	stg := staging.New(cat, l.now)
	stg.Plan, stg.Actor, stg.Host = l.uid, l.actor, l.host
	l.mu.Lock()
	outs, ran := l.outputs[id], l.ran[id]
	l.mu.Unlock()
	if len(outs) > 0 && cat.Exists(n.Resource) {
		changed, err := l.sendOutputs(cat, info, outs, ran)
		if err != nil {
			return fmt.Errorf("task %s outputs: %w", id, err)
		}
		if changed {
			if err := l.touchReceivers(cat, stg, info, id); err != nil {
				return err
			}
		}
	}
	// The action ran with the resource's current inputs, so whatever is
	// staged for it (its own entry, a refresh left earlier, or an entry
	// outside the selection that a rule pulled in) is done.
	// Nothing staged (ErrNoEntry, before it writes anything) is fine.
	key := staging.Key(n.Resource, n.Action)
	if info.noop && cat.Exists(n.Resource) {
		var err error
		if ran, err = l.noopRan(cat, info); err != nil {
			return err
		}
	}
	if _, err := stg.CommitRan(key, l.uid, id, ran, info.sensitive); err != nil && !errors.Is(err, staging.ErrNoEntry) {
		return fmt.Errorf("commit %s: %w", key, err)
	}
	if st.Status == StatusSuccess {
		return l.leaveRefreshes(tx, stg, info)
	}
	return nil
}

// touchReceivers stages a refresh of the resources downstream of task
// info's, whose outputs changed its inputs, and in a plan made before pins
// reads their effective inputs again for the tasks after it (a pinned
// plan's tasks get the outputs from sent instead).
func (l *ledger) touchReceivers(cat *resources.Catalog, stg *staging.Stager, info *taskInfo, id string) error {
	down, err := cat.Downstream(info.node.Resource)
	if err != nil {
		return err
	}
	if _, err := stg.Touch("outputs of "+id, down...); err != nil {
		return err
	}
	if info.pin != nil {
		return nil
	}
	for _, name := range append([]string{info.node.Resource}, down...) {
		eff, err := cat.Effective(name)
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.effective[name] = eff
		l.mu.Unlock()
	}
	return nil
}

// noopRan returns the inputs noop task info ran with, which were not kept
// in memory for it (prepare): its pinned ones with the outputs of the run,
// or in a plan made before pins its resource's effective inputs now.
func (l *ledger) noopRan(cat *resources.Catalog, info *taskInfo) (map[string]any, error) {
	if info.pin != nil {
		return l.inputs(info), nil
	}
	eff, err := cat.Effective(info.node.Resource)
	if err != nil {
		return nil, err
	}
	return info.inputsFrom(eff), nil
}

const refreshCause = "refresh"

// leaveRefreshes stages, for every react subscriber this change triggers,
// a refresh entry. It is committed when the subscriber succeeds; if the
// subscriber never runs (failure upstream, stop, crash), it stays staged and
// is in the next plan: nothing is forgotten.
func (l *ledger) leaveRefreshes(tx *store.Tx, stg *staging.Stager, info *taskInfo) error {
	// Subscribers hang after the action's last instance, so the edges of
	// every instance of this action count.
	var out []planner.Edge
	for i := 0; ; i++ {
		other, ok := l.infos[fmt.Sprintf("%s.%s#%d", info.node.Resource, info.node.Action, i)]
		if !ok {
			break
		}
		out = append(out, other.reactOut...)
	}
	for _, e := range out {
		if !e.Event.Matches(events.ResultChanged) {
			continue
		}
		to := l.infos[e.To]
		if to.node.Staged || to.problem != "" {
			continue
		}
		if _, err := stg.StageRefresh(to.node.Resource, to.node.Action, refreshCause+": "+info.node.ID+" changed"); err != nil {
			return err
		}
	}
	return nil
}

// sendOutputs writes a task's outputs into its resource's inputs of those
// names. It reports whether any effective value changed.
func (l *ledger) sendOutputs(cat *resources.Catalog, info *taskInfo, outs, ran map[string]any) (bool, error) {
	res, err := cat.Get(info.node.Resource)
	if err != nil {
		return false, err
	}
	cp := *res
	cp.Inputs = make(map[string]any, len(res.Inputs))
	for k, v := range res.Inputs {
		cp.Inputs[k] = v
	}
	changed := false
	for k, v := range outs {
		d, ok := info.inputDefs[k]
		if !ok {
			continue // not an input: nothing to send
		}
		cv, err := d.Schema.Check(v)
		if err != nil {
			return false, fmt.Errorf("output %q does not fit input %s (%s)", k, k, d.Schema)
		}
		if old, ok := cp.Inputs[k]; !ok || !schema.Equal(old, cv) {
			changed = true
		}
		cp.Inputs[k] = cv
		if info.pin != nil {
			l.keepSent(info.node.Resource, k, cv)
		}
		if ran != nil {
			ran[k] = cv
		}
	}
	if !changed {
		return false, nil
	}
	return true, cat.Put(&cp)
}
