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
		var earlier []string
		for i := 0; i < n.Instance; i++ {
			earlier = append(earlier, fmt.Sprintf("%s.%s#%d", n.Resource, n.Action, i))
		}
		tasks = append(tasks, walk.Task{ID: n.ID, Limits: limits[first:len(limits):len(limits)], Weight: n.Weight, Reactive: !n.Staged, In: in[n.ID], Earlier: earlier,
			Inline: info.noop || info.problem != ""})
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
	out, locations, err := prepareTasks(tx, rec, shell, ansible)
	if err != nil {
		return nil, err
	}
	if err := r.wireTransports(resources.NewCatalog(tx), locations, shell, ansible); err != nil {
		return nil, err
	}
	shareReactEdges(rec, out)
	return out, nil
}

// prepareTasks prepares every task of rec (prepareTask), with shell and
// ansible as their handlers, and returns them by id with the locations
// they run on, each once.
func prepareTasks(tx *store.Tx, rec *Record, shell *handler.Shell, ansible *handler.Ansible) (map[string]*taskInfo, []string, error) {
	out := make(map[string]*taskInfo, len(rec.Plan.Nodes))
	var defs inputDefsCache
	var locations []string
	seen := map[string]bool{}
	var cat *resources.Catalog
	for i, n := range rec.Plan.Nodes {
		if i%prepareChunk == 0 {
			cat = resources.NewCatalog(tx)
		}
		info := &taskInfo{node: &rec.Plan.Nodes[i]}
		out[n.ID] = info
		loc, err := prepareTask(tx, cat, info, shell, ansible, &defs)
		if err != nil {
			return nil, nil, err
		}
		// Every location decides which nodes the run connects to, even
		// that of a task which cannot run.
		if loc != "" && !seen[loc] {
			seen[loc] = true
			locations = append(locations, loc)
		}
	}
	return out, locations, nil
}

// prepareTask fills in info from its task's resource, read from cat. It
// returns the location of the resource (if its effective inputs could be
// read), even for a task that cannot run: that one only gets its problem.
func prepareTask(tx *store.Tx, cat *resources.Catalog, info *taskInfo, shell *handler.Shell, ansible *handler.Ansible, defs *inputDefsCache) (string, error) {
	n := info.node
	res, err := cat.Get(n.Resource)
	if err != nil {
		info.problem = fmt.Sprintf("resource %s no longer exists", n.Resource)
		return "", nil
	}
	eff, effErr := cat.Effective(n.Resource)
	var loc string
	if effErr == nil {
		loc, _ = eff[resources.LocationInput].(string)
	}
	script, ok := res.Base.Actions[n.Action]
	if !ok {
		info.problem = fmt.Sprintf("base %s has no action %q", res.Base.Name, n.Action)
		return loc, nil
	}
	// The handlers are completed once every location is known
	// (wireTransports): they are pointers, shared by every task.
	h, err := handler.ByName(res.Base.Handler, shell, ansible)
	if err != nil {
		info.problem = err.Error()
		return loc, nil
	}
	if effErr != nil {
		return "", effErr
	}
	info.location = loc
	info.handler, info.noop = h, res.Base.Handler == "noop"
	info.checks = res.Base.Checks(n.Action)
	info.baseDir, info.script = res.Base.Dir, script
	m := res.EffectiveMeta()
	if m.Retry != nil {
		info.retry = *m.Retry
	}
	if m.Delay != nil {
		info.delay = time.Duration(*m.Delay)
	}
	if m.Timeout != nil {
		info.timeout = time.Duration(*m.Timeout)
	}
	info.semaList = m.Sema
	info.inputDefs = defs.of(&res.Base)
	// Sensitivity follows the value: an input fed by a sensitive one
	// is masked in logs and errors too.
	if info.sensitive, err = cat.SensitiveInputs(n.Resource); err != nil {
		return "", err
	}
	if len(info.sensitive) == 0 {
		info.sensitive = nil
	}
	if !info.noop {
		// A noop task never reads them: its commit finds what they are
		// then (a noop resource's record is 300 bytes of heap a task).
		info.inputs = eff
		// Kept for the commit after the task ran, which then need not
		// decode the record again while it is unchanged (keepResource).
		raw, err := tx.Peek(store.Resources, n.Resource)
		if err != nil {
			return "", err
		}
		info.res, info.resSum = res, maphash.Bytes(resSeed, raw)
	}
	return loc, nil
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
