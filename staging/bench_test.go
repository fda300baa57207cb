package staging_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/pgtest"
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
// BenchmarkCreateChain measures long chains the way the CLI makes them.
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

// BenchmarkCreateChain measures what "solar resource create NAME
// composition.yaml" does with a composition of n noop resources, each
// taking its value from the one before ("rI::value"): create and connect
// them, add the default rules and stage them, in one transaction. Names are
// r1, r2, ... r10, ...: unpadded, so that creation order is not key order.
// SPEC section 10: near-linear growth, a 100k chain under 8 s.
func BenchmarkCreateChain(b *testing.B) {
	for _, n := range []int{10000, 30000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			comp := chainComposition(n)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				db := openStore(b)
				b.StartTimer()
				if err := db.Update(func(tx *store.Tx) error { return createComposition(tx, comp) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCreateChainPostgres is BenchmarkCreateChain's 10,000 on a local
// PostgreSQL (internal/pgtest; the team store's target: under 2 s).
func BenchmarkCreateChainPostgres(b *testing.B) {
	srv, err := pgtest.StartServer()
	if err != nil {
		pgtest.SkipOrFail(b, err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	const n = 10000
	comp := chainComposition(n)
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		u, err := srv.NewDatabase(fmt.Sprintf("chain%d", i))
		if err != nil {
			b.Fatal(err)
		}
		db, err := store.Open(u, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := db.Update(func(tx *store.Tx) error { return createComposition(tx, comp) }); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = db.Close()
		b.StartTimer()
	}
}

// chainComposition returns a composition of n chained noop resources.
func chainComposition(n int) *resources.Composition {
	comp := &resources.Composition{Path: "chain.yaml", Resources: make([]resources.CompResource, n)}
	for i := range n {
		in := map[string]any{"value": "head"}
		if i > 0 {
			in["value"] = fmt.Sprintf("r%d::value", i)
		}
		comp.Resources[i] = resources.CompResource{ID: fmt.Sprintf("r%d", i+1), From: filepath.Join("..", "testdata", "resources", "noop"), Input: in, Line: i + 2}
	}
	return comp
}

// createComposition does in tx what "solar resource create" does with a
// composition: create it, add the default rules of its connections and
// stage every resource.
func createComposition(tx *store.Tx, comp *resources.Composition) error {
	cat := resources.NewCatalog(tx)
	res, err := cat.CreateComposition("bench", comp)
	if err != nil {
		return err
	}
	pairs := make([]events.Pair, len(res.Connections))
	for i, c := range res.Connections {
		pairs[i] = events.Pair{Emitter: c.Emitter, Receiver: c.Receiver}
	}
	owned, _, err := events.AddDefaults(tx, cat, pairs...)
	if err != nil {
		return err
	}
	for i, c := range res.Connections {
		if err := cat.AddConnectionRules(c.Emitter, c.Receiver, owned[i]); err != nil {
			return err
		}
	}
	names := make([]string, len(res.Resources))
	for i, r := range res.Resources {
		names[i] = r.Name
	}
	ents, err := staging.New(cat, now).Touch("create", names...)
	if err == nil && len(ents) != len(names) {
		err = fmt.Errorf("staged %d entries, want %d", len(ents), len(names))
	}
	return err
}
