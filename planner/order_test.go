package planner

import (
	"math/rand/v2"
	"testing"
)

// TestDagOrder checks the incremental order against brute force: order
// refuses an edge exactly when it would close a cycle, path then finds that
// cycle, and after every accepted edge the positions are a permutation that
// every edge respects.
func TestDagOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for run := range 300 {
		var g dag
		n := 2 + rng.IntN(40)
		for range n {
			g.addVertex()
		}
		succ := make([][]int32, n)
		reaches := func(from, to int32) bool {
			seen := make([]bool, n)
			stack := []int32{from}
			seen[from] = true
			for len(stack) > 0 {
				v := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if v == to {
					return true
				}
				for _, w := range succ[v] {
					if !seen[w] {
						seen[w] = true
						stack = append(stack, w)
					}
				}
			}
			return false
		}
		for range 4 * n {
			x, y := int32(rng.IntN(n)), int32(rng.IntN(n))
			cycle := reaches(y, x)
			if ok := g.order(x, y); ok == cycle {
				t.Fatalf("run %d: order(%d, %d) = %v, but a cycle would close: %v", run, x, y, ok, cycle)
			}
			if cycle {
				p := g.path(y, x, nil)
				if len(p) == 0 || p[0] != y || p[len(p)-1] != x {
					t.Fatalf("run %d: path(%d, %d) = %v", run, y, x, p)
				}
				for i := 1; i < len(p); i++ {
					if !edgeIn(succ[p[i-1]], p[i]) {
						t.Fatalf("run %d: path(%d, %d) = %v uses a missing edge", run, y, x, p)
					}
				}
				continue
			}
			if g.path(y, x, nil) != nil {
				t.Fatalf("run %d: path(%d, %d) found without a cycle", run, y, x)
			}
			g.addEdge(x, y)
			succ[x] = append(succ[x], y)
			used := make([]bool, n)
			for _, v := range g.vs {
				if v.ord < 0 || int(v.ord) >= n || used[v.ord] {
					t.Fatalf("run %d: positions are not a permutation", run)
				}
				used[v.ord] = true
			}
			for _, e := range g.es {
				if g.vs[e.from].ord >= g.vs[e.to].ord {
					t.Fatalf("run %d: edge %d -> %d against the order", run, e.from, e.to)
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
