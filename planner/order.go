package planner

import (
	"math"
	"slices"
)

// dag is a directed graph over dense int32 vertex ids, built by a
// depth-first exploration, that keeps a topological order of its explored
// vertices up to date while edges are added. It answers "would x -> y close
// a cycle?" without walking the graph in the common case. It knows nothing
// of plans: the builder keeps what an edge means in arrays indexed by the
// edge ids dag hands out.
//
// A vertex is open from its creation until the exploration leaves it, then
// closed. The open vertices form the exploration's path: each was created,
// with a tree edge from the one below it, while that one was the top. The
// order covers closed vertices only, and gives each vertex, as it closes,
// a position before every closed vertex so far (reverse postorder, which is
// topological for the edges a depth-first search finds). Edges that do not
// follow the exploration, and those added once it is over, are placed with
// Pearce and Kelly's dynamic topological sort ("A dynamic topological sort
// algorithm for directed acyclic graphs", 2006), which searches only the
// vertices positioned between the edge's ends.
//
// Adjacency lists are linked lists threaded through the edge array rather
// than a slice per vertex, so adding vertices and edges allocates nothing
// beyond the amortized growth of a few flat slices, and each list keeps
// edges in creation order.
type dag struct {
	vs   []vertex
	es   []dagEdge
	next int32 // position of the vertex closed last; positions grow downwards

	// Scratch space for searches, kept between calls so that a search does
	// not allocate. A vertex is marked when mark equals epoch.
	epoch uint32
	stack []int32
	fwd   []int32
	back  []int32
	pool  []int32
}

type vertex struct {
	ord               int32 // position in the order; unordered while open
	firstOut, lastOut int32
	firstIn, lastIn   int32
	mark              uint32
	parent            int32 // set by path: the vertex it was reached from
}

type dagEdge struct {
	from, to        int32
	nextOut, nextIn int32
	// hidden edges are in the adjacency lists but ignored by order, path
	// and sort(false): they are proposed and not yet (or never) accepted.
	hidden bool
}

const (
	none      int32 = -1
	unordered int32 = -1
)

// open adds a vertex and opens it. The caller adds the tree edge into it
// from the current top, if any, and explores it next.
func (g *dag) open() int32 {
	if len(g.vs) == 0 {
		g.next = math.MaxInt32
	}
	v := int32(len(g.vs))
	g.vs = append(g.vs, vertex{ord: unordered, firstOut: none, lastOut: none, firstIn: none, lastIn: none, parent: none})
	return v
}

// close closes v, the top open vertex. Every vertex it leads to is closed
// already, and no closed vertex leads to it, so placing it first is right.
func (g *dag) close(v int32) {
	g.next--
	g.vs[v].ord = g.next
}

// addEdge appends the edge x -> y to both adjacency lists. The caller must
// have made room for it with order.
func (g *dag) addEdge(x, y int32) int32 {
	e := int32(len(g.es))
	g.es = append(g.es, dagEdge{from: x, to: y, nextOut: none, nextIn: none})
	vx, vy := &g.vs[x], &g.vs[y]
	if vx.lastOut == none {
		vx.firstOut = e
	} else {
		g.es[vx.lastOut].nextOut = e
	}
	vx.lastOut = e
	if vy.lastIn == none {
		vy.firstIn = e
	} else {
		g.es[vy.lastIn].nextIn = e
	}
	vy.lastIn = e
	return e
}

// order reports whether the edge x -> y can be added without closing a
// cycle and, if it can, makes room for it in the order. It does not add
// the edge. x must be the top open vertex, or a closed vertex created while
// the top was open (so the top leads to it), or any vertex once all are
// closed. Then:
//
//   - y open: y is on the exploration's path, so it leads to the top and
//     through it to x: a cycle.
//   - x open, y closed: no closed vertex leads to an open one, so no cycle;
//     x is placed when it closes.
//   - both closed: when x is already before y nothing is searched.
//     Otherwise only vertices positioned between y and x can be affected:
//     those y leads to (fwd) must move after those leading to x (back), and
//     they take over the same set of positions. Open vertices have no
//     position and constrain nothing yet.
func (g *dag) order(x, y int32) bool {
	lb, ub := g.vs[y].ord, g.vs[x].ord
	switch {
	case lb == unordered:
		return false
	case ub == unordered:
		return true
	case lb > ub:
		return true
	case x == y:
		return false
	}
	g.epoch++
	g.fwd = g.fwd[:0]
	g.stack = append(g.stack[:0], y)
	g.vs[y].mark = g.epoch
	for len(g.stack) > 0 {
		n := g.stack[len(g.stack)-1]
		g.stack = g.stack[:len(g.stack)-1]
		g.fwd = append(g.fwd, n)
		for e := g.vs[n].firstOut; e != none; e = g.es[e].nextOut {
			if g.es[e].hidden {
				continue
			}
			w := g.es[e].to
			if w == x {
				return false
			}
			if vw := &g.vs[w]; vw.mark != g.epoch && vw.ord < ub {
				vw.mark = g.epoch
				g.stack = append(g.stack, w)
			}
		}
	}
	// No cycle, so fwd and back are disjoint and may share the epoch.
	g.back = g.back[:0]
	g.stack = append(g.stack, x)
	g.vs[x].mark = g.epoch
	for len(g.stack) > 0 {
		n := g.stack[len(g.stack)-1]
		g.stack = g.stack[:len(g.stack)-1]
		g.back = append(g.back, n)
		for e := g.vs[n].firstIn; e != none; e = g.es[e].nextIn {
			if g.es[e].hidden {
				continue
			}
			w := g.es[e].from
			if vw := &g.vs[w]; vw.mark != g.epoch && vw.ord > lb {
				vw.mark = g.epoch
				g.stack = append(g.stack, w)
			}
		}
	}
	byOrd := func(a, b int32) int { return int(g.vs[a].ord) - int(g.vs[b].ord) }
	slices.SortFunc(g.back, byOrd)
	slices.SortFunc(g.fwd, byOrd)
	g.pool = g.pool[:0]
	for _, n := range g.back {
		g.pool = append(g.pool, g.vs[n].ord)
	}
	for _, n := range g.fwd {
		g.pool = append(g.pool, g.vs[n].ord)
	}
	slices.Sort(g.pool)
	i := 0
	for _, n := range g.back {
		g.vs[n].ord = g.pool[i]
		i++
	}
	for _, n := range g.fwd {
		g.vs[n].ord = g.pool[i]
		i++
	}
	return true
}

