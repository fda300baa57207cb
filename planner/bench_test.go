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
