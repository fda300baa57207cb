package planner

import "slices"

// dag is a directed graph over dense int32 vertex ids that keeps a
// topological order of its vertices up to date while edges are added
// (Pearce and Kelly, "A dynamic topological sort algorithm for directed
// acyclic graphs", 2006). It knows nothing of plans: the builder keeps what
// an edge means in arrays indexed by the edge ids dag hands out.
//
// Adjacency lists are linked lists threaded through the edge array rather
// than a slice per vertex, so adding vertices and edges allocates nothing
// beyond the amortized growth of a few flat slices, and each list keeps
// edges in creation order.
type dag struct {
	vs []vertex
	es []dagEdge

	// Scratch space for searches, kept between calls so that a search does
	// not allocate. A vertex is marked when mark equals epoch.
	epoch uint32
	stack []int32
	fwd   []int32
	back  []int32
	pool  []int32
}

type vertex struct {
	// ord is the vertex's position in the topological order. The values of
	// all vertices are always exactly 0..len(vs)-1, which lets callers invert
	// the order without sorting.
	ord               int32
	firstOut, lastOut int32
	firstIn, lastIn   int32
	mark              uint32
	parent            int32 // set by path: the vertex it was reached from
}

type dagEdge struct {
	from, to        int32
	nextOut, nextIn int32
}

const none int32 = -1

// addVertex adds a vertex placed last in the order, so that edges from
// existing vertices to it agree with the order for free.
func (g *dag) addVertex() int32 {
	v := int32(len(g.vs))
	g.vs = append(g.vs, vertex{ord: v, firstOut: none, lastOut: none, firstIn: none, lastIn: none, parent: none})
	return v
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
// cycle and, if it can, reorders vertices so that x comes before y. It does
// not add the edge.
//
// When x is already before y nothing is searched. Otherwise only vertices
// whose position lies between y's and x's can be affected: those reachable
// from y (fwd) must move after those reaching x (back), and they take over
// the same set of positions.
func (g *dag) order(x, y int32) bool {
	lb, ub := g.vs[y].ord, g.vs[x].ord
	if lb > ub {
		return true
	}
	if x == y {
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
			w := g.es[e].from
			if vw := &g.vs[w]; vw.mark != g.epoch && vw.ord > lb {
				vw.mark = g.epoch
				g.stack = append(g.stack, w)
			}
		}
	}
	byOrd := func(a, b int32) int { return int(g.vs[a].ord - g.vs[b].ord) }
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

// path returns a shortest path from y to x (both included) that uses only
// edges accepted by keep (all edges when keep is nil), or nil if there is
// none. It is meant for the rare edge that order refused, to say which
// cycle it would have closed: since the order is topological, such a path
// only visits vertices positioned between y and x, which bounds the search.
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
			if keep != nil && !keep(e) {
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
