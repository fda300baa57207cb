package orch

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

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
