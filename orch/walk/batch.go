package walk

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// batch is a set of tasks of one Group run by one RunBatch call: one
// running unit, holding the union of its members' limits.
type batch struct {
	members []int32   // ranks, heaviest first
	lims    []int32   // the union of the members' limits, each once
	outs    []Outcome // RunBatch's outcomes, one per member, set by the batch's goroutine
}

// buildGroups numbers the groups that may batch, when RunBatch is set: a
// Group two tasks or more share, neither Inline. Walks without one keep
// groupOf nil and pay nothing for batching.
func (wk *walk) buildGroups() {
	if wk.w.RunBatch == nil {
		return
	}
	size := map[string]int{}
	for _, t := range wk.tasks {
		if t.Group != "" && !t.Inline {
			size[t.Group]++
		}
	}
	index := map[string]int32{}
	for k, t := range wk.tasks {
		if t.Group == "" || t.Inline || size[t.Group] < 2 {
			continue
		}
		if wk.groupOf == nil {
			wk.groupOf = make([]int32, len(wk.tasks))
			for i := range wk.groupOf {
				wk.groupOf[i] = -1
			}
		}
		g, ok := index[t.Group]
		if !ok {
			g = int32(len(wk.groups))
			index[t.Group] = g
			wk.groups = append(wk.groups, nil)
		}
		wk.groupOf[k] = g
	}
	if wk.groupOf != nil {
		wk.taken = make([]bool, len(wk.tasks))
		wk.limStamp = make([]uint32, len(wk.limits))
	}
}

// queueGroup makes task k, just decided to run, a candidate for its
// group's batches. A candidate is waiting, in the ready heap or parked on
// a limit, for as long as it is PENDING and not taken.
func (wk *walk) queueGroup(k int32) {
	if g := wk.groupOf[k]; g >= 0 {
		wk.groups[g].push(k)
	}
}

// isTaken reports whether task k left the heap it waits in for a batch:
// its entries there are stale and skipped.
func (wk *walk) isTaken(k int32) bool { return wk.taken != nil && wk.taken[k] }

// wake moves the heaviest task parked on lim, that is still waiting, to
// the ready heap.
func (wk *walk) wake(lim *limit) {
	for len(lim.parked) > 0 {
		if k := lim.parked.pop(); !wk.isTaken(k) {
			wk.ready.push(k)
			return
		}
	}
}

// startGroup starts task k of a group, whose limits are free, with the
// other tasks of its group that can join it, as one batch; false means
// the walk is aborting. Each member begins as any task does, and one that
// Begin ends drops out; a batch left with one member runs as a plain task.
func (wk *walk) startGroup(k int32) bool {
	gathered := wk.gather(k)
	members := make([]int32, 0, len(gathered))
	for _, m := range gathered {
		wk.states[m] = State{Status: StatusInProgress, Start: wk.now()}
		end, ok := wk.begin(m)
		if !ok {
			return false
		}
		if end.Status != "" {
			if wk.finish(m, end); wk.err != nil {
				return false
			}
			continue
		}
		members = append(members, m)
	}
	switch len(members) {
	case 0:
	case 1:
		m := members[0]
		for _, l := range wk.limOf[wk.limOff[m]:wk.limOff[m+1]] {
			wk.limits[l].used++
		}
		wk.running++
		wk.launch(m)
	default:
		wk.launchBatch(members)
	}
	// A member taken from the ready heap may have been put there by a
	// limit that freed a unit the batch did not use (the batch held that
	// limit already, or the member dropped out): hand that wake-up on, as
	// startReady does for a task it parks.
	for _, m := range gathered {
		for _, l := range wk.limOf[wk.limOff[m]:wk.limOff[m+1]] {
			if lim := &wk.limits[l]; lim.used < lim.capacity {
				wk.wake(lim)
			}
		}
	}
	return true
}

// gather takes task k and, heaviest first, the waiting tasks of its group
// whose limits the batch can hold besides k's: each limit the batch holds
// already, or one with a free unit (taken once for the whole batch). It
// stops at the smallest GroupMax of the members. The tasks taken, k among
// them, are marked so that the heaps they wait in skip them; they are
// returned heaviest first.
func (wk *walk) gather(k int32) []int32 {
	wk.taken[k] = true
	members := []int32{k}
	bound := wk.tasks[k].GroupMax
	if bound <= 0 {
		bound = len(wk.tasks)
	}
	if bound < 2 {
		return members
	}
	wk.stamp++
	wk.stampLimits(k)
	h := &wk.groups[wk.groupOf[k]]
	var aside []int32 // candidates that cannot join now, still waiting
	for len(members) < bound && len(*h) > 0 {
		c := h.pop()
		if wk.taken[c] || wk.states[c].Status != StatusPending {
			continue // started, finished or taken since it was queued
		}
		gm := wk.tasks[c].GroupMax
		if (gm > 0 && gm <= len(members)) || !wk.fits(c) {
			aside = append(aside, c)
			continue
		}
		if gm > 0 {
			bound = min(bound, gm)
		}
		wk.taken[c] = true
		wk.stampLimits(c)
		members = append(members, c)
	}
	for _, c := range aside {
		h.push(c)
	}
	slices.Sort(members)
	return members
}

