package events

import (
	"sort"

	"github.com/solarops/solar/store"
)

// DefaultRules returns the dependency rules a connection from emitter to
// receiver implies (SPEC section 4): the receiver runs and updates after the
// emitter, and is removed before it. A rule is left out when either base
// lacks the action, since it could never order anything.
func DefaultRules(cat Catalog, emitter, receiver string) []Rule {
	ea, _ := cat.Actions(emitter)
	ra, _ := cat.Actions(receiver)
	has := func(list []string, a string) bool {
		for _, x := range list {
			if x == a {
				return true
			}
		}
		return false
	}
	var out []Rule
	for _, p := range []struct {
		from, to string
		action   string
	}{{emitter, receiver, "run"}, {emitter, receiver, "update"}, {receiver, emitter, "remove"}} {
		if has(ea, p.action) && has(ra, p.action) {
			out = append(out, Rule{Kind: After, Emitter: Ref{p.from, p.action}, Subscriber: Ref{p.to, p.action}})
		}
	}
	return out
}

// Pair is an emitter and a receiver that were connected.
type Pair struct{ Emitter, Receiver string }

// AddDefaults adds the default rules of the given connections that are not
// stored yet, in one batch (one sorted write, which matters for ten
// thousand connections). It returns for each pair the canonical texts of
// the rules it added (the rules that connection owns), and the rules it
// left out because they would close a cycle of after rules, which would
// make every plan with both actions fail.
func AddDefaults(tx *store.Tx, cat Catalog, pairs ...Pair) (owned [][]string, skipped []string, err error) {
	var (
		cands []Rule
		of    []int // pair index of each candidate
	)
	seen := map[Rule]bool{}
	for i, p := range pairs {
		for _, r := range DefaultRules(cat, p.Emitter, p.Receiver) {
			if !seen[r] && !Has(tx, r) {
				seen[r] = true
				cands = append(cands, r)
				of = append(of, i)
			}
		}
	}
	owned = make([][]string, len(pairs))
	if len(cands) == 0 {
		return owned, nil, nil
	}
	// One strongly-connected-components pass over the stored after rules
	// plus the candidates, rather than a search per rule: a candidate whose
	// ends fall in one component lies on a cycle and is left out.
	g, err := afterGraph(tx)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range cands {
		g[r.Emitter] = append(g[r.Emitter], r.Subscriber)
	}
	comp := components(g)
	var fresh []Rule
	for k, r := range cands {
		if ce, ok := comp[r.Emitter]; ok && ce == comp[r.Subscriber] {
			skipped = append(skipped, r.String())
			continue
		}
		fresh = append(fresh, r)
		owned[of[k]] = append(owned[of[k]], r.String())
	}
	if _, err := Add(tx, cat, fresh...); err != nil {
		return nil, nil, err
	}
	return owned, skipped, nil
}

// afterGraph returns the stored after rules as adjacency lists.
func afterGraph(tx *store.Tx) (map[Ref][]Ref, error) {
	rules, err := List(tx)
	if err != nil {
		return nil, err
	}
	g := map[Ref][]Ref{}
	for _, r := range rules {
		if r.Kind == After {
			g[r.Emitter] = append(g[r.Emitter], r.Subscriber)
		}
	}
	return g, nil
}

// components numbers the strongly connected components of g (Tarjan's
// algorithm, iterative so that long chains cannot overflow the stack).
func components(g map[Ref][]Ref) map[Ref]int {
	index := map[Ref]int{}
	low := map[Ref]int{}
	onStack := map[Ref]bool{}
	comp := map[Ref]int{}
	var stack []Ref
	next, ncomp := 0, 0
	type frame struct {
		v Ref
		i int
	}
	// Visit in a fixed order so numbering is deterministic.
	var roots []Ref
	for v := range g {
		roots = append(roots, v)
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].String() < roots[j].String() })
	for _, root := range roots {
		if _, done := index[root]; done {
			continue
		}
		work := []frame{{v: root}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(work) > 0 {
			f := &work[len(work)-1]
			if f.i < len(g[f.v]) {
				w := g[f.v][f.i]
				f.i++
				if _, seen := index[w]; !seen {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					work = append(work, frame{v: w})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			work = work[:len(work)-1]
			if len(work) > 0 {
				if p := work[len(work)-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp
}
