package orch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the run sent to a piece's source replaces that piece; the other
// pieces keep their planned values.
func TestPartInputs(t *testing.T) {
	parts := map[string][]Part{
		"backends": {{From: "a.backend"}, {From: "b.backend"}},
		"conf":     {{From: "a.port", Key: "port"}, {From: "b.host", Key: "host"}},
		"short":    {{From: "a.backend"}, {From: "b.backend"}},
	}
	out := map[string]any{
		"backends": []any{"a:1", "b:1"},
		"conf":     map[string]any{"port": int64(1), "host": "old", "own": "kept"},
		"short":    []any{"b:1"}, // a gave no element when planned
	}
	partInputs(out, parts, map[string]any{"a.backend": "a:2", "a.port": int64(2)})
	want := map[string]any{
		"backends": []any{"a:2", "b:1"},
		"conf":     map[string]any{"port": int64(2), "host": "old", "own": "kept"},
		"short":    []any{"b:1"},
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("inputs (-want +got):\n%s", d)
	}
}
