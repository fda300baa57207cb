package orch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// pinWorld is a store for pinning tests: resources of the noop base (input
// "value") made, connected and committed through the same packages the
// commands use.
type pinWorld struct {
	t    *testing.T
	path string
	noop *resources.Base
	node *resources.Base
}

func newPinWorld(t *testing.T) *pinWorld {
	w := &pinWorld{t: t, path: testStorePath(t)}
	for _, b := range []struct {
		dst  **resources.Base
		name string
	}{{&w.noop, "noop"}, {&w.node, "node"}} {
		base, err := resources.LoadBase(filepath.Join("..", "testdata", "resources", b.name))
		if err != nil {
			t.Fatal(err)
		}
		*b.dst = base
	}
	return w
}

// do runs fn with a catalog and a stager in one write transaction.
func (w *pinWorld) do(fn func(cat *resources.Catalog, stg *staging.Stager) error) {
	w.t.Helper()
	update(w.t, w.path, func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		return fn(cat, staging.New(cat, time.Now))
	})
}

// commitAll commits every staged entry as a run would, oldest first.
func (w *pinWorld) commitAll() {
	w.t.Helper()
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		ents, err := staging.List(cat.Tx())
		if err != nil {
			return err
		}
		for _, e := range ents {
			if _, err := stg.Commit(e.Key, "", "", nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// process makes a plan of the entries expr selects ("" for all) and
// returns its pins.
func (w *pinWorld) process(expr string) map[string]*Pin {
	w.t.Helper()
	var pins map[string]*Pin
	update(w.t, w.path, func(tx *store.Tx) error {
		var exprs []*tags.Expr
		if expr != "" {
			e, err := tags.ParseExpr(expr)
			if err != nil {
				return err
			}
			exprs = append(exprs, e)
		}
		res, err := Process(tx, exprs, nil, true, time.Now(), "")
		if err != nil {
			return err
		}
		if res.Record == nil {
			w.t.Fatalf("nothing to process for %q", expr)
		}
		pins, err = Pins(tx, res.Record.UID)
		return err
	})
	return pins
}

func set(name, value string) func(cat *resources.Catalog, stg *staging.Stager) error {
	return func(cat *resources.Catalog, stg *staging.Stager) error {
		if _, err := cat.Update(name, resources.Values{Raw: map[string]any{"value": value}}, resources.Meta{}); err != nil {
			return err
		}
		_, err := stg.Touch("update", name)
		return err
	}
}

// emitterAndReceiver makes e (value=old) feeding r (value->value), both
// committed, with the default rules of a connection.
func (w *pinWorld) emitterAndReceiver() {
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		for _, n := range []string{"e", "r"} {
			if _, err := cat.Create(resources.CreateSpec{Name: n, Base: w.noop, Values: resources.Values{Raw: map[string]any{"value": "old"}}}, false); err != nil {
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
}

// TestPinSeesNoChangeOutsideThePlan: a change staged for e but not in the
// plan never reaches r's task (hole 1 of the plan-artifact issue).
func TestPinSeesNoChangeOutsideThePlan(t *testing.T) {
	w := newPinWorld(t)
	w.emitterAndReceiver()
	w.do(set("e", "new"))
	w.do(func(_ *resources.Catalog, stg *staging.Stager) error {
		_, err := stg.StageAction("r", "restart")
		return err
	})
	pins := w.process("resource=r")
	p := pins["r.restart#0"]
	if p == nil {
		t.Fatalf("no pin for r.restart#0: %v", pins)
	}
	if got := p.Inputs["value"]; got != "old" {
		t.Errorf("r.restart#0 pinned value=%v; want old (e.update is in no plan)", got)
	}
	if p.Sources["value"] != "e.value" {
		t.Errorf("sources %v; want value from e.value", p.Sources)
	}
	if p.Base.Digest == "" || p.Base.Digest != w.noop.Digest {
		t.Errorf("base %+v; want the noop base's digest %s", p.Base, w.noop.Digest)
	}
}

// TestPinSeesEarlierTasksOfThePlan: when e.update is in the plan before
// r's tasks, they see its new value; a task of r with e.update not before
// it sees the committed one.
func TestPinSeesEarlierTasksOfThePlan(t *testing.T) {
	w := newPinWorld(t)
	w.emitterAndReceiver()
	w.do(set("e", "new")) // stages e.update and r.update (its child)
	pins := w.process("")
	if got := pins["e.update#0"].Inputs["value"]; got != "new" {
		t.Errorf("e.update#0 value=%v; want new (its own entry)", got)
	}
	if got := pins["r.update#0"].Inputs["value"]; got != "new" {
		t.Errorf("r.update#0 value=%v; want new (e.update runs before it)", got)
	}
	if d := pins["e.update#0"].Diff; len(d) != 1 || d[0].Key != "value" || d[0].New != "new" {
		t.Errorf("e.update#0 diff %+v; want value old >> new", d)
	}
}

// TestPinNodeIsCommitted: a staged change of a node's address is not what
// another plan's task on it connects with.
func TestPinNodeIsCommitted(t *testing.T) {
	w := newPinWorld(t)
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		if _, err := cat.Create(resources.CreateSpec{Name: "web1", Base: w.node, Values: resources.Values{Raw: map[string]any{"transport": "ssh", "ip": "10.0.0.1", "ssh_user": "deploy"}}}, false); err != nil {
			return err
		}
		if _, err := cat.Create(resources.CreateSpec{Name: "app", Base: w.noop, Values: resources.Values{Raw: map[string]any{"location": "web1"}}}, false); err != nil {
			return err
		}
		_, err := stg.Touch("create", "web1", "app")
		return err
	})
	w.commitAll()
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		if _, err := cat.Update("web1", resources.Values{Raw: map[string]any{"ssh_user": "nosuchuser"}}, resources.Meta{}); err != nil {
			return err
		}
		if _, err := stg.Touch("update", "web1"); err != nil {
			return err
		}
		_, err := stg.StageAction("app", "restart")
		return err
	})
	pins := w.process("resource=app")
	p := pins["app.restart#0"]
	if p == nil || p.Node == nil {
		t.Fatalf("no node pinned: %+v", p)
	}
	if p.Node["ssh_user"] != "deploy" || p.Node["ip"] != "10.0.0.1" {
		t.Errorf("node pinned %v; want the committed ssh_user deploy at 10.0.0.1", p.Node)
	}
}

// TestPinLater: an input that an emitter running earlier in the plan may
// give is recorded as known only then.
func TestPinLater(t *testing.T) {
	w := newPinWorld(t)
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		for _, n := range []string{"pw", "secret"} {
			if _, err := cat.Create(resources.CreateSpec{Name: n, Base: w.noop}, false); err != nil {
				return err
			}
		}
		if _, err := cat.Update("pw", resources.Values{Raw: map[string]any{"value": nil}}, resources.Meta{}); err != nil {
			return err
		}
		if _, err := cat.Connect("pw", "secret", []resources.Mapping{{From: "value", To: "value"}}); err != nil {
			return err
		}
		rule, err := events.Parse("after pw.run secret.run")
		if err != nil {
			return err
		}
		if _, err := events.Add(cat.Tx(), cat, rule); err != nil {
			return err
		}
		_, err = stg.Touch("create", "pw", "secret")
		return err
	})
	pins := w.process("")
	p := pins["secret.run#0"]
	if p.Inputs["value"] != nil || p.Later["value"] != "pw.run#0" {
		t.Errorf("secret.run#0 value=%v later=%v; want unset, known after pw.run#0", p.Inputs["value"], p.Later)
	}
}

