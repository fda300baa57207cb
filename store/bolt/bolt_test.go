package bolt

import (
	"path/filepath"
	"testing"

	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/kv/kvtest"
)

func factory(journal bool) kvtest.Factory {
	return func(t *testing.T) func() (kv.Backend, error) {
		p := filepath.Join(t.TempDir(), "solar.db")
		opts := Options{Buckets: append([]string{"meta"}, kvtest.Buckets...), Meta: "meta", Version: 1, Journal: journal}
		// Runs after the suite closed what it opened.
		t.Cleanup(func() {
			s, err := Open(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Check(); err != nil {
				t.Errorf("bbolt file inconsistent: %v", err)
			}
		})
		return func() (kv.Backend, error) { return Open(p, opts) }
	}
}

func TestConformance(t *testing.T) { kvtest.Run(t, factory(false)) }

// With the journal, every Update of the suite goes through the pending
// writes and the journal, and reads merge them with the file.
func TestConformanceJournal(t *testing.T) { kvtest.Run(t, factory(true)) }
