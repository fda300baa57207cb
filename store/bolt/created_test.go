package bolt

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreatedAndTightened: Open says when it made the store, and any Open,
// read-only too, makes a store file others can read private.
func TestCreatedAndTightened(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	opts := Options{Buckets: []string{"meta", "b"}, Meta: "meta", Version: 1}
	open := func(readOnly bool) *Store {
		o := opts
		o.ReadOnly = readOnly
		s, err := Open(p, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := open(false)
	if !s.Created() {
		t.Error("Open of a missing file: Created() = false, want true")
	}
	_ = s.Close()
	if s := open(false); s.Created() {
		t.Error("second Open: Created() = true, want false")
	} else {
		_ = s.Close()
	}
	for _, readOnly := range []bool{true, false} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		s := open(readOnly)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 || s.Exposed() != 0 || s.Created() {
			t.Errorf("read-only %v: mode %04o, Exposed %04o, Created %v; want 0600, 0, false", readOnly, st.Mode().Perm(), s.Exposed(), s.Created())
		}
		_ = s.Close()
	}
}
