package orch

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// TestStaleScan checks that a staleness check reads the same stamps one
// resource at a time and in one pass over the staged log: a resource with
// a change staged after the plan, and one committed by a later plan, make
// their tasks stale either way; the others do not.
func TestStaleScan(t *testing.T) {
	path, uid := noopStack(t, []string{"a", "b", "c", "d"})
	update(t, path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if _, err := cat.Update("b", resources.Values{Raw: map[string]any{"value": "new"}}, resources.Meta{}); err != nil {
			return err
		}
		if _, err := staging.New(cat, nil).Touch("update", "b"); err != nil {
			return err
		}
		return tx.Put(store.Committed, "c", []byte(`{"own":{},"inputs":{},"committed_at":"2026-01-01T00:00:00Z","plan":"99991231-235959-9999","sensitive":null}`))
	})
	defer func(n int) { staleScanFrom = n }(staleScanFrom)
	var results [][]StaleTask
	view(t, path, func(tx *store.Tx) error {
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		ids := []string{"a.run#0", "b.run#0", "c.run#0", "d.run#0"}
		for _, from := range []int{1000, 0} {
			staleScanFrom = from
			got, err := Stale(tx, rec, ids)
			if err != nil {
				return err
			}
			results = append(results, got)
		}
		return nil
	})
	if len(results[0]) != 2 || results[0][0].ID != "b.run#0" || !strings.Contains(results[0][0].Why, "staged after the plan") ||
		results[0][1].ID != "c.run#0" || !strings.Contains(results[0][1].Why, "later plan") {
		t.Errorf("one resource at a time: %+v; want b (staged after) and c (a later plan)", results[0])
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Errorf("in one pass: %+v; one at a time: %+v", results[1], results[0])
	}
}

// TestRefuseStaleNamesAFew checks that a refusal names the first stale
// tasks and counts the rest, rather than list every one.
func TestRefuseStaleNamesAFew(t *testing.T) {
	names := make([]string, staleShown+5)
	for i := range names {
		names[i] = "r" + strconv.Itoa(100+i)
	}
	path, uid := noopStack(t, names)
	update(t, path, func(tx *store.Tx) error {
		for _, n := range names {
			if err := tx.Put(store.Committed, n, []byte(`{"own":{},"inputs":{},"committed_at":"2026-01-01T00:00:00Z","plan":"99991231-235959-9999","sensitive":null}`)); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, path, func(tx *store.Tx) error {
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		ids := make([]string, len(names))
		for i, n := range names {
			ids[i] = n + ".run#0"
		}
		err = RefuseStale(tx, rec, ids)
		if !errors.Is(err, ErrStale) {
			t.Fatalf("RefuseStale: %v; want ErrStale", err)
		}
		msg := err.Error()
		if n := strings.Count(msg, "later plan"); n != staleShown {
			t.Errorf("the refusal names %d stale tasks; want %d: %s", n, staleShown, msg)
		}
		if !strings.Contains(msg, "r100.run#0 (r100 was committed") || !strings.Contains(msg, ", and 5 more stale tasks;") {
			t.Errorf("the refusal does not name the first and count the rest: %s", msg)
		}
		return nil
	})
}

// A task of a pinned plan whose resource's base is no longer the one it
// was pinned to (upgraded, and the upgrade's entry discarded) is stale,
// naming both digests; a plan made before pins knows no digest to compare.
func TestStaleUpgradedBase(t *testing.T) {
	for _, pinned := range []bool{true, false} {
		path, uid, _, digest := baseChain(t, 3)
		other := strings.Repeat("f", 64)
		update(t, path, func(tx *store.Tx) error {
			cat := resources.NewCatalog(tx)
			r, err := cat.Get("r1")
			if err != nil {
				return err
			}
			cp := *r
			cp.Base.Digest = other
			if err := cat.Put(&cp); err != nil {
				return err
			}
			if !pinned {
				return unpin(tx, uid)
			}
			return nil
		})
		var got []StaleTask
		view(t, path, func(tx *store.Tx) error {
			rec, err := Load(tx, uid)
			if err != nil {
				return err
			}
			rec.CreatedAt = time.Now() // benchStoreAt records none: its entries were staged before
			got, err = Stale(tx, rec, []string{"r0.run#0", "r1.run#0", "r2.run#0"})
			return err
		})
		var want []StaleTask
		if pinned {
			want = []StaleTask{{ID: "r1.run#0", Why: "base of r1 was upgraded after the plan (" + digest[:12] + " → ffffffffffff)"}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("pinned %v: Stale = %+v, want %+v", pinned, got, want)
		}
	}
}
