package bases

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/store"
)

// TestFind: NAME is the newest of that name, NAME@PREFIX the one whose
// digest starts with PREFIX (at least MinPrefix digits, unique); anything
// else is invalid input naming the reference.
func TestFind(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := []struct{ name, digest string }{
		{"web", "abcdef0100000000000000000000000000000000000000000000000000000000"},
		{"web", "abcdef0200000000000000000000000000000000000000000000000000000000"},
		{"web", "1234560000000000000000000000000000000000000000000000000000000000"},
		{"db", "abcdef0300000000000000000000000000000000000000000000000000000000"},
	}
	err = db.Update(func(tx *store.Tx) error {
		for i, s := range stored {
			c := &Content{Files: []File{{Path: "meta.yaml", Data: []byte(s.digest)}}, Digest: s.digest}
			if err := Put(tx, c, Info{Name: s.name, StoredAt: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref, digest string
		others      int
		err         string
	}{
		{"web", stored[2].digest, 2, ""},
		{"web@abcdef01", stored[0].digest, 2, ""},
		{"web@ABCDEF02", stored[1].digest, 2, ""},
		{"db@abcdef", stored[3].digest, 0, ""},
		{"db", stored[3].digest, 0, ""},
		{"web@abcdef", "", 0, `base web@abcdef: 2 digests start with abcdef; give more digits`},
		{"web@abcde", "", 0, `base "web@abcde": want a digest of at least 6 hex digits after @`},
		{"web@abcdeg", "", 0, `want a digest of at least 6 hex digits`},
		{"web@ffffff", "", 0, `no base web has a digest starting with ffffff; see solar base list`},
		{"nosuch", "", 0, `no base named nosuch; see solar base list`},
		{"@abcdef", "", 0, `base "@abcdef": want NAME or NAME@DIGEST`},
	} {
		var f *Found
		err := db.View(func(tx *store.Tx) error {
			var err error
			f, err = Find(tx, tt.ref)
			return err
		})
		if tt.err != "" {
			if !errors.Is(err, ErrUnknown) || !errors.Is(err, invalid.ErrInput) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Find(%q) = %v; want invalid input: %s", tt.ref, err, tt.err)
			}
			continue
		}
		if err != nil || f.Digest != tt.digest || f.Others != tt.others {
			t.Errorf("Find(%q) = %+v, %v; want %s with %d others", tt.ref, f, err, Short(tt.digest), tt.others)
		}
	}
}