// fits reports whether task c's limits can be added to the batch being
// gathered: each one the batch holds already (stamped), or has a free unit.
func (wk *walk) fits(c int32) bool {
	for _, l := range wk.limOf[wk.limOff[c]:wk.limOff[c+1]] {
		if lim := &wk.limits[l]; wk.limStamp[l] != wk.stamp && lim.used >= lim.capacity {
			return false
		}
	}
	return true
}

// stampLimits marks task k's limits as held by the batch being gathered.
func (wk *walk) stampLimits(k int32) {
	for _, l := range wk.limOf[wk.limOff[k]:wk.limOff[k+1]] {
		wk.limStamp[l] = wk.stamp
	}
}

// launchBatch takes one unit of each distinct limit of members, counts
// them as one running task and calls RunBatch on a goroutine of its own.
func (wk *walk) launchBatch(members []int32) {
	b := &batch{members: members}
	wk.stamp++
	sync := false
	tasks := make([]*Task, len(members))
	for i, m := range members {
		for _, l := range wk.limOf[wk.limOff[m]:wk.limOff[m+1]] {
			if wk.limStamp[l] != wk.stamp {
				wk.limStamp[l] = wk.stamp
				wk.limits[l].used++
				b.lims = append(b.lims, l)
			}
		}
		t := wk.tasks[m]
		tasks[i] = t
		sync = sync || len(t.In) > 0 || len(t.Earlier) > 0
	}
	wk.running++
	if sync && wk.w.Sync != nil {
		wk.w.Sync()
	}
	run, ctx, done := wk.w.RunBatch, wk.runCtx, wk.done
	go func() {
		b.outs = runBatch(ctx, run, tasks)
		done <- ran{rank: members[0], b: b}
	}()
}

// runBatch calls run, turning a panic, or a result of the wrong length,
// into the failure of every member: each member's outcome must be its own.
func runBatch(ctx context.Context, run func(context.Context, []*Task) []Outcome, tasks []*Task) (outs []Outcome) {
	fail := func(err error) []Outcome {
		outs := make([]Outcome, len(tasks))
		for i := range outs {
			outs[i] = Outcome{Err: err, Attempts: 1}
		}
		return outs
	}
	defer func() {
		if v := recover(); v != nil {
			outs = fail(fmt.Errorf("%w: batch of %s: %v", ErrTaskPanicked, batchIDs(tasks), v))
		}
	}()
	outs = run(ctx, tasks)
	if len(outs) != len(tasks) {
		return fail(fmt.Errorf("walk: RunBatch returned %d outcomes for the batch of %d tasks %s: want one per task", len(outs), len(tasks), batchIDs(tasks)))
	}
	return outs
}

// batchIDs names a batch's tasks in errors.
func batchIDs(tasks []*Task) string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return strings.Join(ids, ", ")
}

// releaseBatch returns the limits of a batch whose RunBatch returned.
func (wk *walk) releaseBatch(b *batch) {
	wk.running--
	for _, l := range b.lims {
		lim := &wk.limits[l]
		lim.used--
		wk.wake(lim)
	}
}

// completeBatch returns a finished batch's limits and records each
// member's final state, as complete does for a task. After a failing
// Persist the remaining members get theirs in memory only.
func (wk *walk) completeBatch(b *batch) {
	wk.releaseBatch(b)
	for i, m := range b.members {
		st := FinalState(wk.states[m], b.outs[i])
		if wk.err != nil {
			st.End = wk.now()
			wk.states[m] = st
			continue
		}
		wk.finish(m, st)
	}
}

// endInMemory records the outcome of r, after an abort, without persisting it.
func (wk *walk) endInMemory(r ran) {
	if r.b == nil {
		st := FinalState(wk.states[r.rank], r.outcome)
		st.End = wk.now()
		wk.states[r.rank] = st
		return
	}
	for i, m := range r.b.members {
		st := FinalState(wk.states[m], r.b.outs[i])
		st.End = wk.now()
		wk.states[m] = st
	}
}
