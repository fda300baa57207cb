package planner

import (
	"fmt"
	"testing"
)

// BenchmarkBuild measures expansion on the shapes of SPEC section 10, with
// about three rules per resource. Compare runs with benchstat.
func BenchmarkBuild(b *testing.B) {
	for _, shape := range GenShapes {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/n=%d", shape, n), func(b *testing.B) {
				in := GenInput(shape, n)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := Build(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReduce measures the transitive reduction drawn by "orch dg
// --reduce" on GenInput's chain, whose every node has two react shortcuts
// and an implied after-edge: the shape a whole-graph transform must not
// make quadratic.
func BenchmarkReduce(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("chain/n=%d", n), func(b *testing.B) {
			p, err := Build(GenInput("chain", n))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Reduce(p)
			}
		})
	}
}
