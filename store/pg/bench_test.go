package pg_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/kv/kvtest"
	"github.com/solarops/solar/store/pg"
)

// BenchmarkStore runs kvtest.Bench against a local server with fsync on,
// reached over its Unix socket.
func BenchmarkStore(b *testing.B) {
	db := pgtest.Shared(b)
	n := 0
	kvtest.Bench(b, func(b *testing.B) kv.Backend {
		n++
		s, err := pg.Open(db+"&schema=bench"+string(rune('a'+n)), opts())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// BenchmarkFleetClaimComplete claims one task and completes it in a
// serializable Update, as a runner does per task: the claim's own
// transaction writes the task's INPROGRESS record, the completion its
// result. It reports the claim's latency (p50, p99) besides ns/op, the cost
// of the claim/complete path per task.
func BenchmarkFleetClaimComplete(b *testing.B) {
	u := pgtest.Shared(b) + "&schema=fleetbench"
	s, err := pg.Open(u, opts())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tasks := make([]kv.FleetTask, b.N)
	for i := range tasks {
		tasks[i] = kv.FleetTask{Task: fmt.Sprintf("t%07d", i), State: kv.RowReady, Weight: b.N - i,
			Slots: []kv.Slot{{Name: "plan/bench", Count: 4}, {Name: "sema/s", Count: 2}}}
	}
	err = s.Update(func(tx kv.Tx) error {
		return tx.(kv.FleetTx).FleetSubmit(kv.FleetPlan{UID: "bench", By: "bench"}, tasks)
	})
	if err != nil {
		b.Fatal(err)
	}
	begin := func(c kv.Claim) (string, string, []byte) { return "one", "run/" + c.Task, []byte("INPROGRESS") }
	lat := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cs, err := s.Claim(ctx, kv.ClaimFilter{Runner: "r", Max: 1, TTL: time.Minute}, begin)
		lat = append(lat, time.Since(start))
		if err != nil || len(cs) != 1 {
			b.Fatal(cs, err)
		}
		err = s.Update(func(tx kv.Tx) error {
			ok, err := tx.(kv.FleetTx).FleetComplete(cs[0])
			if err != nil || !ok {
				return fmt.Errorf("complete %+v: %v %v", cs[0], ok, err)
			}
			return tx.Put("one", "run/"+cs[0].Task, []byte("SUCCESS"))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "claim-p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "claim-p99-ms")
}
