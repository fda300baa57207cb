package orch

import (
	"sort"

	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// PlannedValue is one input of a task as its plan recorded it (Pin).
type PlannedValue struct {
	Name string
	// Value is the planned value; nil is unset.
	Value any
	// Sensitive values are masked wherever solar shows them.
	Sensitive bool
	// Later names the earlier task of the plan whose outputs give the
	// value, known only when that task runs; "" for a value known now.
	Later string
}

// PlannedTask is what a task of a pinned plan was reviewed with: its base
// and the values it runs with (Pin), ready to show.
type PlannedTask struct {
	Base BaseRef
	// Inputs holds every input of the base, sorted by name.
	Inputs []PlannedValue
	// NodeName is the node the task runs on ("" on this machine), Node its
	// pinned transport inputs, sorted by name.
	NodeName string
	Node     []PlannedValue
}

// planned returns what task id of a pinned plan was reviewed with, and its
// diff as the plan recorded it, marked sensitive by the pin as well as by
// the entry. It returns nil for a task without a pin (its resource was
// gone when the plan was made).
func planned(p *Pin, nodeSens func(node string) map[string]bool) (*PlannedTask, []staging.Change) {
	if p == nil {
		return nil, nil
	}
	sens := make(map[string]bool, len(p.Sensitive))
	for _, k := range p.Sensitive {
		sens[k] = true
	}
	t := &PlannedTask{Base: p.Base, Inputs: make([]PlannedValue, 0, len(p.Inputs))}
	for k, v := range p.Inputs {
		t.Inputs = append(t.Inputs, PlannedValue{Name: k, Value: v, Sensitive: sens[k], Later: p.Later[k]})
	}
	sortValues(t.Inputs)
	if p.Node != nil {
		t.NodeName, _ = p.Inputs[resources.LocationInput].(string)
		ns := nodeSens(t.NodeName)
		for k, v := range p.Node {
			t.Node = append(t.Node, PlannedValue{Name: k, Value: v, Sensitive: ns[k] && k != resources.SSHKeyInput})
		}
		sortValues(t.Node)
	}
	diff := make([]staging.Change, len(p.Diff))
	for i, c := range p.Diff {
		c.Sensitive = c.Sensitive || !c.Connection && sens[c.Key]
		diff[i] = c
	}
	return t, diff
}

func sortValues(vs []PlannedValue) {
	sort.Slice(vs, func(i, j int) bool { return vs[i].Name < vs[j].Name })
}

// nodeSensitivity returns a function giving the sensitive inputs of a node,
// read once per node: from the node's own pin when the plan has a task of
// it, else from the catalog. A node that is gone has every transport input
// but transport and ssh_key (a path) masked: its sensitivity is unknown.
func nodeSensitivity(tx *store.Tx, p *planner.Plan, pins map[string]*Pin) func(string) map[string]bool {
	cat := resources.NewCatalog(tx)
	byNode := map[string]map[string]bool{}
	for _, n := range p.Nodes {
		if pin := pins[n.ID]; pin != nil && byNode[n.Resource] == nil {
			if _, ok := pin.Inputs[resources.TransportInput]; ok {
				byNode[n.Resource] = setOf(pin.Sensitive)
			}
		}
	}
	return func(node string) map[string]bool {
		if s, ok := byNode[node]; ok {
			return s
		}
		s, err := cat.SensitiveInputs(node)
		if err != nil {
			s = map[string]bool{resources.IPInput: true, resources.SSHPortInput: true, resources.SSHUserInput: true}
		}
		byNode[node] = s
		return s
	}
}

func setOf(keys []string) map[string]bool {
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}

// neighbours returns, by task id, the tasks each runs after (the sources
// of its incoming edges) and before (the targets of its outgoing ones),
// each sorted and without duplicates.
func neighbours(p *planner.Plan) (after, before map[string][]string) {
	after = make(map[string][]string, len(p.Nodes))
	before = make(map[string][]string, len(p.Nodes))
	for _, e := range p.Edges {
		after[e.To] = append(after[e.To], e.From)
		before[e.From] = append(before[e.From], e.To)
	}
	for _, m := range []map[string][]string{after, before} {
		for id, ids := range m {
			sort.Strings(ids)
			m[id] = compactSorted(ids)
		}
	}
	return after, before
}

func compactSorted(ids []string) []string {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