// TestPinKeys: a connection into one key of an object input is recorded
// as a part
// with the emitter input it comes from, so that an output sent there in the
// run reaches the key.
func TestPinKeys(t *testing.T) {
	w := newPinWorld(t)
	dir := t.TempDir()
	writeBase(t, dir, "handler: noop\nactions: {run: run.sh}\ninputs:\n  conf: {schema: '{host: str, port: int}'}\n")
	obj, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.do(func(cat *resources.Catalog, stg *staging.Stager) error {
		if _, err := cat.Create(resources.CreateSpec{Name: "e", Base: w.noop}, false); err != nil {
			return err
		}
		if _, err := cat.Create(resources.CreateSpec{Name: "r", Base: obj}, false); err != nil {
			return err
		}
		if _, err := cat.Connect("e", "r", []resources.Mapping{{From: "value", To: "conf", Key: "host"}}); err != nil {
			return err
		}
		_, err := stg.Touch("create", "e", "r")
		return err
	})
	p := w.process("")["r.run#0"]
	if p == nil || len(p.Parts["conf"]) != 1 || p.Parts["conf"][0] != (Part{From: "e.value", Key: "host"}) {
		t.Fatalf("parts %+v; want conf.host from e.value", p)
	}
	if _, whole := p.Sources["conf"]; whole {
		t.Errorf("sources %v: conf is fed one key at a time, not whole", p.Sources)
	}
}

func writeBase(t *testing.T, dir, meta string) {
	t.Helper()
	for name, text := range map[string]string{"meta.yaml": meta, "run.sh": "exit 0\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
