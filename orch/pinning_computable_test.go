package orch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
)

// TestPinComputesComputableInputs: a receiver's computable input is pinned
// computed from the values its task sees, an emitter's task before it in
// the plan included, not from the store's current values.
func TestPinComputesComputableInputs(t *testing.T) {
	w := newPinWorld(t)
	dir := filepath.Join(t.TempDir(), "shout")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := "handler: noop\nactions: {run: x, update: x}\ninputs:\n  value: {schema: str}\n  shout: {schema: str, computable: 'upper(value) + \"!\"'}\n"
	if err := os.WriteFile(filepath.Join(dir, "meta.yaml"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	shout, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		for n, b := range map[string]*resources.Base{"e": w.noop, "r": shout} {
			if _, err := cat.Create(resources.CreateSpec{Name: n, Base: b, Values: resources.Values{Raw: map[string]any{"value": "old"}}}, false); err != nil {
				return err
			}
		}
		if _, err := cat.Connect("e", "r", []resources.Mapping{{From: "value", To: "value"}}); err != nil {
			return err
		}
		rule, err := events.Parse("after e.update r.update")
		if err != nil {
			return err
		}
		if _, err := events.Add(cat.Tx(), cat, rule); err != nil {
			return err
		}
		_, err = stg.Touch("create", "e", "r")
		return err
	})
	w.commitAll()
	w.do(set("e", "new"))
	pins := w.process("")
	p := pins["r.update#0"]
	if p == nil {
		t.Fatalf("no pin for r.update#0: %v", pins)
	}
	if got := p.Inputs["shout"]; got != "NEW!" {
		t.Errorf("r.update#0 shout=%v; want NEW! (computed from e.update's value)", got)
	}
	if d := p.Diff; len(d) != 2 || d[1].Key != "shout" || d[1].Old != "OLD!" || d[1].New != "NEW!" {
		t.Errorf("r.update#0 diff %+v; want value and shout OLD! >> NEW!", d)
	}
}