// topo returns all vertices in topological order. All must be closed.
func (g *dag) topo() []int32 {
	out := make([]int32, len(g.vs))
	for v := range g.vs {
		out[g.vs[v].ord-g.next] = int32(v)
	}
	return out
}

// sort computes a topological order from scratch (Kahn's algorithm), over
// all edges or only the visible ones, and reports false if those edges
// form a cycle. It makes a batch of edges cheaper to check than order
// would, one at a time, when they run against the current order.
func (g *dag) sort(withHidden bool) ([]int32, bool) {
	indeg := make([]int32, len(g.vs))
	for _, e := range g.es {
		if withHidden || !e.hidden {
			indeg[e.to]++
		}
	}
	out := make([]int32, 0, len(g.vs))
	for v, d := range indeg {
		if d == 0 {
			out = append(out, int32(v))
		}
	}
	for head := 0; head < len(out); head++ {
		for e := g.vs[out[head]].firstOut; e != none; e = g.es[e].nextOut {
			if withHidden || !g.es[e].hidden {
				w := g.es[e].to
				if indeg[w]--; indeg[w] == 0 {
					out = append(out, w)
				}
			}
		}
	}
	return out, len(out) == len(g.vs)
}

// reorder replaces the order by topo, a topological order of all vertices,
// and closes any that were open.
func (g *dag) reorder(topo []int32) {
	g.next = 0
	for i, v := range topo {
		g.vs[v].ord = int32(i)
	}
}

// components returns the strongly connected component of each vertex over
// all edges, hidden ones included (Kosaraju's algorithm, iterative since
// paths can be as long as the graph). An edge between two components lies
// on no cycle, whatever other edges are kept.
func (g *dag) components() []int32 {
	n := len(g.vs)
	type cursor struct{ v, e int32 }
	seen := make([]bool, n)
	post := make([]int32, 0, n)
	var walk []cursor
	for s := range int32(n) {
		if seen[s] {
			continue
		}
		seen[s] = true
		walk = append(walk, cursor{s, g.vs[s].firstOut})
		for len(walk) > 0 {
			top := &walk[len(walk)-1]
			if top.e == none {
				post = append(post, top.v)
				walk = walk[:len(walk)-1]
				continue
			}
			w := g.es[top.e].to
			top.e = g.es[top.e].nextOut
			if !seen[w] {
				seen[w] = true
				walk = append(walk, cursor{w, g.vs[w].firstOut})
			}
		}
	}
	comp := make([]int32, n)
	for v := range comp {
		comp[v] = none
	}
	c := int32(0)
	stack := g.stack[:0]
	for i := n - 1; i >= 0; i-- {
		s := post[i]
		if comp[s] != none {
			continue
		}
		comp[s] = c
		stack = append(stack, s)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for e := g.vs[v].firstIn; e != none; e = g.es[e].nextIn {
				if w := g.es[e].from; comp[w] == none {
					comp[w] = c
					stack = append(stack, w)
				}
			}
		}
		c++
	}
	g.stack = stack[:0]
	return comp
}

// path returns a shortest path from y to x (both included) that uses only
// edges accepted by keep (all edges when keep is nil), or nil if there is
// none. It is meant for the rare edge that order refused once all vertices
// are closed, to say which cycle it would have closed: since the order is
// topological, such a path only visits vertices positioned between y and
// x, which bounds the search.
func (g *dag) path(y, x int32, keep func(e int32) bool) []int32 {
	if y == x {
		return []int32{x}
	}
	ub := g.vs[x].ord
	g.epoch++
	queue := append(g.stack[:0], y)
	g.vs[y].mark = g.epoch
	g.vs[y].parent = none
	for head := 0; head < len(queue); head++ {
		n := queue[head]
		for e := g.vs[n].firstOut; e != none; e = g.es[e].nextOut {
			if g.es[e].hidden || keep != nil && !keep(e) {
				continue
			}
			w := g.es[e].to
			vw := &g.vs[w]
			if vw.mark == g.epoch || vw.ord > ub {
				continue
			}
			vw.mark = g.epoch
			vw.parent = n
			if w == x {
				g.stack = queue[:0]
				var p []int32
				for v := x; v != none; v = g.vs[v].parent {
					p = append(p, v)
				}
				slices.Reverse(p)
				return p
			}
			queue = append(queue, w)
		}
	}
	g.stack = queue[:0]
	return nil
}
