package orch

import (
	"context"
	"time"

	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// completeBatch records d and every other task that ended meanwhile (see
// record).
func (fr *fleetRun) completeBatch(d fleetDone) {
	batch := []fleetDone{d}
	for more := true; more; {
		select {
		case d := <-fr.done:
			batch = append(batch, d)
		default:
			more = false
		}
	}
	fr.record(batch)
}

// retryRecord records again the tasks whose record failed (the store was
// unreachable): until it succeeds, or their claims are taken from this
// runner (then they are dropped), they stay this runner's, and its
// heartbeats keep their claims.
func (fr *fleetRun) retryRecord() {
	if len(fr.unrecorded) == 0 || time.Since(fr.lastRecord) < fleetPoll {
		return
	}
	batch := fr.unrecorded
	fr.unrecorded = nil
	fr.record(batch)
}

// record records batch in one transaction (group commit): each claim
// still held gets its final state, the commit of what it did and its
// successors' decisions; a claim fenced out is dropped and logged; a task
// the runner cancelled is given back (giveBack). A batch that cannot be
// recorded is kept for retryRecord.
func (fr *fleetRun) record(batch []fleetDone) {
	fr.lastRecord = time.Now()
	now := fr.f.Settings.Now()
	var ended, back []fleetDone
	for _, d := range batch {
		if d.t.reason() != "" || d.t.plan == nil {
			back = append(back, d)
		} else {
			ended = append(ended, d)
		}
	}
	// What attempts left to write (their logs, their processes' records)
	// goes with the batch, plan by plan.
	pending := map[*fleetPlan][]pendingWrite{}
	for _, d := range batch {
		if fp := d.t.plan; fp != nil {
			if _, ok := pending[fp]; !ok {
				pending[fp] = fp.led.take()
			}
		}
	}
	var fenced []kv.Claim
	var progress []func()
	err := fr.db.Update(func(tx *store.Tx) error {
		ftx, ok := tx.Fleet()
		if !ok {
			return ErrNoFleet
		}
		var err error
		fenced, progress, err = fr.recordIn(tx, ftx, ended, back, pending, now)
		return err
	})
	if err != nil {
		for fp, writes := range pending {
			fp.led.untake(writes)
		}
		fr.unrecorded = append(fr.unrecorded, batch...)
		fr.note("recording %d ended tasks: %v; trying again", len(batch), err)
		return
	}
	for _, d := range batch {
		if d.t.plan == nil && d.outcome.Err != nil {
			fr.note("%s of plan %s: %v; given back", d.t.c.Task, d.t.c.UID, d.outcome.Err)
		}
		fr.mu.Lock()
		delete(fr.running, d.t.c.UID+"\x00"+d.t.c.Task)
		fr.mu.Unlock()
		if d.t.plan != nil {
			d.t.plan.led.written(pending[d.t.plan])
		}
	}
	for _, c := range fenced {
		fr.note("%s of plan %s: this runner's claim (fence %d) was taken from it; its result is dropped", c.Task, c.UID, c.Fence)
	}
	for _, p := range progress {
		p()
	}
}

// endState is the final state of a task that started at st.Start and
// ended with o.
func endState(st State, o walk.Outcome, now time.Time) State {
	st = walk.FinalState(st, o)
	st.End = now
	return st
}

// recordIn is record's transaction: first which ended tasks' claims
// still hold (FleetComplete); then what the attempts left to write, but
// none of a task whose claim was taken from this runner (fenced out, or
// lost while it ran: that runner writes nothing); then each held task's
// end and its successors; then the give-backs. It returns the claims
// fenced out and the progress to tell once committed.
func (fr *fleetRun) recordIn(tx *store.Tx, ftx kv.FleetTx, ended, back []fleetDone, pending map[*fleetPlan][]pendingWrite, now time.Time) (fenced []kv.Claim, progress []func(), err error) {
	drop := map[string]bool{}
	held := make([]bool, len(ended))
	for i, d := range ended {
		if held[i], err = ftx.FleetComplete(d.t.c); err != nil {
			return nil, nil, err
		}
		if !held[i] {
			drop[d.t.c.UID+"\x00"+d.t.c.Task] = true
		}
	}
	for _, d := range back {
		if d.t.reason() == whyLost {
			drop[d.t.c.UID+"\x00"+d.t.c.Task] = true
		}
	}
	for fp, writes := range pending {
		if err := fp.led.write(tx, keptWrites(fp.rec.UID, writes, drop)); err != nil {
			return nil, nil, err
		}
	}
	if err := prefetchEnded(tx, ended); err != nil {
		return nil, nil, err
	}
	cat := resources.NewCatalog(tx)
	for i, d := range ended {
		if !held[i] {
			// Fenced out. If only the plan's epoch moved (a kill after
			// the task ended, before the heartbeat told), the claim is
			// still this runner's, and only a give-back ends it: else
			// its row stays claimed.
			if err := fr.giveBack(tx, ftx, d.t.plan, d.t.c, whyKilled, now); err != nil {
				return nil, nil, err
			}
			fenced = append(fenced, d.t.c)
			continue
		}
		st := endState(State{Status: StatusInProgress, Start: d.start}, d.outcome, now)
		if err := fr.endHeld(tx, ftx, cat, d, st, now); err != nil {
			return nil, nil, err
		}
		id := d.t.c.Task
		progress = append(progress, func() { fr.progress(id, st) })
	}
	for _, d := range back {
		if d.t.plan == nil {
			// Its plan did not load here (d.outcome says why): another
			// runner may do better.
			err = fr.unloadable(tx, ftx, d.t.c, d.outcome.Err.Error(), now)
		} else {
			err = fr.giveBack(tx, ftx, d.t.plan, d.t.c, d.t.reason(), now)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return fenced, progress, nil
}

// keptWrites are writes but those of the tasks of plan uid in drop.
func keptWrites(uid string, writes []pendingWrite, drop map[string]bool) []pendingWrite {
	if len(drop) == 0 {
		return writes
	}
	kept := make([]pendingWrite, 0, len(writes))
	for _, w := range writes {
		if w.task == "" || !drop[uid+"\x00"+w.task] {
			kept = append(kept, w)
		}
	}
	return kept
}

// endHeld records, in tx, that d's task, whose claim held, ended in st:
// its state and commit (apply), then its successors' decisions.
func (fr *fleetRun) endHeld(tx *store.Tx, ftx kv.FleetTx, cat *resources.Catalog, d fleetDone, st State, now time.Time) error {
	fp, c := d.t.plan, d.t.c
	// The task's own state first: its successors' decisions read it.
	if err := fp.led.apply(tx, cat, c.Task, st); err != nil {
		return err
	}
	next, err := fp.graph.countDown(ftx, c.UID, c.Task)
	if err != nil {
		return err
	}
	ready, err := fp.graph.release(tx, ftx, c.UID, next, now)
	if err != nil {
		return err
	}
	if ready > 1 {
		// More work than this runner may take: the others hear of it
		// now rather than at their next poll. (One notification per
		// task would serialize commits: PostgreSQL queues them under
		// one lock.)
		return tx.Notify(fleetTopic, c.UID)
	}
	return nil
}

func (fr *fleetRun) progress(id string, st State) {
	if fr.f.Settings.Progress != nil {
		fr.f.Settings.Progress(id, st)
	}
}

// giveBack returns claim c's task, which did not end on its own (why),
// in tx: ready for another claim while it has retries left, else ERROR
// as any failed task (its successors decided). A task of a killed plan
// (its epoch moved) is ERROR "killed", which resume runs again.
func (fr *fleetRun) giveBack(tx *store.Tx, ftx kv.FleetTx, fp *fleetPlan, c kv.Claim, why string, now time.Time) error {
	p, ok, err := ftx.FleetPlan(c.UID)
	if err != nil || !ok {
		return err
	}
	if why == whyKilled || p.Epoch != c.Epoch {
		c.Epoch = p.Epoch
		// Matched on owner and fence still: a claim taken from this
		// runner meanwhile is another's to end.
		if ok, err := ftx.FleetRelease(c, true); err != nil || !ok {
			return err
		}
		return PutState(tx, c.UID, c.Task, State{Status: StatusError, Err: killed, End: now})
	}
	return reclaimable(tx, ftx, fp, c, "runner "+runnerOf(c.Owner)+" stopped", now)
}

// reclaimable gives claim c's task of plan fp back to be claimed again,
// which uses one of its retries; with none left it ends ERROR with msg.
func reclaimable(tx *store.Tx, ftx kv.FleetTx, fp *fleetPlan, c kv.Claim, msg string, now time.Time) error {
	info := fp.infos[c.Task]
	if info != nil && c.Claims > info.retry {
		ok, err := ftx.FleetRelease(c, false)
		if err != nil || !ok {
			return err
		}
		if err := PutState(tx, c.UID, c.Task, State{Status: StatusError, Err: msg, Attempts: c.Claims, End: now}); err != nil {
			return err
		}
		next, err := fp.graph.countDown(ftx, c.UID, c.Task)
		if err != nil {
			return err
		}
		_, err = fp.graph.release(tx, ftx, c.UID, next, now)
		return err
	}
	ok, err := ftx.FleetRelease(c, true)
	if err != nil || !ok {
		return err
	}
	return PutState(tx, c.UID, c.Task, State{Status: StatusPending})
}

// reap gives back the claims whose lease expired on the store's clock,
// whichever runner held them. A reaped task's plan is loaded (prepared)
// outside the transaction that gives it back, which must not hold its row
// locks over preparation nor nest another transaction: a first pass that
// meets a plan this runner has not loaded changes nothing, the plans are
// loaded, and a second pass gives the claims back, those of a plan that
// does not load here as unloadable does.
func (fr *fleetRun) reap() error {
	for final := false; ; final = true {
		missing, err := fr.reapOnce(final)
		if err != nil || len(missing) == 0 || final {
			return err
		}
		for uid := range missing {
			if _, err := fr.plan(uid); err != nil {
				fr.note("plan %s of an expired claim: %v", uid, err)
			}
		}
	}
}

// reapOnce is a pass of reap: unless final, a plan this runner has not
// loaded leaves everything unchanged and is returned.
func (fr *fleetRun) reapOnce(final bool) (map[string]bool, error) {
	now := fr.f.Settings.Now()
	var reaped []kv.Claim
	var missing map[string]bool
	err := fr.db.Update(func(tx *store.Tx) error {
		reaped, missing = nil, nil
		ftx, ok := tx.Fleet()
		if !ok {
			return ErrNoFleet
		}
		claims, err := ftx.FleetReap(64)
		if err != nil {
			return err
		}
		plans := make(map[string]*fleetPlan, len(claims))
		for _, c := range claims {
			if plans[c.UID] = fr.loaded(c.UID); plans[c.UID] == nil && !final {
				if missing == nil {
					missing = map[string]bool{}
				}
				missing[c.UID] = true
			}
		}
		if len(missing) > 0 {
			return nil
		}
		for _, c := range claims {
			msg := "lease of runner " + runnerOf(c.Owner) + " expired"
			if fp := plans[c.UID]; fp != nil {
				err = reclaimable(tx, ftx, fp, c, msg, now)
			} else {
				err = fr.unloadable(tx, ftx, c, msg+"; plan "+c.UID+" does not load on runner "+fr.f.Name, now)
			}
			if err != nil {
				return err
			}
		}
		reaped = claims
		if len(reaped) > 0 {
			return tx.Notify(fleetTopic, "reaped")
		}
		return nil
	})
	if err == nil {
		for _, c := range reaped {
			fr.note("%s of plan %s: the lease of runner %s expired; it is given back", c.Task, c.UID, runnerOf(c.Owner))
		}
	}
	return missing, err
}

// loaded is the runner's copy of plan uid if it has loaded it, else nil.
func (fr *fleetRun) loaded(uid string) *fleetPlan {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.plans[uid]
}

// loadClaims is how many times a task whose plan does not load on the
// runners that claim it is claimed before it ends ERROR.
const loadClaims = 3

// unloadable gives back claim c, whose plan the runner could not load
// (msg says why): ready for another runner while it has been claimed
// fewer than loadClaims times, else ERROR msg with its successors decided
// (from the plan's graph alone, which needs no preparation). Without the
// bound a runner that cannot load a plan would claim and give back its
// task for ever. A claim of a killed plan is given back as giveBack does.
func (fr *fleetRun) unloadable(tx *store.Tx, ftx kv.FleetTx, c kv.Claim, msg string, now time.Time) error {
	if p, ok, err := ftx.FleetPlan(c.UID); err != nil || !ok || p.Epoch != c.Epoch {
		// A killed plan's claim (matched on the new epoch), or nothing.
		return fr.giveBack(tx, ftx, nil, c, whyKilled, now)
	}
	if c.Claims < loadClaims {
		if ok, err := ftx.FleetRelease(c, true); err != nil || !ok {
			return err
		}
		return PutState(tx, c.UID, c.Task, State{Status: StatusPending})
	}
	if ok, err := ftx.FleetRelease(c, false); err != nil || !ok {
		return err
	}
	if err := PutState(tx, c.UID, c.Task, State{Status: StatusError, Err: msg, Attempts: c.Claims, End: now}); err != nil {
		return err
	}
	rec, err := Load(tx, c.UID)
	if err != nil {
		return err
	}
	g := planGraph(rec)
	next, err := g.countDown(ftx, c.UID, c.Task)
	if err != nil {
		return err
	}
	_, err = g.release(tx, ftx, c.UID, next, now)
	return err
}

// heartbeat renews the runner's claims every lease/4 (at most every
// fleetPoll), kills the tasks whose claims are gone or whose plans were
// killed, and, when it could not renew before its local deadline, kills
// everything and suspends claiming until it can.
func (fr *fleetRun) heartbeat(ctx context.Context) {
	every := min(fr.lease/4, 2*fleetPoll)
	if fr.f.poll > 0 {
		every = min(every, fr.f.poll)
	}
	// Killing takes time (the grace before SIGKILL): a third of the lease
	// is left for it before the lease expires on the store's clock.
	deadline := fr.lease - fr.lease/3
	lastOK := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sent := time.Now()
		// A call that hangs (a cut link) must not outlast the deadline.
		wait := max(deadline-time.Since(lastOK), every)
		cctx, cancel := context.WithTimeout(ctx, wait)
		held, err := fr.fleet.Heartbeat(cctx, fr.owner, fr.lease)
		cancel()
		if err != nil {
			if time.Since(lastOK) >= deadline {
				fr.suspend()
			}
			continue
		}
		lastOK = sent
		fr.resume()
		fr.check(held, sent)
	}
}

// check cancels the tasks claimed before sent that held does not hold
// any more, and those whose plan's epoch moved (a kill).
func (fr *fleetRun) check(held []kv.Claim, sent time.Time) {
	by := make(map[string]kv.Claim, len(held))
	for _, c := range held {
		by[c.UID+"\x00"+c.Task] = c
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	for k, t := range fr.running {
		c, ok := by[k]
		switch {
		case !ok || c.Fence != t.c.Fence:
			if t.claimed.Before(sent) {
				t.stop(whyLost)
			}
		case c.Epoch != t.c.Epoch:
			t.stop(whyKilled)
		}
	}
	fr.findStrays(held)
}

// findStrays gives back the claims the store says this runner holds but
// it does not run (a claim whose commit was lost with its connection,
// which the runner never heard of): once a claim is seen so twice in a
// row (the first time it may be a claim the loop has not started yet). Its
// heartbeats would otherwise renew it for ever. The caller holds mu.
func (fr *fleetRun) findStrays(held []kv.Claim) {
	seen := map[int64]bool{}
	var back []kv.Claim
	for _, c := range held {
		if t := fr.running[c.UID+"\x00"+c.Task]; t != nil && t.c.Fence == c.Fence {
			continue
		}
		seen[c.Fence] = true
		if fr.strays[c.Fence] {
			back = append(back, c)
		}
	}
	fr.strays = seen
	if len(back) == 0 {
		return
	}
	go func() {
		err := fr.db.Update(func(tx *store.Tx) error {
			ftx, ok := tx.Fleet()
			if !ok {
				return ErrNoFleet
			}
			for _, c := range back {
				if _, err := ftx.FleetRelease(c, true); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			fr.note("gave back %d claims this runner held without running them", len(back))
			fr.poke()
		}
	}()
}

// suspend kills every task the runner runs (their leases are about to
// expire: another runner may claim them) and stops claiming.
func (fr *fleetRun) suspend() {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if !fr.suspended {
		fr.suspended = true
		fr.note("cannot renew this runner's leases; killing its %d tasks and claiming nothing until it can", len(fr.running))
	}
	for _, t := range fr.running {
		t.stop(whyLost)
	}
}

func (fr *fleetRun) resume() {
	fr.mu.Lock()
	was := fr.suspended
	fr.suspended = false
	fr.mu.Unlock()
	if was {
		fr.note("leases renewed again; claiming")
		fr.poke()
	}
}

// killAll kills what the runner runs (a second SIGTERM, or the caller's
// ctx), waits for it, and gives it back.
func (fr *fleetRun) killAll() error {
	fr.mu.Lock()
	n := len(fr.running) - len(fr.unrecorded)
	for _, t := range fr.running {
		t.stop(whyDrain)
	}
	fr.mu.Unlock()
	for ; n > 0; n-- {
		fr.record([]fleetDone{<-fr.done})
	}
	if len(fr.unrecorded) > 0 {
		batch := fr.unrecorded
		fr.unrecorded = nil
		fr.record(batch)
	}
	return context.Canceled
}

// settlePlan settles plan uid when its counts say nothing of it runs.
func (fr *fleetRun) settlePlan(uid string) (bool, error) {
	p, ok, err := fr.fleet.PlanState(context.Background(), uid)
	if err != nil {
		return false, err
	}
	if !ok {
		return true, nil // settled already, by another runner
	}
	if p.Claimed > 0 || p.Live && p.Waiting+p.Ready > 0 {
		return false, nil
	}
	return Settle(fr.db, uid, fr.f.Settings.Now())
}

// prefetchEnded reads at once what the commits of the batch's successful
// tasks read (ledger.apply), so that a batch costs one round trip for
// them where each task's own Prefetch would cost one each.
func prefetchEnded(tx *store.Tx, ended []fleetDone) error {
	var keys []store.Key
	for _, d := range ended {
		if d.outcome.Err != nil {
			continue
		}
		if info := d.t.plan.infos[d.t.c.Task]; info != nil {
			n := info.node
			keys = append(keys, resources.CommitKeys(n.Resource, staging.Key(n.Resource, n.Action))...)
		}
	}
	if len(keys) < 2*len(resources.CommitKeys("", "")) {
		return nil // one task: its own Prefetch does as well
	}
	return tx.Prefetch(keys...)
}
