package orch

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"time"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// walkTasks turns a plan's nodes into the walker's tasks, each with its
// limits (taskLimits): perNode is the count of a node's limit. A bad sema
// entry fails it, with the error of the first such task in the walker's
// order (heaviest first, then by id), as when the walker parsed them.
func walkTasks(rec *Record, infos map[string]*taskInfo, perNode int) ([]walk.Task, error) {
	tasks := make([]walk.Task, 0, len(rec.Plan.Nodes))
	// Every task's incoming edges share one array, cut to size, rather
	// than lists grown one edge at a time.
	counts := make(map[string]int, len(rec.Plan.Nodes))
	for _, e := range rec.Plan.Edges {
		counts[e.To]++
	}
	all := make([]walk.InEdge, len(rec.Plan.Edges))
	in := make(map[string][]walk.InEdge, len(counts))
	for id, k := range counts {
		in[id], all = all[:0:k], all[k:]
	}
	for i := range rec.Plan.Edges {
		e := &rec.Plan.Edges[i]
		in[e.To] = append(in[e.To], walk.InEdge{From: e.From, On: triggerOf(e)})
	}
	// Their limits share one array too, with room for all of them.
	room := 0
	for _, n := range rec.Plan.Nodes {
		room += maxLimits(infos[n.ID])
	}
	limits := make([]walk.Limit, 0, room)
	var bad error
	badAt := -1
	for _, n := range rec.Plan.Nodes {
		info := infos[n.ID]
		first := len(limits)
		var err error
		if limits, err = taskLimits(limits, n.ID, n.Resource, info, perNode); err != nil {
			if badAt < 0 || n.Weight > tasks[badAt].Weight || n.Weight == tasks[badAt].Weight && n.ID < tasks[badAt].ID {
				bad, badAt = err, len(tasks)
			}
		}
		tasks = append(tasks, walk.Task{ID: n.ID, Limits: limits[first:len(limits):len(limits)], Weight: n.Weight, Reactive: !n.Staged, In: in[n.ID], Earlier: earlierOf(n),
			Inline: info.noop || info.problem != ""})
		if info.batch != nil && info.problem == "" {
			tasks[len(tasks)-1].Group, tasks[len(tasks)-1].GroupMax = info.batch.key, info.batch.max
		}
	}
	if bad != nil {
		return nil, bad
	}
	return tasks, nil
}

// prepareChunk is how many tasks share one catalog while the runner
// prepares: a catalog keeps every resource it decoded, base and all, and
// at 100,000 tasks those would all be in memory at once.
const prepareChunk = 1024

// prepare looks up every task's resource, base and metaparameters, and
// sets up how the handlers reach the nodes the tasks run on.
func (r *Runner) prepare(tx *store.Tx, rec *Record) (map[string]*taskInfo, error) {
	shell := &handler.Shell{}
	if r.Shell != nil {
		cp := *r.Shell
		shell = &cp
	}
	ansible := &handler.Ansible{TempDir: shell.TempDir, KillGrace: shell.KillGrace, Program: r.AnsiblePlaybook}
	// One prefix scan for the pins of the whole plan; nil for a plan made
	// before pins were recorded, which runs with the catalog's values.
	pins := r.pins
	if pins == nil {
		var err error
		if pins, err = Pins(tx, rec.UID); err != nil {
			return nil, err
		}
	}
	p := &preparer{tx: tx, shell: shell, ansible: ansible, pins: pins, bases: newRunBases(tx, r.cacheDir())}
	out, err := p.tasks(rec)
	if err != nil {
		return nil, err
	}
	if err := r.wireTransports(resources.NewCatalog(tx), rec, out, shell, ansible); err != nil {
		return nil, err
	}
	p.batches.splitByHandler(rec, out)
	shareReactEdges(rec, out)
	return out, nil
}

// preparer is what the preparation of a plan's tasks shares between them.
type preparer struct {
	tx      *store.Tx
	shell   *handler.Shell
	ansible *handler.Ansible
	defs    inputDefsCache
	pins    map[string]*Pin // by task id; nil for a plan made before pins
	bases   *runBases
	batches batchGroups
}

// tasks prepares every task of rec (task) and returns them by id.
func (p *preparer) tasks(rec *Record) (map[string]*taskInfo, error) {
	out := make(map[string]*taskInfo, len(rec.Plan.Nodes))
	var cat *resources.Catalog
	for i, n := range rec.Plan.Nodes {
		if i%prepareChunk == 0 {
			cat = resources.NewCatalog(p.tx)
		}
		info := &taskInfo{node: &rec.Plan.Nodes[i]}
		out[n.ID] = info
		if _, err := p.task(cat, info); err != nil {
			return nil, err
		}
	}
	unifyRates(out)
	return out, nil
}

