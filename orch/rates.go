package orch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// Rate limits: a task that names a rate (meta rate, "api:10/s") or whose
// resource has a limit (meta limit and burst) takes one start from each
// before every attempt, retries included, from the store's shared rates
// (kv.Rates: every run on the store, on PostgreSQL from every machine),
// and waits as long as the rate says; a batch of n tasks takes n. The
// rates are named in the store "rate/NAME" and "limit/RESOURCE".
//
// Tasks of one plan naming one rate with different numbers all use the
// strictest of them (the longest interval, then the smallest burst:
// unifyRates), so the plan's starts obey every number it declares. Plans
// that disagree share the rate's time, each held to its own numbers.

// taskRate is one rate a task takes from.
type taskRate struct {
	key  string // the rate's name in the store
	name string // as shown: "api", or "limit of RESOURCE"
	rate resources.Rate
}

// rateNoteAfter is the shortest wait that the progress line reports.
const rateNoteAfter = 20 * time.Millisecond

// rateRecordAfter is the shortest wait that orch report sees: a longer
// one is written to the store when it begins and removed when it ends.
const rateRecordAfter = 250 * time.Millisecond

// setRates sets the rates the task takes from m, its effective metaparameters;
// a bad one (which resource create refuses) is the task's problem.
func (ti *taskInfo) setRates(m resources.Meta) {
	ti.rates = nil
	named, err := m.Rates()
	if err != nil {
		ti.problem = err.Error()
		return
	}
	for _, r := range named {
		ti.rates = append(ti.rates, taskRate{key: "rate/" + r.Name, name: r.Name, rate: r})
	}
	lim, ok, err := m.LimitRate()
	if err != nil {
		ti.problem = err.Error()
		return
	}
	if ok {
		res := ti.node.Resource
		ti.rates = append(ti.rates, taskRate{key: "limit/" + res, name: "limit of " + res, rate: lim})
	}
}

// unifyRates gives every task of infos that names a rate the strictest
// numbers the plan's tasks give it.
func unifyRates(infos map[string]*taskInfo) {
	strictest := map[string]resources.Rate{}
	for _, info := range infos {
		for _, r := range info.rates {
			if s, ok := strictest[r.key]; !ok || r.rate.Stricter(s) {
				strictest[r.key] = r.rate
			}
		}
	}
	if len(strictest) == 0 {
		return
	}
	for _, info := range infos {
		for i := range info.rates {
			info.rates[i].rate = strictest[info.rates[i].key]
		}
	}
}

// errNoRates is the error of a task that names a rate where the store's
// locks have none.
var errNoRates = errors.New("the store keeps no shared rates")

// takeRates takes n starts (one per task of a batch) of each rate of the
// task id and waits until they are due. While it waits, the progress line
// says so (Runner.Note) and, for a longer wait, orch report (a record in
// the store). A stop or a kill ends the wait: the task then did not start
// (killed, which resume runs again).
func (a *attemptRunner) takeRates(ctx context.Context, id string, info *taskInfo, n int) error {
	for _, r := range info.rates {
		if a.rates == nil {
			return fmt.Errorf("rate %s: %w", r.name, errNoRates)
		}
		wait, err := a.rates.Reserve(ctx, r.key, r.rate.Every(), r.rate.Burst, n)
		if err != nil {
			if ctx.Err() != nil {
				return errors.New(killed)
			}
			return fmt.Errorf("rate %s: %w", r.name, err)
		}
		if wait <= 0 {
			continue
		}
		if err := a.waitRate(ctx, id, r, wait); err != nil {
			return err
		}
	}
	return nil
}

// waitRate waits for one rate, saying so.
func (a *attemptRunner) waitRate(ctx context.Context, id string, r taskRate, wait time.Duration) error {
	what := "rate " + r.name
	if r.key != "rate/"+r.name {
		what = r.name // a resource's limit
	}
	if wait >= rateNoteAfter && a.r.Note != nil {
		a.r.Note(fmt.Sprintf("%s waiting for %s (%s)", id, what, wait.Round(time.Millisecond)))
	}
	recorded := wait >= rateRecordAfter && a.sdb != nil
	if recorded {
		_ = a.sdb.Update(func(tx *store.Tx) error { return tx.Put(store.Plans, rateWaitKey(a.uid, id), []byte(what)) })
		defer func() {
			_ = a.sdb.Update(func(tx *store.Tx) error { return tx.Delete(store.Plans, rateWaitKey(a.uid, id)) })
		}()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
	case <-a.stopped:
	}
	return errors.New(killed)
}

// rateWaitKey names the record of task's wait for a rate, in plan uid.
func rateWaitKey(uid, task string) string { return rateWaitPrefix(uid) + task }

// rateWaitPrefix is the prefix of the records of plan uid's waits.
func rateWaitPrefix(uid string) string { return "ratewait/" + uid + "/" }

// RateWaits returns what the tasks of plan uid wait for now, by task:
// "rate api", or "limit of RESOURCE". Only a live runner's waits are
// current: a dead one's are left behind until the plan's next run claims
// it.
func RateWaits(tx *store.Tx, uid string) (map[string]string, error) {
	out := map[string]string{}
	prefix := rateWaitPrefix(uid)
	err := tx.ForEach(store.Plans, prefix, func(k string, v []byte) error {
		out[k[len(prefix):]] = string(v)
		return nil
	})
	return out, err
}

// PlanRate is a rate the tasks of a plan take from, as orch show lists
// it: a named rate, or a resource's own limit ("limit of RESOURCE"), with
// the numbers the plan's run uses (the strictest its tasks give) and the
// tasks that take from it, in the order of Ordered.
type PlanRate struct {
	Name  string
	Rate  resources.Rate
	Tasks []string
}

// PlanRates lists the rates the tasks of rec take from, by name, from
// their resources' metaparameters now (which a run uses: they are not
// pinned). A task whose resource is gone takes none.
func PlanRates(tx *store.Tx, rec *Record) ([]PlanRate, error) {
	cat := resources.NewCatalog(tx)
	byKey := map[string]*PlanRate{}
	for _, n := range Ordered(rec.Plan) {
		res, err := cat.Get(n.Resource)
		if err != nil {
			continue
		}
		info := &taskInfo{node: &n}
		info.setRates(res.EffectiveMeta())
		for _, r := range info.rates {
			pr := byKey[r.key]
			if pr == nil {
				pr = &PlanRate{Name: r.name, Rate: r.rate}
				byKey[r.key] = pr
			} else if r.rate.Stricter(pr.Rate) {
				pr.Rate = r.rate
			}
			pr.Tasks = append(pr.Tasks, n.ID)
		}
	}
	out := make([]PlanRate, 0, len(byKey))
	for _, pr := range byKey {
		out = append(out, *pr)
	}
	slices.SortFunc(out, func(a, b PlanRate) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
