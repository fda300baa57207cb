package planner

import "slices"

// Reduce returns the plan as drawn with its transitive reduction: an
// after-edge u -> v is left out when a longer path from u to v exists, since
// that path orders the two already. React edges are always kept, even when
// implied: each carries an event, which is meaning and not only order.
//
// The result is for drawing only. It shares Nodes and Warnings with p, has
// its own Edges (the kept ones, in p's order), and must not be stored or
// run: a plan keeps every edge its rules made. p is not modified. A plan
// with a cycle, which Build never returns, is given back with every edge.
//
// Cost: one topological sort, then, for each node with an after-edge and
// at least two successors, a depth-first search from its successors that
// never goes past the topologically latest target of its after-edges (no
// path can come back from there). That is O(V·E) in the worst case and
// linear for chains and chains with short shortcuts; memory is O(V+E).
func Reduce(p *Plan) *Plan {
	out := &Plan{Nodes: p.Nodes, Warnings: p.Warnings, Edges: make([]Edge, 0, len(p.Edges))}
	r := newReducer(p)
	pos, ok := r.topoPositions()
	if !ok {
		out.Edges = append(out.Edges, p.Edges...)
		return out
	}
	drop := make([]bool, len(p.Edges))
	for u := range r.ids {
		r.implied(int32(u), pos, drop)
	}
	for i, e := range p.Edges {
		if !drop[i] {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// reducer holds the plan's graph by node index: the edges out of node u are
// out[start[u]:start[u+1]] (edge indices into the plan), to[e] is edge e's
// target.
type reducer struct {
	p     *Plan
	ids   []string
	start []int32
	out   []int32
	from  []int32
	to    []int32
	// mark and seen are stamped with the current search's number, so they
	// are reset in O(1) between searches.
	mark  []int32
	seen  []int32
	stamp int32
	stack []int32
	succ  []int32
}

func newReducer(p *Plan) *reducer {
	n := len(p.Nodes)
	r := &reducer{p: p, ids: make([]string, n), start: make([]int32, n+1),
		out: make([]int32, len(p.Edges)), from: make([]int32, len(p.Edges)), to: make([]int32, len(p.Edges)),
		mark: make([]int32, n), seen: make([]int32, n)}
	index := make(map[string]int32, n)
	for i, nd := range p.Nodes {
		r.ids[i] = nd.ID
		index[nd.ID] = int32(i)
	}
	for i, e := range p.Edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		if !okf || !okt {
			// An edge naming an unknown node (never in a plan from
			// Build) is left out of the graph, so it is kept as drawn.
			f, t = -1, -1
		}
		r.from[i], r.to[i] = f, t
		if f >= 0 {
			r.start[f+1]++
		}
	}
	for u := range n {
		r.start[u+1] += r.start[u]
	}
	fill := slices.Clone(r.start[:n])
	for i := range p.Edges {
		if f := r.from[i]; f >= 0 {
			r.out[fill[f]] = int32(i)
			fill[f]++
		}
	}
	r.out = r.out[:r.start[n]]
	return r
}

// topoPositions numbers the nodes in a topological order (Kahn's
// algorithm); ok is false when the graph has a cycle.
func (r *reducer) topoPositions() (pos []int32, ok bool) {
	n := len(r.ids)
	indeg := make([]int32, n)
	for _, t := range r.to {
		if t >= 0 {
			indeg[t]++
		}
	}
	queue := make([]int32, 0, n)
	for u := range n {
		if indeg[u] == 0 {
			queue = append(queue, int32(u))
		}
	}
	pos = make([]int32, n)
	for i := 0; i < len(queue); i++ {
		u := queue[i]
		pos[u] = int32(i)
		for _, e := range r.out[r.start[u]:r.start[u+1]] {
			t := r.to[e]
			if indeg[t]--; indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	return pos, len(queue) == n
}

// implied sets drop[e] for each after-edge e out of u whose target another
// successor of u reaches. Successors are visited in topological order, so a
// successor reachable from another is always met after it, already marked.
func (r *reducer) implied(u int32, pos []int32, drop []bool) {
	edges := r.out[r.start[u]:r.start[u+1]]
	if len(edges) < 2 {
		return
	}
	limit := int32(-1)
	for _, e := range edges {
		if r.p.Edges[e].Kind == EdgeAfter {
			limit = max(limit, pos[r.to[e]])
		}
	}
	if limit < 0 {
		return
	}
	r.succ = r.succ[:0]
	for _, e := range edges {
		if t := r.to[e]; pos[t] <= limit {
			r.succ = append(r.succ, t)
		}
	}
	slices.SortFunc(r.succ, func(a, b int32) int { return int(pos[a] - pos[b]) })
	r.stamp++
	for i, w := range r.succ {
		if i > 0 && w == r.succ[i-1] {
			continue // two rules joining the same pair: one target
		}
		if r.mark[w] == r.stamp {
			r.seen[w] = r.stamp
			continue
		}
		r.search(w, pos, limit)
	}
	for _, e := range edges {
		if r.p.Edges[e].Kind == EdgeAfter && r.seen[r.to[e]] == r.stamp {
			drop[e] = true
		}
	}
}

// search marks every node reachable from w (w included) whose topological
// position is at most limit.
func (r *reducer) search(w int32, pos []int32, limit int32) {
	r.mark[w] = r.stamp
	r.stack = append(r.stack[:0], w)
	for len(r.stack) > 0 {
		v := r.stack[len(r.stack)-1]
		r.stack = r.stack[:len(r.stack)-1]
		for _, e := range r.out[r.start[v]:r.start[v+1]] {
			t := r.to[e]
			if pos[t] <= limit && r.mark[t] != r.stamp {
				r.mark[t] = r.stamp
				r.stack = append(r.stack, t)
			}
		}
	}
}
