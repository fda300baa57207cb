package planner

import (
	"math/rand/v2"
	"testing"
)

// dagModel drives a dag the way the builder does, a random depth-first
// exploration with extra edges, and checks it against brute force.
type dagModel struct {
	t    *testing.T
	run  int
	g    dag
	succ [][]int32
	path []int32 // open vertices, the top last
}

func (m *dagModel) open() int32 {
	v := m.g.open()
	m.succ = append(m.succ, nil)
	if len(m.path) > 0 {
		// A tree edge needs no order: nothing leads to a new vertex.
		m.add(m.path[len(m.path)-1], v)
	}
	m.path = append(m.path, v)
	return v
}

func (m *dagModel) closeTop() {
	m.g.close(m.path[len(m.path)-1])
	m.path = m.path[:len(m.path)-1]
}

func (m *dagModel) reaches(from, to int32) bool {
	seen := make([]bool, len(m.succ))
	stack := []int32{from}
	seen[from] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v == to {
			return true
		}
		for _, w := range m.succ[v] {
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return false
}

func (m *dagModel) add(x, y int32) {
	m.g.addEdge(x, y)
	m.succ[x] = append(m.succ[x], y)
}

// try asks for x -> y, adds it when allowed, and checks the answer and the
// order of the closed vertices.
func (m *dagModel) try(x, y int32) {
	cycle := m.reaches(y, x)
	if ok := m.g.order(x, y); ok == cycle {
		m.t.Fatalf("run %d: order(%d, %d) = %v, but a cycle would close: %v", m.run, x, y, ok, cycle)
	}
	if cycle {
		if len(m.path) == 0 {
			m.checkPath(y, x)
		}
		return
	}
	m.add(x, y)
	seen := map[int32]bool{}
	for v, vx := range m.g.vs {
		if vx.ord == unordered {
			continue
		}
		if seen[vx.ord] {
			m.t.Fatalf("run %d: position %d given twice", m.run, vx.ord)
		}
		seen[vx.ord] = true
		for _, w := range m.succ[v] {
			switch vw := m.g.vs[w]; {
			case vw.ord == unordered:
				m.t.Fatalf("run %d: closed %d leads to open %d", m.run, v, w)
			case vw.ord <= vx.ord:
				m.t.Fatalf("run %d: edge %d -> %d against the order", m.run, v, w)
			}
		}
	}
}

func (m *dagModel) checkPath(y, x int32) {
	p := m.g.path(y, x, nil)
	if len(p) == 0 || p[0] != y || p[len(p)-1] != x {
		m.t.Fatalf("run %d: path(%d, %d) = %v", m.run, y, x, p)
	}
	for i := 1; i < len(p); i++ {
		if !edgeIn(m.succ[p[i-1]], p[i]) {
			m.t.Fatalf("run %d: path(%d, %d) = %v uses a missing edge", m.run, y, x, p)
		}
	}
}

// TestDagOrder checks that order refuses an edge exactly when it would
// close a cycle, that the closed vertices' positions stay unique and
// topological, and that path then finds the cycle.
func TestDagOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for run := range 400 {
		m := &dagModel{t: t, run: run}
		size := 2 + rng.IntN(40)
		for len(m.succ) < size || len(m.path) > 0 {
			if len(m.path) == 0 {
				m.open()
				continue
			}
			top := m.path[len(m.path)-1]
			n := int32(len(m.succ))
			switch op := rng.IntN(10); {
			case op < 3 && len(m.succ) < size:
				m.open()
			case op < 6:
				m.try(top, rng.Int32N(n))
			case op < 8:
				// A closed vertex created while top was open: the
				// builder's redirected edges start there.
				if x := top + 1 + rng.Int32N(n-top); x < n && m.g.vs[x].ord != unordered {
					m.try(x, rng.Int32N(n))
				}
			default:
				m.closeTop()
			}
		}
		n := int32(len(m.succ))
		for range 3 * n {
			m.try(rng.Int32N(n), rng.Int32N(n))
		}
		topo := m.g.topo()
		pos := make([]int, n)
		for i, v := range topo {
			pos[v] = i
		}
		for v, ws := range m.succ {
			for _, w := range ws {
				if pos[v] >= pos[w] {
					t.Fatalf("run %d: topo puts %d after %d", run, v, w)
				}
			}
		}
	}
}

func edgeIn(succ []int32, v int32) bool {
	for _, w := range succ {
		if w == v {
			return true
		}
	}
	return false
}
