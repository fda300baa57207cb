package schema

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"string as is", "1.10", "1.10"},
		{"string not quoted or escaped", `a "b" <c>`, `a "b" <c>`},
		{"empty string", "", ""},
		{"nil", nil, "null"},
		{"int", int64(-3306), "-3306"},
		{"float", 1.5, "1.5"},
		{"integral float", 3.0, "3"},
		{"small float", 1e-7, "1e-7"},
		{"bool", true, "true"},
		{"empty list", []any{}, "[]"},
		{"list", []any{"a", int64(1), 2.5, false, nil}, `["a",1,2.5,false,null]`},
		{"object sorted keys", map[string]any{"port": int64(1), "host": "db", "a": []any{}}, `{"a":[],"host":"db","port":1}`},
		{"no HTML escaping", map[string]any{"k": "<&>"}, `{"k":"<&>"}`},
		{"nested", []any{map[string]any{"b": map[string]any{"c": true}}}, `[{"b":{"c":true}}]`},
		{"non-canonical falls back", math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format(tt.in); got != tt.want {
				t.Errorf("Format(%#v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"same strings", "a", "a", true},
		{"different strings", "a", "b", false},
		{"string vs int", "3", int64(3), false},
		{"same ints", int64(3), int64(3), true},
		{"different ints", int64(3), int64(4), false},
		{"int vs integral float", int64(3), 3.0, true},
		{"int vs fractional float", int64(3), 3.5, false},
		{"large int vs nearby float", int64(1<<53 + 1), float64(1 << 53), false},
		{"bools", true, true, true},
		{"bool vs string", true, "true", false},
		{"nils", nil, nil, true},
		{"nil vs empty string", nil, "", false},
		{"nil vs empty list", nil, []any{}, false},
		{"empty list vs empty object", []any{}, map[string]any{}, false},
		{"lists", []any{"a", int64(1)}, []any{"a", int64(1)}, true},
		{"list order matters", []any{"a", "b"}, []any{"b", "a"}, false},
		{"objects", map[string]any{"a": int64(1), "b": []any{"x"}}, map[string]any{"b": []any{"x"}, "a": int64(1)}, true},
		{"objects differ in value", map[string]any{"a": int64(1)}, map[string]any{"a": int64(2)}, false},
		{"objects differ in keys", map[string]any{"a": int64(1)}, map[string]any{"a": int64(1), "b": int64(1)}, false},
		{"NaN is equal to nothing", math.NaN(), math.NaN(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v (not symmetric)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}
