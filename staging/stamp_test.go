package staging_test

import (
	"testing"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// TestStampsForMatchesEntries checks that the stamps of a resource's
// staged entries say what its entries say (key, action, order, time, plan,
// number of changes), without the entries of a resource whose name it
// prefixes.
func TestStampsForMatchesEntries(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		for _, name := range []string{"app", "app.x"} {
			if err := create(cat, st, name, "noop", "role=web", "value=1"); err != nil {
				return err
			}
		}
		if _, err := st.StageAction("app", "restart"); err != nil {
			return err
		}
		st.Plan = "20260301-120000-0001"
		_, err := st.StageRefresh("app", "update", "refresh: x changed")
		return err
	})
	err := db.View(func(tx *store.Tx) error {
		ents, err := staging.ForResource(tx, "app")
		if err != nil {
			return err
		}
		stamps, err := staging.StampsFor(tx, "app")
		if err != nil {
			return err
		}
		if len(ents) != 3 || len(stamps) != len(ents) {
			t.Fatalf("%d entries and %d stamps for app, want 3 of each", len(ents), len(stamps))
		}
		for i, e := range ents {
			s := stamps[i]
			if s.Key != e.Key || s.Resource != "app" || s.Action != e.Action || s.Seq != e.Seq || !s.StagedAt.Equal(e.StagedAt) || s.Plan != e.Plan || len(s.Diff) != len(e.Diff) {
				t.Errorf("stamp %d is %+v (%d changes), entry %+v", i, s, len(s.Diff), e)
			}
		}
		if len(stamps[0].Diff) == 0 || stamps[2].Plan == "" {
			t.Errorf("stamps %+v: want the create's changes counted and the refresh's plan kept", stamps)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
