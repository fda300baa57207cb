package events

import (
	"slices"

	"github.com/solarops/solar/store"
)

// DefaultRules returns the dependency rules a connection from emitter to
// receiver implies (SPEC section 4): the receiver runs and updates after the
// emitter, and is removed before it. A rule is left out when either base
// lacks the action, since it could never order anything.
func DefaultRules(cat Catalog, emitter, receiver string) []Rule {
	return appendDefaultRules(nil, cat, emitter, receiver)
}

// defaultActions are the actions of the default rules; back says the rule
// goes from the receiver to the emitter. Each default rule thus names its
// connection: the emitter and receiver are the rule's two resources, in
// this order unless back.
var defaultActions = [...]struct {
	action string
	back   bool
}{{"run", false}, {"update", false}, {"remove", true}}

// appendDefaultRules appends DefaultRules(cat, emitter, receiver) to out.
func appendDefaultRules(out []Rule, cat Catalog, emitter, receiver string) []Rule {
	ea, _ := cat.Actions(emitter)
	ra, _ := cat.Actions(receiver)
	for _, d := range defaultActions {
		if !slices.Contains(ea, d.action) || !slices.Contains(ra, d.action) {
			continue
		}
		from, to := emitter, receiver
		if d.back {
			from, to = receiver, emitter
		}
		out = append(out, Rule{Kind: After, Emitter: Ref{from, d.action}, Subscriber: Ref{to, d.action}})
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
	// Up to three rules per pair (see DefaultRules). A default rule names
	// its connection, so two pairs give the same rule only when they are
	// the same pair: the first one owns it.
	cands := make([]Rule, 0, 3*len(pairs))
	texts := make([]string, 0, 3*len(pairs)) // of each candidate
	of := make([]int, 0, 3*len(pairs))       // pair index of each candidate
	seen := make(map[Pair]bool, len(pairs))
	known := newKnown(tx)
	var rules []Rule
	for i, p := range pairs {
		if seen[p] {
			continue
		}
		seen[p] = true
		rules = appendDefaultRules(rules[:0], cat, p.Emitter, p.Receiver)
		for _, r := range rules {
			text := r.String()
			stored, err := known.has(r, text)
			if err != nil {
				return nil, nil, err
			}
			if !stored {
				cands = append(cands, r)
				texts = append(texts, text)
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
	g, err := afterGraph(tx, len(cands))
	if err != nil {
		return nil, nil, err
	}
	ends := make([][2]int32, len(cands))
	for k, r := range cands {
		ends[k] = g.add(r.Emitter, r.Subscriber)
	}
	comp := g.components()
	fresh := make([]Rule, 0, len(cands))
	freshTexts := make([]string, 0, len(cands))
	freshOf := make([]int, 0, len(cands))
	for k, r := range cands {
		if comp[ends[k][0]] == comp[ends[k][1]] {
			skipped = append(skipped, texts[k])
			continue
		}
		fresh = append(fresh, r)
		freshTexts = append(freshTexts, texts[k])
		freshOf = append(freshOf, of[k])
	}
	// The texts a pair owns are a run of freshTexts (candidates come pair
	// by pair), shared rather than copied, capped so that appending to one
	// cannot overwrite the next.
	for lo := 0; lo < len(freshOf); {
		hi := lo + 1
		for hi < len(freshOf) && freshOf[hi] == freshOf[lo] {
			hi++
		}
		owned[freshOf[lo]] = freshTexts[lo:hi:hi]
		lo = hi
	}
	if _, err := addKnown(tx, cat, known, fresh, freshTexts); err != nil {
		return nil, nil, err
	}
	return owned, skipped, nil
}

// refGraph is a graph of actions numbered in the order they were added,
// so that finding its components hashes every action once rather than on
// every step (300,000 rules of a 100,000-link chain took 2 s with maps keyed
// by action). Its edges are kept in two flat lists, and each action's
// successors laid out in one array when components are sought, rather
// than grown in a list per action.
type refGraph struct {
	ids      map[Ref]int32
	from, to []int32 // edge i goes from from[i] to to[i]
}

func (g *refGraph) id(r Ref) int32 {
	if n, ok := g.ids[r]; ok {
		return n
	}
	n := int32(len(g.ids))
	g.ids[r] = n
	return n
}

// add adds the edge from -> to and returns the ids of its ends.
func (g *refGraph) add(from, to Ref) [2]int32 {
	f, t := g.id(from), g.id(to)
	g.from, g.to = append(g.from, f), append(g.to, t)
	return [2]int32{f, t}
}

// afterGraph returns the stored after rules as a graph, with room for
// extra more rules.
func afterGraph(tx *store.Tx, extra int) (*refGraph, error) {
	rules, err := List(tx)
	if err != nil {
		return nil, err
	}
	g := &refGraph{ids: make(map[Ref]int32, len(rules)+extra), from: make([]int32, 0, len(rules)+extra), to: make([]int32, 0, len(rules)+extra)}
	for _, r := range rules {
		if r.Kind == After {
			g.add(r.Emitter, r.Subscriber)
		}
	}
	return g, nil
}

// components numbers the strongly connected components of g by action id
// (Tarjan's algorithm, iterative so that long chains cannot overflow the
// stack). Actions are visited in id order, so numbering is deterministic.
func (g *refGraph) components() []int32 {
	n := len(g.ids)
	// succ[start[v]:start[v+1]] are v's successors, in the order added.
	start := make([]int32, n+1)
	for _, f := range g.from {
		start[f+1]++
	}
	for v := range n {
		start[v+1] += start[v]
	}
	succ := make([]int32, len(g.to))
	fill := slices.Clone(start[:n])
	for i, f := range g.from {
		succ[fill[f]] = g.to[i]
		fill[f]++
	}
	const unseen = -1
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unseen
	}
	var stack []int32
	var next, ncomp int32
	type frame struct {
		v int32
		i int
	}
	var work []frame
	for root := range int32(n) {
		if index[root] != unseen {
			continue
		}
		work = append(work[:0], frame{v: root})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(work) > 0 {
			f := &work[len(work)-1]
			if out := succ[start[f.v]:start[f.v+1]]; f.i < len(out) {
				w := out[f.i]
				f.i++
				if index[w] == unseen {
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
