package orch

import (
	"fmt"
	"strings"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/planner"
)

// ErrUnknownTask means a task name given by the user is not in the plan.
var ErrUnknownTask = invalid.New("no such task in the plan")

// Filter returns the tasks to keep. With ends, a task is kept only if it
// leads to one of them (or is one). With starts, a task is kept only if it
// is a start, or all its predecessors are kept and it has at least one
// (the original Solar's rule): a task never runs after a predecessor that
// was filtered out. A name without "#n" means every instance of that
// action.
func Filter(p *planner.Plan, starts, ends []string) (map[string]bool, error) {
	succ := map[string][]string{}
	pred := map[string][]string{}
	for _, e := range p.Edges {
		succ[e.From] = append(succ[e.From], e.To)
		pred[e.To] = append(pred[e.To], e.From)
	}
	resolve := func(names []string) ([]string, error) {
		var out []string
		for _, name := range names {
			found := false
			for _, n := range p.Nodes {
				if n.ID == name || (!strings.Contains(name, "#") && n.Resource+"."+n.Action == name) {
					out = append(out, n.ID)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("%w: %q (see solar orch show)", ErrUnknownTask, name)
			}
		}
		return out, nil
	}
	reach := func(from []string, next map[string][]string) map[string]bool {
		seen := map[string]bool{}
		stack := append([]string(nil), from...)
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[id] {
				continue
			}
			seen[id] = true
			stack = append(stack, next[id]...)
		}
		return seen
	}
	keep := map[string]bool{}
	for _, n := range p.Nodes {
		keep[n.ID] = true
	}
	if len(ends) > 0 {
		e, err := resolve(ends)
		if err != nil {
			return nil, err
		}
		keep = reach(e, pred)
	}
	if len(starts) == 0 {
		return keep, nil
	}
	s, err := resolve(starts)
	if err != nil {
		return nil, err
	}
	isStart := map[string]bool{}
	for _, id := range s {
		isStart[id] = true
	}
	// Decide in topological order (Kahn), so that every predecessor is
	// decided before its successors.
	indeg := map[string]int{}
	for _, n := range p.Nodes {
		indeg[n.ID] = len(pred[n.ID])
	}
	var queue []string
	for _, n := range p.Nodes {
		if indeg[n.ID] == 0 {
			queue = append(queue, n.ID)
		}
	}
	out := map[string]bool{}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		ok := keep[id] && (isStart[id] || len(pred[id]) > 0)
		if ok && !isStart[id] {
			for _, q := range pred[id] {
				ok = ok && out[q]
			}
		}
		if ok {
			out[id] = true
		}
		for _, x := range succ[id] {
			if indeg[x]--; indeg[x] == 0 {
				queue = append(queue, x)
			}
		}
	}
	return out, nil
}