// task fills in info from its task's pin and resource, read from cat. It
// returns the location of the task (if its inputs could be read), even for
// a task that cannot run: that one only gets its problem.
//
// A task of a pinned plan runs exactly its pin: its inputs, their
// sensitivity, its location and its base by digest are the plan's. Its
// metaparameters (retry, delay, timeout, sema) are its resource's current
// ones. A plan made before pins runs with the catalog's values, as it did.
func (p *preparer) task(cat *resources.Catalog, info *taskInfo) (string, error) {
	n := info.node
	res, err := cat.Get(n.Resource)
	if err != nil {
		info.problem = fmt.Sprintf("resource %s no longer exists", n.Resource)
		return "", nil
	}
	in, err := p.inputsOf(cat, info, res)
	if err != nil || info.problem != "" {
		return in.loc, err
	}
	base, ref := &res.Base, BaseRef{Name: res.Base.Name, Version: res.Base.Version, Digest: res.Base.Digest}
	if info.pin != nil {
		ref = info.pin.Base
		if base, info.problem = p.bases.base(res, ref); info.problem != "" {
			return in.loc, nil
		}
	}
	script, ok := base.Actions[n.Action]
	if !ok {
		info.problem = fmt.Sprintf("base %s has no action %q", base.Name, n.Action)
		return in.loc, nil
	}
	// The handlers are completed once every location is known
	// (wireTransports): they are pointers, shared by every task.
	h, err := handler.ByName(base.Handler, p.shell, p.ansible)
	if err != nil {
		info.problem = err.Error()
		return in.loc, nil
	}
	if in.err != nil {
		return "", in.err
	}
	info.location = in.loc
	info.handler, info.noop = h, base.Handler == "noop"
	if info.problem = p.baseDir(info, res, ref); info.problem != "" {
		return in.loc, nil
	}
	info.checks = base.Checks(n.Action)
	info.script = script
	if bs, ok := base.BatchScript(n.Action); ok && !info.noop {
		info.batch = p.batches.of(ref.Digest, n.Action, in.loc, bs, base.BatchMax)
	}
	info.setMeta(res.EffectiveMeta())
	info.inputDefs = p.defs.of(base)
	if info.pin != nil {
		typePin(info.pin, info.inputDefs)
	}
	if err := p.sensitivity(cat, info); err != nil {
		return "", err
	}
	if !info.noop {
		// A noop task never reads them: its commit finds what they are
		// then (a noop resource's record is 300 bytes of heap a task).
		info.inputs = in.values
		// Kept for the commit after the task ran, which then need not
		// decode the record again while it is unchanged (keepResource).
		raw, err := p.tx.Peek(store.Resources, n.Resource)
		if err != nil {
			return "", err
		}
		info.res, info.resSum = res, maphash.Bytes(resSeed, raw)
	}
	return in.loc, nil
}

// taskInputs is what a task runs with: its inputs and location, or the
// error that kept them from being read.
type taskInputs struct {
	values map[string]any
	loc    string
	err    error
}

// inputsOf returns the inputs task info runs with: its pin's, in a pinned
// plan (where it sets info.pin, or info.problem when the task has none);
// else its resource's effective values now.
func (p *preparer) inputsOf(cat *resources.Catalog, info *taskInfo, res *resources.Resource) (taskInputs, error) {
	var in taskInputs
	if p.pins != nil {
		pin := p.pins[info.node.ID]
		if pin == nil {
			info.problem = fmt.Sprintf("task %s has no pinned values in its plan (a damaged plan record): solar ch process makes a new plan", info.node.ID)
			return in, nil
		}
		info.pin = pin
		in.values = pin.Inputs
	} else {
		in.values, in.err = cat.Effective(res.Name)
	}
	if in.err == nil {
		in.loc, _ = in.values[resources.LocationInput].(string)
	}
	return in, nil
}

// baseDir sets info.baseDir to the directory of the base ref in this
// machine's base cache, and returns why the task cannot run if it cannot.
// A noop task runs no script: its base is verified, not written out.
func (p *preparer) baseDir(info *taskInfo, res *resources.Resource, ref BaseRef) string {
	if ref.Digest == "" {
		return noDigest(res)
	}
	if info.noop {
		return p.bases.get(ref.Name, ref.Digest).problem
	}
	dir, problem := p.bases.dir(ref.Name, ref.Digest)
	info.baseDir = dir
	return problem
}

