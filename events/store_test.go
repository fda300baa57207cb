package events

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
)

// fakeCatalog maps resource names to the actions their bases define.
type fakeCatalog map[string][]string

func (c fakeCatalog) Actions(resource string) ([]string, bool) {
	a, ok := c[resource]
	return a, ok
}

var catalog = fakeCatalog{
	"a":           {"run", "update", "remove", "reload"},
	"b":           {"run", "update", "remove"},
	"c":           {"run"},
	"rmq":         {"run"},
	"rmq.1":       {"run", "cluster_create", "cluster_join"},
	"rmq.10":      {"run", "cluster_join"},
	"rmq.cluster": {"run"},
	"bare":        nil,
}

// openDB opens a store in a temp dir and checks the file's consistency when
// the test ends.
func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Errorf("store consistency: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func mustParse(t *testing.T, texts ...string) []Rule {
	t.Helper()
	rules := make([]Rule, len(texts))
	for i, s := range texts {
		r, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		rules[i] = r
	}
	return rules
}

func texts(rules []Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return out
}

func add(t *testing.T, db *store.DB, texts ...string) int {
	t.Helper()
	rules := mustParse(t, texts...)
	var n int
	if err := db.Update(func(tx *store.Tx) error {
		var err error
		n, err = Add(tx, catalog, rules...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// listed reads rules in a read-only transaction, as `events list` does.
func listed(t *testing.T, db *store.DB, resource string) []string {
	t.Helper()
	var rules []Rule
	if err := db.View(func(tx *store.Tx) error {
		var err error
		if resource == "" {
			rules, err = List(tx)
		} else {
			rules, err = ListFor(tx, resource)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return texts(rules)
}

func assertRules(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("rules:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestAddKeepsOrder(t *testing.T) {
	db := openDB(t)
	// Byte order of the texts differs from the order added, so a listing
	// sorted by text would fail.
	if n := add(t, db, "on c.run changed a.run", "after b.run a.run"); n != 2 {
		t.Fatalf("added %d, want 2", n)
	}
	if n := add(t, db, "on a.run any b.run"); n != 1 {
		t.Fatalf("added %d, want 1", n)
	}
	assertRules(t, listed(t, db, ""), "on c.run changed a.run", "after b.run a.run", "on a.run any b.run")
}

func TestAddDuplicateIsNoop(t *testing.T) {
	db := openDB(t)
	add(t, db, "on a.run changed b.run", "after a.run b.run")
	if n := add(t, db, "on a.run changed b.run"); n != 0 {
		t.Errorf("re-adding a stored rule added %d, want 0", n)
	}
	// Repeats inside one call count once; new rules keep their order.
	if n := add(t, db, "on b.run ok c.run", "after a.run b.run", "on b.run ok c.run", "  on  a.run\tchanged b.run"); n != 1 {
		t.Errorf("added %d, want 1", n)
	}
	assertRules(t, listed(t, db, ""), "on a.run changed b.run", "after a.run b.run", "on b.run ok c.run")
	// A react rule and an after rule between the same actions are different.
	if n := add(t, db, "on a.run any b.run"); n != 1 {
		t.Errorf("a rule differing only in its event added %d, want 1", n)
	}
}

func TestAddRejects(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
		is   error
		msg  string
	}{
		{"unknown emitter", Rule{React, Ref{"x", "run"}, Changed, Ref{"b", "run"}},
			ErrUnknownResource, `rule "on x.run changed b.run": unknown resource "x"`},
		{"unknown subscriber", Rule{After, Ref{"a", "run"}, "", Ref{"rmq.2", "run"}},
			ErrUnknownResource, `rule "after a.run rmq.2.run": unknown resource "rmq.2"`},
		{"unknown emitter action", Rule{React, Ref{"b", "reload"}, Changed, Ref{"a", "run"}},
			ErrUnknownAction, `rule "on b.reload changed a.run": unknown action "reload": resource "b" defines remove, run, update`},
		{"unknown subscriber action", Rule{React, Ref{"a", "run"}, Any, Ref{"rmq.10", "cluster_create"}},
			ErrUnknownAction, `unknown action "cluster_create": resource "rmq.10" defines cluster_join, run`},
		{"base without actions", Rule{After, Ref{"a", "run"}, "", Ref{"bare", "run"}},
			ErrUnknownAction, `resource "bare" defines no actions`},
		{"malformed rule", Rule{After, Ref{"a", "run"}, Changed, Ref{"b", "run"}},
			ErrBadRule, "after rules take no event"},
		{"self rule", Rule{React, Ref{"a", "run"}, Changed, Ref{"a", "run"}},
			ErrBadRule, "same action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			add(t, db, "on a.run changed b.run")
			// Commit whatever Add leaves behind, so a partial write
			// would show in the listing.
			var addErr error
			var n int
			if err := db.Update(func(tx *store.Tx) error {
				n, addErr = Add(tx, catalog, Rule{After, Ref{"c", "run"}, "", Ref{"a", "run"}}, tt.rule)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(addErr, tt.is) {
				t.Fatalf("Add error = %v, want %v", addErr, tt.is)
			}
			if !strings.Contains(addErr.Error(), tt.msg) {
				t.Errorf("Add error = %q, want it to contain %q", addErr, tt.msg)
			}
			if n != 0 {
				t.Errorf("Add reported %d added with an error", n)
			}
			// The valid rule before the bad one was not written either.
			assertRules(t, listed(t, db, ""), "on a.run changed b.run")
			assertRules(t, listed(t, db, "c"))
		})
	}
}

func TestRemove(t *testing.T) {
	db := openDB(t)
	add(t, db, "on a.run changed b.run", "after a.run b.run", "on b.run ok c.run")
	r := mustParse(t, "after a.run b.run")[0]
	if err := db.Update(func(tx *store.Tx) error {
		if !Has(tx, r) {
			t.Errorf("Has(%q) = false before Remove", r)
		}
		if err := Remove(tx, r); err != nil {
			return err
		}
		if Has(tx, r) {
			t.Errorf("Has(%q) = true after Remove", r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	assertRules(t, listed(t, db, ""), "on a.run changed b.run", "on b.run ok c.run")
	assertRules(t, listed(t, db, "a"), "on a.run changed b.run")

	err := db.Update(func(tx *store.Tx) error { return Remove(tx, r) })
	if !errors.Is(err, ErrNoRule) || !strings.Contains(err.Error(), `"after a.run b.run"`) {
		t.Fatalf("removing an absent rule: %v, want ErrNoRule naming the rule", err)
	}

	// Adding it back puts it last: order is the order of adding.
	add(t, db, "after a.run b.run")
	assertRules(t, listed(t, db, ""), "on a.run changed b.run", "on b.run ok c.run", "after a.run b.run")
}

func TestListForDottedNames(t *testing.T) {
	db := openDB(t)
	add(t, db,
		"on rmq.cluster.run changed rmq.1.cluster_create",
		"on rmq.1.cluster_create changed rmq.10.cluster_join",
		"after rmq.10.run rmq.run",
		"after rmq.run rmq.1.run",
		"on rmq.1.run changed rmq.1.cluster_create",
		"after a.run b.run",
	)
	tests := []struct {
		resource string
		want     []string
	}{
		{"rmq.1", []string{
			"on rmq.cluster.run changed rmq.1.cluster_create",
			"on rmq.1.cluster_create changed rmq.10.cluster_join",
			"after rmq.run rmq.1.run",
			"on rmq.1.run changed rmq.1.cluster_create",
		}},
		{"rmq.10", []string{"on rmq.1.cluster_create changed rmq.10.cluster_join", "after rmq.10.run rmq.run"}},
		{"rmq", []string{"after rmq.10.run rmq.run", "after rmq.run rmq.1.run"}},
		{"rmq.cluster", []string{"on rmq.cluster.run changed rmq.1.cluster_create"}},
		{"rmq.", nil},
		{"b", []string{"after a.run b.run"}},
		{"nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			assertRules(t, listed(t, db, tt.resource), tt.want...)
		})
	}
}

func TestRemoveFor(t *testing.T) {
	db := openDB(t)
	add(t, db,
		"on rmq.1.run changed rmq.1.cluster_create", // one resource, one index key
		"on rmq.1.cluster_create changed rmq.10.cluster_join",
		"after rmq.10.run rmq.run",
		"after rmq.run rmq.1.run",
		"after a.run b.run",
	)
	var n int
	if err := db.Update(func(tx *store.Tx) error {
		var err error
		n, err = RemoveFor(tx, "rmq.1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("RemoveFor removed %d rules, want 3", n)
	}
	assertRules(t, listed(t, db, ""), "after rmq.10.run rmq.run", "after a.run b.run")
	assertRules(t, listed(t, db, "rmq.1"))
	// The other side's index no longer lists the removed rules.
	assertRules(t, listed(t, db, "rmq.10"), "after rmq.10.run rmq.run")
	assertRules(t, listed(t, db, "rmq"), "after rmq.10.run rmq.run")

	if err := db.Update(func(tx *store.Tx) error {
		var err error
		n, err = RemoveFor(tx, "rmq.1")
		return err
	}); err != nil || n != 0 {
		t.Errorf("RemoveFor with no rules = %d, %v; want 0, nil", n, err)
	}
	// Removed rules can be added again.
	if got := add(t, db, "after rmq.run rmq.1.run"); got != 1 {
		t.Errorf("re-adding a rule removed by RemoveFor added %d, want 1", got)
	}
}

func TestAddInReadOnlyTx(t *testing.T) {
	db := openDB(t)
	err := db.View(func(tx *store.Tx) error {
		_, err := Add(tx, catalog, mustParse(t, "after a.run b.run")...)
		return err
	})
	if !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("Add in a View = %v, want store.ErrReadOnly", err)
	}
}

func TestOrderSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	add(t, db, "on c.run changed a.run", "after b.run a.run")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Error(err)
		}
		_ = db.Close()
	})
	add(t, db, "after a.run b.run")
	assertRules(t, listed(t, db, ""), "on c.run changed a.run", "after b.run a.run", "after a.run b.run")
}

// chainRules builds the rules `solar connect` adds along a chain of
// resources: three per connection, as in the spec's 30,000-rule benchmark.
func chainRules(connections int) (fakeCatalog, []Rule) {
	cat := fakeCatalog{}
	rules := make([]Rule, 0, 3*connections)
	for i := range connections {
		a, b := "node."+strconv.Itoa(i), "node."+strconv.Itoa(i+1)
		cat[a] = []string{"run", "update", "remove"}
		cat[b] = cat[a]
		rules = append(rules,
			Rule{After, Ref{a, "run"}, "", Ref{b, "run"}},
			Rule{After, Ref{a, "update"}, "", Ref{b, "update"}},
			Rule{After, Ref{b, "remove"}, "", Ref{a, "remove"}})
	}
	return cat, rules
}

func benchDB(b *testing.B) *store.DB {
	b.Helper()
	db, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{3000, 30000} {
		cat, rules := chainRules(n / 3)
		// One Add call for the whole batch, as a composition should do.
		b.Run("batch/rules="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				db := benchDB(b)
				if err := db.Update(func(tx *store.Tx) error {
					_, err := Add(tx, cat, rules...)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
		// One Add call per connection, all in one transaction.
		b.Run("per-connect/rules="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				db := benchDB(b)
				if err := db.Update(func(tx *store.Tx) error {
					for i := 0; i < len(rules); i += 3 {
						if _, err := Add(tx, cat, rules[i:i+3]...); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkList(b *testing.B) {
	const n = 30000
	cat, rules := chainRules(n / 3)
	db := benchDB(b)
	if err := db.Update(func(tx *store.Tx) error {
		_, err := Add(tx, cat, rules...)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("rules="+strconv.Itoa(n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := db.View(func(tx *store.Tx) error {
				got, err := List(tx)
				if len(got) != n {
					b.Fatalf("listed %d rules, want %d", len(got), n)
				}
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// An index value that is not a list of sequence keys is damage, named as
// such, not a panic or a wrong answer.
func TestDamagedIndexIsDamage(t *testing.T) {
	db := openDB(t)
	add(t, db, "after a.run b.run")
	if err := db.Update(func(tx *store.Tx) error { return tx.Put(store.Events, pairKey("a", "b"), []byte("0001")) }); err != nil {
		t.Fatal(err)
	}
	err := db.View(func(tx *store.Tx) error {
		_, err := ListFor(tx, "a")
		return err
	})
	if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), `"u/a\x00b"`) {
		t.Fatalf("ListFor over a damaged index: %v", err)
	}
}
