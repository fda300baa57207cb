package orch

import (
	"path/filepath"
	"testing"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// Tasks of one node reach it as their pins say: those pinned to the same
// values share the run's handlers; a task pinned to other values (after
// the node's own update in the plan) gets handlers and a target of its
// own, never the others'. A task of a plan made before pins uses the
// node's values now.
func TestTargetVariants(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "resources", "node"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := testStorePath(t)
	update(t, path, func(tx *store.Tx) error {
		_, err := resources.NewCatalog(tx).Create(resources.CreateSpec{Name: "web1", Base: base,
			Values: resources.Values{Raw: map[string]any{"ip": "10.0.0.1", "transport": "ssh", "ssh_user": "staged"}}}, false)
		return err
	})
	shell, ansible := &handler.Shell{}, &handler.Ansible{}
	old := map[string]any{"transport": "ssh", "ip": "10.0.0.1", "ssh_port": float64(22), "ssh_user": "old"}
	upd := map[string]any{"transport": "ssh", "ip": "10.0.0.1", "ssh_port": float64(22), "ssh_user": "new"}
	plan := []planner.Node{{ID: "a.run#0"}, {ID: "b.run#0"}, {ID: "c.run#0"}, {ID: "d.run#0"}, {ID: "e.run#0"}}
	infos := map[string]*taskInfo{
		"a.run#0": {location: "web1", handler: shell, pin: &Pin{Node: old}},
		"b.run#0": {location: "web1", handler: ansible, pin: &Pin{Node: upd}},
		"c.run#0": {location: "web1", handler: shell, pin: &Pin{Node: old}},
		"d.run#0": {location: "web1", handler: shell}, // a plan made before pins
		"e.run#0": {location: "", handler: shell},
	}
	for i := range plan {
		infos[plan[i].ID].node = &plan[i]
	}
	r := &Runner{}
	defer func() {
		for _, tr := range r.transports {
			tr.Close()
		}
	}()
	view(t, path, func(tx *store.Tx) error {
		return r.wireTransports(resources.NewCatalog(tx), &Record{Plan: &planner.Plan{Nodes: plan}}, infos, shell, ansible)
	})
	if infos["a.run#0"].handler != handler.Handler(shell) || infos["c.run#0"].handler != handler.Handler(shell) {
		t.Error("tasks pinned to the first values lost the run's handler")
	}
	b, ok := infos["b.run#0"].handler.(*handler.Ansible)
	if !ok || b == ansible {
		t.Fatalf("task pinned to other values has handler %p, want a copy of the run's Ansible", infos["b.run#0"].handler)
	}
	if got, _ := b.Target("web1"); got.User != "new" {
		t.Errorf("b reaches web1 as %q, want new", got.User)
	}
	if got, _ := ansible.Target("web1"); got.User != "old" {
		t.Errorf("a reaches web1 as %q, want old", got.User)
	}
	d, ok := infos["d.run#0"].handler.(*handler.Shell)
	if !ok || d == shell {
		t.Errorf("a task of a plan made before pins shares the pinned values' handler")
	}
	if len(r.transports) != 3 {
		t.Errorf("%d sets of connections, want 3 (old, new, now)", len(r.transports))
	}
}
