package pg_test

import (
	"sync"
	"testing"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/pg"
)

// TestCreated: the Open that makes a store's tables says so, one later
// does not, and of two first opens at once exactly one does.
func TestCreated(t *testing.T) {
	db := pgtest.Shared(t)
	u := newURL(t, db)
	open := func() bool {
		s, err := pg.Open(u, opts())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.Created()
	}
	if !open() {
		t.Error("first Open of a new schema: Created() = false, want true")
	}
	if open() {
		t.Error("second Open: Created() = true, want false")
	}

	u = newURL(t, db)
	var wg sync.WaitGroup
	got := make([]bool, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pg.Open(u, opts())
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = s.Created()
			_ = s.Close()
		}()
	}
	wg.Wait()
	if got[0] == got[1] {
		t.Errorf("two first Opens at once: Created() = %v, want exactly one true", got)
	}
}
