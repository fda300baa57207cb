package resources

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/store"
)

const secretMeta = `handler: noop
inputs:
  secret: {schema: str, value: "", sensitive: true}
  plain:  {schema: str, value: ""}
`

// mkSecret creates a resource whose input secret is declared sensitive.
func mkSecret(name string, args ...string) step {
	return step{desc: "create secret " + name, run: func(t *testing.T, cat *Catalog) error {
		_, err := create(cat, name, loadBase(t, writeBase(t, "sec", secretMeta)), args...)
		return err
	}}
}

// masked checks the inputs of name that SensitiveInputs reports, read
// through a fresh catalog: from what earlier steps kept, or computed.
func masked(name string, inputs ...string) step {
	return step{desc: fmt.Sprintf("%s masks %v", name, inputs), run: func(t *testing.T, cat *Catalog) error {
		got, err := cat.SensitiveInputs(name)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(sorted(inputs), keys(got)); diff != "" {
			t.Errorf("sensitive inputs of %s (-want +got):\n%s", name, diff)
		}
		return nil
	}}
}

// markMasked marks own values of name as resources.Resource.Masked, as
// staging does when it keeps a committed secret as an own value.
func markMasked(name string, inputs ...string) step {
	return step{desc: fmt.Sprintf("mark %s %v", name, inputs), run: func(t *testing.T, cat *Catalog) error {
		r, err := cat.Get(name)
		if err != nil {
			return err
		}
		cp := *r
		cp.Masked = inputs
		return cat.Put(&cp)
	}}
}

func keys(m map[string]bool) []string {
	out := []string{}
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// Sensitivity follows the value: through chains of connections, into list
// and object receivers, the last connection into a simple input winning;
// disconnecting gives an input back its own sensitivity.
func TestSensitiveInputsFollowTheValue(t *testing.T) {
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{name: "through a chain of two connections and back", steps: []step{
			mkSecret("s", "secret=hunter2"), mk("a"), mk("b"), mk("c"),
			conn("s", "a", "secret->x"), conn("a", "b", "x->y"), conn("b", "c", "y->x"),
			masked("s", "secret"), masked("a", "x"), masked("b", "y"), masked("c", "x"),
			// Breaking the chain unmasks everything past the break,
			// including what earlier commands kept in the store.
			disc("a", "b"),
			masked("a", "x"), masked("b"), masked("c"),
			conn("a", "b", "x->y"),
			masked("c", "x"),
			disc("s", "a"),
			masked("a"), masked("b"), masked("c"),
		}},
		{name: "a list input is masked whole while a sensitive element is in it", steps: []step{
			mkSecret("s"), mk("p", "x=plain"), mk("l"),
			conn("p", "l", "x->list"), masked("l"),
			conn("s", "l", "secret->list"), masked("l", "list"),
			disc("p", "l"), masked("l", "list"),
			conn("p", "l", "x->list"), disc("s", "l"), masked("l"),
		}},
		{name: "an object input is masked whole when one key is sensitive", steps: []step{
			mkSecret("s"), mk("a"), mk("o"),
			conn("s", "a", "secret->x"), conn("a", "o", "x->settings:host"),
			masked("o", "settings"),
			disc("a", "o"), masked("o"),
		}},
		{name: "the last connection into a simple input wins", steps: []step{
			mkSecret("s"), mk("p"), mk("a"), mk("b"),
			conn("s", "a", "secret->x"), conn("p", "a", "x->x"), masked("a"),
			conn("p", "b", "x->x"), conn("s", "b", "secret->x"), masked("b", "x"),
			disc("s", "b"), masked("b"),
		}},
		{name: "an input declared sensitive stays sensitive whatever feeds it", steps: []step{
			mk("p", "x=plain"), mkSecret("s"),
			conn("p", "s", "x->secret"), masked("s", "secret"),
			disc("p", "s"), masked("s", "secret"),
		}},
		{name: "resources feeding each other through different inputs", steps: []step{
			mkSecret("s"), mk("a"), mk("b"),
			conn("s", "a", "secret->x"), conn("a", "b", "x->y"), conn("b", "a", "y->list"),
			masked("a", "list", "x"), masked("b", "y"),
		}},
		{name: "an input fed by its own resource", steps: []step{
			mkSecret("s"), conn("s", "s", "secret->plain"), masked("s", "plain", "secret"),
		}},
		{name: "an own value marked masked until written again", steps: []step{
			mk("a", "x=kept-secret"), mk("b"), conn("a", "b", "x->y"),
			markMasked("a", "x"), masked("a", "x"), masked("b", "y"),
			set("a", "x=new"), masked("a"), masked("b"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.steps) })
	}
}

// The tail of a chain far longer than any recursion solar allows reads its
// sensitivity in one lookup, as it reads its effective values.
func TestSensitiveInputsOfLongChain(t *testing.T) {
	db := openStore(t)
	n := maxDepth + 100
	name := func(i int) string { return fmt.Sprintf("c%06d", i) }
	update(t, db, func(cat *Catalog) {
		sec := loadBase(t, writeBase(t, "sec", secretMeta))
		noop := realBase(t, "noop")
		mustCreate(t, cat, name(0), sec, "secret=hunter2")
		for i := 1; i < n; i++ {
			mustCreate(t, cat, name(i), noop)
			from := "value"
			if i == 1 {
				from = "secret"
			}
			if _, err := cat.Connect(name(i-1), name(i), []Mapping{{From: from, To: "value"}}); err != nil {
				t.Fatal(err)
			}
		}
	})
	view(t, db, func(cat *Catalog) {
		got, err := cat.SensitiveInputs(name(n - 1))
		if err != nil {
			t.Fatal(err)
		}
		if !got["value"] {
			t.Errorf("%s.value is not sensitive; it comes from %s.secret", name(n-1), name(0))
		}
	})
}

// A sensitivity record that no longer belongs to the effective values kept
// beside it (a solar that does not keep sensitivity rewrote those) is not
// trusted.
func TestSensitiveRecordOfOtherEffectiveValuesIgnored(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "s", loadBase(t, writeBase(t, "sec", secretMeta)), "secret=hunter2")
		mustCreate(t, cat, "a", valBaseFor(t))
		if _, err := cat.Connect("s", "a", []Mapping{{From: "secret", To: "x"}}); err != nil {
			t.Fatal(err)
		}
	})
	if err := db.Update(func(tx *store.Tx) error {
		raw, err := json.Marshal(sensRecord{Effective: "from another solar", Inputs: []string{}})
		if err != nil {
			return err
		}
		return tx.Put(store.Effective, sensKey("a"), raw)
	}); err != nil {
		t.Fatal(err)
	}
	view(t, db, func(cat *Catalog) {
		got, err := cat.SensitiveInputs("a")
		if err != nil {
			t.Fatal(err)
		}
		if !got["x"] {
			t.Errorf("a.x is not sensitive after a stale record; it comes from s.secret")
		}
	})
}

// BenchmarkSensitiveChain measures the sensitivity of the tail of a chain
// with a cold catalog, as every command that shows or stages a resource
// starts with one: one lookup, whatever the chain's length.
func BenchmarkSensitiveChain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			db := openStore(b)
			tail := buildChain(b, db, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := db.View(func(tx *store.Tx) error {
					_, err := NewCatalog(tx).SensitiveInputs(tail)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
