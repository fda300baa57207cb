package store_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/bolt"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

// v1Rules are three rules as solar with schema version 1 stored them: the
// record, the text index t/<text> (which version 2 no longer keeps) and one
// u/ key per resource named.
var v1Rules = []string{"after a.run b.run", "on b.run changed c.run", "on a.run ok a.update"}

// writeV1 fills a store the way solar of schema version 1 left it; withText
// false leaves out what version 2 no longer keeps.
func writeV1(tx kv.Tx, withText bool) error {
	puts := []struct{ b, k, v string }{
		{store.Resources, "a", `{"name":"a"}`},
		{store.Connections, "in/b\x00a", `{"emitter":"a","receiver":"b"}`},
		{store.Staged, "a.run", `{"key":"a.run"}`},
	}
	for i, text := range v1Rules {
		if _, err := tx.NextSequence(store.Events); err != nil {
			return err
		}
		seq := store.SeqKey(uint64(i + 1))
		puts = append(puts, struct{ b, k, v string }{store.Events, "r/" + seq, text})
		if withText {
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

type catalog map[string][]string

func (c catalog) Actions(resource string) ([]string, bool) {
	a, ok := c[resource]
	return a, ok
}

// TestUpgradeFromVersion1: a store of schema version 1 opened by this
// solar is upgraded in place, on both backends, read-write or (bbolt)
// read-only: afterwards it holds what version 1 held, less the rules' text
// index, records byte for byte, and the rules read, match and go as before.
func TestUpgradeFromVersion1(t *testing.T) {
	v1 := func(be kv.Backend) {
		t.Helper()
		if err := be.Update(func(tx kv.Tx) error { return writeV1(tx, true) }); err != nil {
			t.Fatal(err)
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
	boltV1 := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "solar.db")
		be, err := bolt.Open(p, bolt.Options{Buckets: store.Buckets, Meta: store.MetaBucket, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		v1(be)
		return p
	}
	pgV1 := func(t *testing.T) string {
		u := pgtest.Shared(t)
		be, err := pg.Open(u, pg.Options{Buckets: store.Buckets, Meta: store.MetaBucket, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		v1(be)
		return u
	}
	tests := []struct {
		name     string
		location func(t *testing.T) string
		readOnly bool
	}{
		{"bbolt", boltV1, false},
		{"bbolt read-only", boltV1, true},
		{"postgresql", pgV1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := tt.location(t)
			db, err := store.Open(loc, store.Options{ReadOnly: tt.readOnly})
			if err != nil {
				t.Fatalf("open a version 1 store: %v", err)
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
			if err := want.Backend().Update(func(tx kv.Tx) error { return writeV1(tx, false) }); err != nil {
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
			cat := catalog{"a": {"run", "update"}, "b": {"run"}, "c": {"run"}}
			err = db.Update(func(tx *store.Tx) error {
				for res, want := range map[string][]string{"a": {v1Rules[0], v1Rules[2]}, "b": v1Rules[:2], "c": {v1Rules[1]}} {
					rules, err := events.ListFor(tx, res)
					if err != nil {
						return err
					}
					if got := ruleTexts(rules); !slices.Equal(got, want) {
						t.Errorf("rules of %s: %q, want %q", res, got, want)
					}
				}
				r, _ := events.Parse(v1Rules[1])
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
				rules, err := events.List(tx)
				if got := ruleTexts(rules); !slices.Equal(got, []string{v1Rules[0], v1Rules[2]}) {
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
