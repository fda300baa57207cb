package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store"
)

// TestHandle: a handle opens its store and its locks, whichever the
// backend, and says whether others write beside its holder; a location
// Open refuses is refused by both.
func TestHandle(t *testing.T) {
	cases := []struct {
		name     string
		location func(t *testing.T) string
		shared   bool
		leased   bool
	}{
		{"bbolt", func(t *testing.T) string { return filepath.Join(t.TempDir(), "solar.db") }, false, false},
		{"postgresql", func(t *testing.T) string { return pgtest.Shared(t) }, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := store.NewHandle(c.location(t))
			if h.Shared() != c.shared {
				t.Errorf("Shared = %v, want %v", h.Shared(), c.shared)
			}
			db, err := h.Open(store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			locks, err := h.OpenLocks(store.LockOptions{})
			if err != nil || locks == nil {
				t.Fatalf("OpenLocks = %v, %v", locks, err)
			}
			defer locks.Close()
			if locks.Leased() != c.leased {
				t.Errorf("Leased = %v, want %v", locks.Leased(), c.leased)
			}
		})
	}
	bad := store.NewHandle("postgress://alice:s3cret@db/solar")
	if _, err := bad.Open(store.Options{}); !errors.Is(err, store.ErrBadLocation) {
		t.Errorf("Open of a bad location: %v", err)
	}
	if _, err := bad.OpenLocks(store.LockOptions{}); !errors.Is(err, store.ErrBadLocation) {
		t.Errorf("OpenLocks of a bad location: %v", err)
	}
}
