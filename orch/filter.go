package orch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/solarops/solar/planner"
)

// ErrUnknownTask means a task name given by the user is not in the plan.
var ErrUnknownTask = errors.New("no such task in the plan")

// Filter returns the tasks to keep: those reachable from starts (all when
// none) that also lead to ends (all when none). A name without "#n" means
// every instance of that action.
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
	all := map[string]bool{}
	for _, n := range p.Nodes {
		all[n.ID] = true
	}
	keep := all
	if len(starts) > 0 {
		s, err := resolve(starts)
		if err != nil {
			return nil, err
		}
		keep = reach(s, succ)
	}
	if len(ends) > 0 {
		e, err := resolve(ends)
		if err != nil {
			return nil, err
		}
		back := reach(e, pred)
		for id := range keep {
			if !back[id] {
				delete(keep, id)
			}
		}
	}
	return keep, nil
}
