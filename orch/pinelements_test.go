package orch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A list of objects fed field by field: what the run sent to a field's
// source replaces that field of its tagged element; the other fields and
// elements keep their planned values, and the planned list is not changed
// in place (it belongs to the pin).
func TestPartInputsElements(t *testing.T) {
	parts := map[string][]Part{
		"servers": {
			{From: "w1.ip", Key: "ip", Tag: "w1"}, {From: "w1.port", Key: "port", Tag: "w1"},
			{From: "n3.ip", Key: "ip", Tag: "web"}, {From: "p3.port", Key: "port", Tag: "web"},
		},
		"short": {{From: "w1.ip", Key: "ip", Tag: "w1"}, {From: "w2.ip", Key: "ip", Tag: "w2"}},
	}
	planned := []any{map[string]any{"ip": "1", "port": int64(1)}, map[string]any{"ip": "3"}}
	out := map[string]any{
		"servers": planned,
		"short":   []any{map[string]any{"ip": "1"}}, // not made by these pieces
	}
	partInputs(out, parts, map[string]any{"w1.port": nil, "p3.port": int64(8080), "w1.ip": "9"})
	want := map[string]any{
		"servers": []any{map[string]any{"ip": "9"}, map[string]any{"ip": "3", "port": int64(8080)}},
		"short":   []any{map[string]any{"ip": "1"}},
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("inputs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]any{map[string]any{"ip": "1", "port": int64(1)}, map[string]any{"ip": "3"}}, planned); d != "" {
		t.Errorf("the planned list changed in place (-want +got):\n%s", d)
	}
}
