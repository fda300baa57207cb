package orch

import (
	"reflect"
	"testing"

	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/staging"
)

// TestPlanned checks what orch show is given of a pin: values sorted,
// sensitivity from the pin even where the recorded diff lost it, values
// known later named, the node's ssh_key (a path) never masked.
func TestPlanned(t *testing.T) {
	pin := &Pin{
		Base:      BaseRef{Name: "use", Version: "2.0.0", Digest: "abc"},
		Inputs:    map[string]any{"token": nil, "secret": "s3", "port": 3, "location": "n1"},
		Sensitive: []string{"secret"},
		Later:     map[string]string{"token": "g.run#0"},
		Node:      map[string]any{"ip": "10.0.0.1", "ssh_key": "/k", "ssh_user": "u"},
		Diff: []staging.Change{
			{Op: staging.OpAdd, Key: "secret", New: "s3"}, // a diff recorded without the mark
			{Op: staging.OpAdd, Key: "secret", Connection: true},
			{Op: staging.OpAdd, Key: "port", New: 3},
		},
	}
	nodeSens := func(node string) map[string]bool {
		if node != "n1" {
			t.Errorf("node %q, want n1", node)
		}
		return map[string]bool{"ssh_key": true, "ssh_user": true}
	}
	got, diff := planned(pin, nodeSens)
	want := &PlannedTask{Base: pin.Base, NodeName: "n1",
		Inputs: []PlannedValue{{Name: "location", Value: "n1"}, {Name: "port", Value: 3}, {Name: "secret", Value: "s3", Sensitive: true}, {Name: "token", Later: "g.run#0"}},
		Node:   []PlannedValue{{Name: "ip", Value: "10.0.0.1"}, {Name: "ssh_key", Value: "/k"}, {Name: "ssh_user", Value: "u", Sensitive: true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planned:\n%+v\nwant\n%+v", got, want)
	}
	if !diff[0].Sensitive || diff[1].Sensitive || diff[2].Sensitive {
		t.Errorf("diff sensitivity %v %v %v, want true false false", diff[0].Sensitive, diff[1].Sensitive, diff[2].Sensitive)
	}
	if pin.Diff[0].Sensitive {
		t.Error("planned changed the pin's own diff")
	}
	if got, _ := planned(nil, nodeSens); got != nil {
		t.Errorf("planned(nil) = %+v, want nil", got)
	}
}

// TestNeighbours checks each task's after and before lists: sorted, an
// edge made twice (a react and an after rule) listed once.
func TestNeighbours(t *testing.T) {
	p := &planner.Plan{
		Nodes: []planner.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}},
		Edges: []planner.Edge{{From: "c", To: "b"}, {From: "a", To: "b"}, {From: "a", To: "b"}, {From: "b", To: "c"}},
	}
	after, before := neighbours(p)
	for _, tc := range []struct {
		got, want []string
	}{
		{after["b"], []string{"a", "c"}},
		{before["a"], []string{"b"}},
		{after["a"], nil},
		{before["b"], []string{"c"}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("got %v, want %v", tc.got, tc.want)
		}
	}
}
