package pg_test

import (
	"context"
	"testing"
	"time"

	"github.com/solarops/solar/store/pg"
)

// TestRateLayoutUpgrade checks that a store of layout 3, from before
// rates, gets the rate table when a lock session opens it.
func TestRateLayoutUpgrade(t *testing.T) {
	_, u := fleetStore(t)
	sc := schemaOf(u)
	exec1(t, u, "DROP TABLE "+sc+".rate; UPDATE "+sc+".solar_layout SET version = 3")
	l, err := pg.OpenStoreLocks(u, opts(), pg.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, want := range []time.Duration{0, time.Hour} {
		w, err := l.Reserve(context.Background(), "api", time.Hour, 1, 1)
		if err != nil {
			t.Fatalf("reserve %d after the upgrade: %v", i, err)
		}
		if w > want || w < want-time.Minute {
			t.Fatalf("reserve %d waits %s, want about %s", i, w, want)
		}
	}
	var layout int
	queryRow(t, u, "SELECT version FROM "+sc+".solar_layout", &layout)
	if layout != pg.LayoutVersion {
		t.Fatalf("layout %d after the upgrade, want %d", layout, pg.LayoutVersion)
	}
}
