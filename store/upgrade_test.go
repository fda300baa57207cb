package store_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/pgtest"
	// The upgrade to version 4 is registered by package resources.
	_ "github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/bolt"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

// oldRules are rules as solar with schema version 1 or 2 stored them: the
// record, one u/<resource>\x00<seq> key per resource named and, in version
// 1 only, the text index t/<text> -> seq. The last two name the same pair
// (the emitter of one is the subscriber of the other).
var oldRules = []string{"after a.run b.run", "on b.run changed c.run", "on a.run ok a.update", "after b.update a.update"}

// others are records of the other buckets, the same in every version.
var others = []struct{ b, k, v string }{
	{store.Resources, "a", `{"name":"a"}`},
	{store.Connections, "in/b\x00a", `{"emitter":"a","receiver":"b"}`},
	{store.Staged, "a.run", `{"key":"a.run"}`},
}

// writeOld fills a store the way solar of schema version 1 or 2 left it.
func writeOld(tx kv.Tx, version int) error {
	puts := others
	for i, text := range oldRules {
		if _, err := tx.NextSequence(store.Events); err != nil {
			return err
		}
		seq := store.SeqKey(uint64(i + 1))
		puts = append(puts, struct{ b, k, v string }{store.Events, "r/" + seq, text})
		if version == 1 {
			puts = append(puts, struct{ b, k, v string }{store.Events, "t/" + text, seq})
		}
		r, err := events.Parse(text)
		if err != nil {
			return err
		}
		for _, res := range slices.Compact([]string{r.Emitter.Resource, r.Subscriber.Resource}) {
			puts = append(puts, struct{ b, k, v string }{store.Events, "u/" + res + "\x00" + seq, ""})
		}
	}
	for _, p := range puts {
		if err := tx.Put(p.b, p.k, []byte(p.v)); err != nil {
			return err
		}
	}
	return nil
}

// writeUpgraded fills a store with what writeOld's store holds once
// upgraded: the rules indexed by pair.
func writeUpgraded(tx kv.Tx) error {
	seq := func(n uint64) string { return store.SeqKey(n) }
	puts := others
	for i, text := range oldRules {
		if _, err := tx.NextSequence(store.Events); err != nil {
			return err
		}
		puts = append(puts, struct{ b, k, v string }{store.Events, "r/" + seq(uint64(i+1)), text})
	}
	puts = append(puts, []struct{ b, k, v string }{
		{store.Events, "u/a\x00a", seq(3)},
		{store.Events, "u/a\x00b", seq(1) + seq(4)},
		{store.Events, "u/b\x00a", seq(1) + seq(4)},
		{store.Events, "u/b\x00c", seq(2)},
		{store.Events, "u/c\x00b", seq(2)},
	}...)
	for _, p := range puts {
		if err := tx.Put(p.b, p.k, []byte(p.v)); err != nil {
			return err
		}
	}
	return nil
}

type catalog map[string][]string

func (c catalog) Actions(resource string) ([]string, bool) {
	a, ok := c[resource]
	return a, ok
}

// TestUpgrade: a store of schema version 1 or 2 opened by this solar is
// upgraded in place, on both backends, read-write or (bbolt) read-only:
// afterwards it holds the records it held byte for byte, with the rules
// indexed as this version indexes them, and the rules read, match and go as
// before.
func TestUpgrade(t *testing.T) {
	old := func(be kv.Backend, version int) {
		t.Helper()
		if err := be.Update(func(tx kv.Tx) error { return writeOld(tx, version) }); err != nil {
			t.Fatal(err)
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
	boltOld := func(t *testing.T, version int) string {
		p := filepath.Join(t.TempDir(), "solar.db")
		be, err := bolt.Open(p, bolt.Options{Buckets: store.Buckets, Meta: store.MetaBucket, Version: version})
		if err != nil {
			t.Fatal(err)
		}
		old(be, version)
		return p
	}
	pgOld := func(t *testing.T, version int) string {
		u := pgtest.Shared(t)
		be, err := pg.Open(u, pg.Options{Buckets: store.Buckets, Meta: store.MetaBucket, Version: version})
		if err != nil {
			t.Fatal(err)
		}
		old(be, version)
		return u
	}
	tests := []struct {
		name     string
		location func(t *testing.T, version int) string
		version  int
		readOnly bool
	}{
		{"bbolt 1", boltOld, 1, false},
		{"bbolt 2", boltOld, 2, false},
		{"bbolt 1 read-only", boltOld, 1, true},
		{"postgresql 1", pgOld, 1, false},
		{"postgresql 2", pgOld, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := tt.location(t, tt.version)
			db, err := store.Open(loc, store.Options{ReadOnly: tt.readOnly})
			if err != nil {
				t.Fatalf("open a version %d store: %v", tt.version, err)
			}
			got := exportOf(t, db)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			want, err := store.Open(filepath.Join(t.TempDir(), "want.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			if err := want.Backend().Update(func(tx kv.Tx) error { return writeUpgraded(tx) }); err != nil {
				t.Fatal(err)
			}
			if w := exportOf(t, want); got != w {
				t.Fatalf("after the upgrade:\n%s\nwant:\n%s", got, w)
			}

			// Opened again, it is a version 2 store that the rule
			// store reads and changes as its own.
			db, err = store.Open(loc, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			cat := catalog{"a": {"run", "update"}, "b": {"run", "update"}, "c": {"run"}}
			err = db.Update(func(tx *store.Tx) error {
				for res, want := range map[string][]string{"a": {oldRules[0], oldRules[2], oldRules[3]}, "b": {oldRules[0], oldRules[1], oldRules[3]}, "c": {oldRules[1]}} {
					rules, err := events.ListFor(tx, res)
					if err != nil {
						return err
					}
					if got := ruleTexts(rules); !slices.Equal(got, want) {
						t.Errorf("rules of %s: %q, want %q", res, got, want)
					}
				}
				r, _ := events.Parse(oldRules[0])
				if !events.Has(tx, r) {
					t.Errorf("Has(%q) = false", r)
				}
				if n, err := events.Add(tx, cat, r); n != 0 || err != nil {
					t.Errorf("adding a stored rule again: %d, %v", n, err)
				}
				if err := events.Remove(tx, r); err != nil {
					return err
				}
				if err := events.Remove(tx, r); !errors.Is(err, events.ErrNoRule) {
					t.Errorf("removing it twice: %v", err)
				}
				if n, err := events.RemoveFor(tx, "c"); n != 1 || err != nil {
					t.Errorf("RemoveFor(c) = %d, %v; want 1", n, err)
				}
				rules, err := events.List(tx)
				if got := ruleTexts(rules); !slices.Equal(got, []string{oldRules[2], oldRules[3]}) {
					t.Errorf("rules left: %q", got)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func ruleTexts(rules []events.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return out
}

func exportOf(t *testing.T, db *store.DB) string {
	t.Helper()
	var b strings.Builder
	if err := db.View(func(tx *store.Tx) error { return store.Export(tx, &b) }); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