// sensitivity sets the inputs of task info masked in logs and errors: its
// pin's, else its resource's now.
func (p *preparer) sensitivity(cat *resources.Catalog, info *taskInfo) error {
	if info.pin != nil {
		info.sensitive = nil
		if len(info.pin.Sensitive) > 0 {
			info.sensitive = make(map[string]bool, len(info.pin.Sensitive))
			for _, k := range info.pin.Sensitive {
				info.sensitive[k] = true
			}
		}
		return nil
	}
	// Sensitivity follows the value: an input fed by a sensitive one
	// is masked in logs and errors too.
	var err error
	if info.sensitive, err = cat.SensitiveInputs(info.node.Resource); err != nil {
		return err
	}
	if len(info.sensitive) == 0 {
		info.sensitive = nil
	}
	return nil
}

// setMeta sets the task's retries, delay, timeout and semaphores from m.
func (ti *taskInfo) setMeta(m resources.Meta) {
	if m.Retry != nil {
		ti.retry = *m.Retry
	}
	if m.Delay != nil {
		ti.delay = time.Duration(*m.Delay)
	}
	if m.Timeout != nil {
		ti.timeout = time.Duration(*m.Timeout)
	}
	ti.semaList = m.Sema
	ti.setRates(m)
}

// shareReactEdges gives every task of rec, out by id, a copy of the plan's
// react edges from it. They share one array, cut to size: grown one task
// at a time, copies of them took 30 MB at 100,000 tasks.
func shareReactEdges(rec *Record, out map[string]*taskInfo) {
	counts := map[*taskInfo]int{}
	n := 0
	for i := range rec.Plan.Edges {
		if e := &rec.Plan.Edges[i]; e.Kind == planner.EdgeReact {
			counts[out[e.From]]++
			n++
		}
	}
	all := make([]planner.Edge, n)
	for info, k := range counts {
		info.reactOut, all = all[:0:k], all[k:]
	}
	for i := range rec.Plan.Edges {
		if e := &rec.Plan.Edges[i]; e.Kind == planner.EdgeReact {
			out[e.From].reactOut = append(out[e.From].reactOut, *e)
		}
	}
}

// inputDefsCache shares the by-name index of a base's inputs between the
// tasks whose resources have the same base: every resource carries its own
// copy of its base, and an index per task cost a map per task.
type inputDefsCache struct {
	byName  map[string][]map[string]*resources.InputDef // by base name, directory and version
	byFirst map[*resources.InputDef]map[string]*resources.InputDef
}

func (c *inputDefsCache) of(b *resources.Base) map[string]*resources.InputDef {
	// Resources decoded from records carrying the same base share its
	// decoded inputs (resources.decodeResource): then the index is the
	// one made for the first of them.
	if len(b.Inputs) > 0 {
		if defs, ok := c.byFirst[&b.Inputs[0]]; ok && len(defs) == len(b.Inputs) {
			return defs
		}
	}
	key := b.Name + "\x00" + b.Dir + "\x00" + b.Version
	for _, defs := range c.byName[key] {
		if sameInputs(defs, b.Inputs) {
			return defs
		}
	}
	defs := make(map[string]*resources.InputDef, len(b.Inputs))
	for i := range b.Inputs {
		d := &b.Inputs[i]
		defs[d.Name] = d
	}
	if c.byName == nil {
		c.byName = map[string][]map[string]*resources.InputDef{}
		c.byFirst = map[*resources.InputDef]map[string]*resources.InputDef{}
	}
	c.byName[key] = append(c.byName[key], defs)
	if len(b.Inputs) > 0 {
		c.byFirst[&b.Inputs[0]] = defs
	}
	return defs
}

// sameInputs reports whether defs indexes exactly the inputs of list.
func sameInputs(defs map[string]*resources.InputDef, list []resources.InputDef) bool {
	if len(defs) != len(list) {
		return false
	}
	for i := range list {
		d, ok := defs[list[i].Name]
		if !ok || !reflect.DeepEqual(*d, list[i]) {
			return false
		}
	}
	return true
}

// typePin gives pin's values the types their schemas give them (defs):
// decoded from the plan's JSON, an int is a float64, which a script would
// see as 1e+06. They are the run's own copy: changed in place.
func typePin(pin *Pin, defs map[string]*resources.InputDef) {
	for k, v := range pin.Inputs {
		if d, ok := defs[k]; ok && v != nil && d.Schema != nil {
			if cv, err := d.Schema.Check(v); err == nil {
				pin.Inputs[k] = cv
			}
		}
	}
}
