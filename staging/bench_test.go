package staging_test

import (
	"fmt"
	"testing"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// BenchmarkStageComposition measures one "solar resource create NAME
// composition.yaml" of n noop resources: one transaction that creates them,
// connects r0 to each of the others (a fan-out: n-1 connections), stages
// them all with one Touch and commits. SPEC section 10: under 1 s for
// n=10000.
func BenchmarkStageComposition(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			benchComposition(b, n, func(names []string, i int) string { return names[0] })
		})
	}
}

// BenchmarkStageCompositionChain is the same with a chain r0 -> r1 -> ...
// It is kept small: connecting a chain costs O(n²) in resources.Connect,
// which recomputes the whole upstream chain's effective values after every
// connection (see the staging report), not in staging.
func BenchmarkStageCompositionChain(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			benchComposition(b, n, func(names []string, i int) string { return names[i-1] })
		})
	}
}

// benchComposition creates n resources and connects emitter(names, i) to
// names[i] for every i > 0, then stages all of them, in one transaction.
func benchComposition(b *testing.B, n int, emitter func(names []string, i int) string) {
	noop, err := base("noop")
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("r%d", i)
	}
	ts := tags.Set{"composition": "bench", "env": "1"}
	value := []resources.Mapping{{From: "value", To: "value"}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		db := openStore(b)
		b.StartTimer()
		err := db.Update(func(tx *store.Tx) error {
			cat := resources.NewCatalog(tx)
			for _, name := range names {
				spec := resources.CreateSpec{Name: name, Base: noop, Tags: ts, Values: resources.Values{}}
				if _, err := cat.Create(spec, true); err != nil {
					return err
				}
			}
			for i := 1; i < n; i++ {
				if _, err := cat.Connect(emitter(names, i), names[i], value); err != nil {
					return err
				}
			}
			ents, err := staging.New(cat, now).Touch("create", names...)
			if err == nil && len(ents) != n {
				err = fmt.Errorf("staged %d entries, want %d", len(ents), n)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
