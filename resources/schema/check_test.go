package schema

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		in     any
		want   any
	}{
		{"str", "str", "db", "db"},
		{"str empty optional", "str", "", ""},
		{"str nil optional", "str", nil, nil},
		{"str! non-empty", "str!", "x", "x"},
		{"str keeps numeric-looking text", "str", "1.10", "1.10"},

		{"int from int", "int", 3306, int64(3306)},
		{"int from int64", "int", int64(-5), int64(-5)},
		{"int from int32", "int", int32(7), int64(7)},
		{"int from int8", "int", int8(-8), int64(-8)},
		{"int from uint", "int", uint(9), int64(9)},
		{"int from uint8", "int", uint8(255), int64(255)},
		{"int from uint64", "int", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"int from integral float64", "int", 3306.0, int64(3306)},
		{"int from negative integral float64", "int", -2.0, int64(-2)},
		{"int from float32", "int", float32(4), int64(4)},
		{"int from min int64 float", "int", float64(math.MinInt64), int64(math.MinInt64)},
		{"int from json.Number", "int", json.Number("3306"), int64(3306)},
		{"int from json.Number float form", "int", json.Number("3306.0"), int64(3306)},
		{"int from json.Number exponent", "int", json.Number("1e3"), int64(1000)},
		{"int nil optional", "int", nil, nil},
		{"int! zero is present", "int!", 0, int64(0)},

		{"float from float64", "float", 1.5, 1.5},
		{"float from float32", "float", float32(0.5), 0.5},
		{"float from int", "float", 3, 3.0},
		{"float from int64", "float", int64(-3), -3.0},
		{"float from uint64", "float", uint64(10), 10.0},
		{"float from json.Number", "float", json.Number("2.25"), 2.25},
		{"float from json.Number int", "float", json.Number("2"), 2.0},
		{"float! zero is present", "float!", 0.0, 0.0},

		{"bool true", "bool", true, true},
		{"bool! false is present", "bool!", false, false},

		{"list of any", "[str]", []any{"a", "b"}, []any{"a", "b"}},
		{"list of strings", "[str]", []string{"a", "b"}, []any{"a", "b"}},
		{"list of ints via reflection", "[int]", []int{1, 2}, []any{int64(1), int64(2)}},
		{"list of float64 to int", "[int]", []any{1.0, 2}, []any{int64(1), int64(2)}},
		{"empty list stays a list", "[str]!", []any{}, []any{}},
		{"nil slice becomes empty list", "[str]", []any(nil), []any{}},
		{"nil element kept when optional", "[int]", []any{1, nil}, []any{int64(1), nil}},
		{"nested lists", "[[int]]", []any{[]any{1}, []any{}}, []any{[]any{int64(1)}, []any{}}},

		{"object from map[string]any", "{host: str!, port: int}",
			map[string]any{"host": "db", "port": 3306},
			map[string]any{"host": "db", "port": int64(3306)}},
		{"object from map[any]any", "{host: str!, port: int}",
			map[any]any{"host": "db", "port": 3306.0},
			map[string]any{"host": "db", "port": int64(3306)}},
		{"object from map[string]string", "{host: str!}",
			map[string]string{"host": "db"},
			map[string]any{"host": "db"}},
		{"missing optional field absent", "{host: str!, port: int}",
			map[string]any{"host": "db"},
			map[string]any{"host": "db"}},
		{"nil optional field dropped", "{host: str!, port: int}",
			map[string]any{"host": "db", "port": nil},
			map[string]any{"host": "db"}},
		{"empty object", "{a: int}", map[string]any{}, map[string]any{}},
		{"nil map becomes empty object", "{a: int}", map[string]any(nil), map[string]any{}},
		{"list of objects", "[{host: str!, port: int}]!",
			[]any{map[string]any{"host": "a", "port": 1}, map[any]any{"host": "b"}},
			[]any{map[string]any{"host": "a", "port": int64(1)}, map[string]any{"host": "b"}}},
		{"object of list and object", "{a: [int], b: {c: bool}}",
			map[string]any{"a": []any{1, 2}, "b": map[string]any{"c": true}},
			map[string]any{"a": []any{int64(1), int64(2)}, "b": map[string]any{"c": true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MustParse(tt.schema).Check(tt.in)
			if err != nil {
				t.Fatalf("Check(%#v) against %s: %v", tt.in, tt.schema, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%#v) against %s (-want +got):\n%s", tt.in, tt.schema, diff)
			}
		})
	}
}

func TestCheckDoesNotAliasInput(t *testing.T) {
	in := map[string]any{"a": []any{1}}
	got, err := MustParse("{a: [int]}").Check(in)
	if err != nil {
		t.Fatal(err)
	}
	got.(map[string]any)["a"].([]any)[0] = int64(99)
	if in["a"].([]any)[0] != 1 {
		t.Errorf("changing the checked value changed the input: %v", in)
	}
}

func TestCheckErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		in     any
		want   string // Error()
		path   string
		wantT  string // CheckError.Want
	}{
		{"str from int", "str", 3306, `want str, got 3306 (int)`, "", "str"},
		{"str from bool", "str", true, `want str, got true (bool)`, "", "str"},
		{"str from json.Number", "str", json.Number("1"), `want str, got 1 (number)`, "", "str"},
		{"str from list", "str", []any{"a"}, `want str, got ["a"] (list)`, "", "str"},
		{"str! empty", "str!", "", `required, got ""`, "", "str!"},
		{"str! nil", "str!", nil, `required, got nothing`, "", "str!"},

		{"int from string", "int", "abc", `want int, got "abc" (string)`, "", "int"},
		{"int from numeric string", "int", "3306", `want int, got "3306" (string)`, "", "int"},
		{"int from fraction", "int", 3.5, `want int, got 3.5 (float)`, "", "int"},
		{"int from bool", "int", true, `want int, got true (bool)`, "", "int"},
		{"int! nil", "int!", nil, `required, got nothing`, "", "int!"},
		{"int from huge uint64", "int", uint64(math.MaxUint64), `want int, got 18446744073709551615 (int, out of range)`, "", "int"},
		{"int from huge float", "int", 1e19, `want int, got 10000000000000000000 (float, out of range)`, "", "int"},
		{"int from 2^63 float", "int", float64(1 << 63), `want int, got 9223372036854776000 (float, out of range)`, "", "int"},
		{"int from infinity", "int", math.Inf(1), `want int, got +Inf (float)`, "", "int"},
		{"int from NaN", "int", math.NaN(), `want int, got NaN (float)`, "", "int"},
		{"int from fractional json.Number", "int", json.Number("1.5"), `want int, got 1.5 (number)`, "", "int"},
		{"int from bad json.Number", "int", json.Number("x"), `want int, got x (number, out of range)`, "", "int"},

		{"float from string", "float", "1.5", `want float, got "1.5" (string)`, "", "float"},
		{"float from NaN", "float", math.NaN(), `want float, got NaN (float, not a finite number)`, "", "float"},
		{"float from infinity", "float", math.Inf(-1), `want float, got -Inf (float, not a finite number)`, "", "float"},
		{"float! nil", "float!", nil, `required, got nothing`, "", "float!"},

		{"bool from string", "bool", "true", `want bool, got "true" (string)`, "", "bool"},
		{"bool from int", "bool", 1, `want bool, got 1 (int)`, "", "bool"},
		{"bool! nil", "bool!", nil, `required, got nothing`, "", "bool!"},

		{"list from string", "[str]", "a", `want [str], got "a" (string)`, "", "[str]"},
		{"list from map", "[str]", map[string]any{"a": 1}, `want [str], got {"a":1} (object)`, "", "[str]"},
		{"list! nil", "[str]!", nil, `required, got nothing`, "", "[str]!"},
		{"list element", "[str]", []any{"a", "b", 3}, `[2]: want str, got 3 (int)`, "[2]", "str"},
		{"list required element", "[str!]", []string{"a", ""}, `[1]: required, got ""`, "[1]", "str!"},
		{"reflected list element", "[str]", []int{1}, `[0]: want str, got 1 (int)`, "[0]", "str"},
		{"nested list element", "[[int]]", []any{[]any{}, []any{1, "x"}}, `[1][1]: want int, got "x" (string)`, "[1][1]", "int"},

		{"object from list", "{a: int}", []any{1}, `want {a: int}, got [1] (list)`, "", "{a: int}"},
		{"object from string", "{a: int}", "a=1", `want {a: int}, got "a=1" (string)`, "", "{a: int}"},
		{"object! nil", "{a: int}!", nil, `required, got nothing`, "", "{a: int}!"},
		{"unknown key", "{host: str!, port: int}", map[string]any{"hots": "db"},
			`unknown key "hots" (want one of host, port)`, "", "{host: str!, port: int}"},
		{"smallest unknown key reported", "{host: str}", map[string]any{"z": 1, "b": 2, "host": "x", "m": 3},
			`unknown key "b" (want one of host)`, "", "{host: str}"},
		{"unknown key before missing field", "{host: str!}", map[string]any{"hots": "db"},
			`unknown key "hots" (want one of host)`, "", "{host: str!}"},
		{"missing required field", "{host: str!, port: int}", map[string]any{"port": 1},
			`host: required, got nothing`, "host", "str!"},
		{"nil required field", "{host: str!, port: int}", map[string]any{"host": nil},
			`host: required, got nothing`, "host", "str!"},
		{"empty required str field", "{host: str!}", map[string]any{"host": ""},
			`host: required, got ""`, "host", "str!"},
		{"first failing field in declaration order", "{b: int, a: int}", map[string]any{"a": "x", "b": "y"},
			`b: want int, got "y" (string)`, "b", "int"},
		{"non-string key", "{a: int}", map[any]any{1: "x"},
			`keys must be strings, got 1 (int)`, "", "{a: int}"},
		{"non-string key reflected", "{a: int}", map[int]string{2: "x", 1: "y"},
			`keys must be strings, got 1 (int)`, "", "{a: int}"},
		{"nested object path", "{settings: {host: str!, port: int}}",
			map[string]any{"settings": map[string]any{"port": 1}},
			`settings.host: required, got nothing`, "settings.host", "str!"},
		{"nested unknown key path", "{settings: {host: str!, port: int}}",
			map[string]any{"settings": map[string]any{"hots": "x"}},
			`settings: unknown key "hots" (want one of host, port)`, "settings", "{host: str!, port: int}"},
		{"list in object path", "{backends: [str]}",
			map[string]any{"backends": []any{"a", "b", 7}},
			`backends[2]: want str, got 7 (int)`, "backends[2]", "str"},
		{"object in list in object path", "{backends: [{host: str!, port: int}]}",
			map[string]any{"backends": []any{map[string]any{"host": "a"}, map[any]any{"host": "b", "port": "x"}}},
			`backends[1].port: want int, got "x" (string)`, "backends[1].port", "int"},
		{"long value is shortened", "int", strings.Repeat("x", 100),
			`want int, got "` + strings.Repeat("x", 59) + `... (string)`, "", "int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MustParse(tt.schema).Check(tt.in)
			if err == nil {
				t.Fatalf("Check(%#v) against %s = %#v, want an error", tt.in, tt.schema, got)
			}
			if got != nil {
				t.Errorf("Check returned %#v alongside the error, want nil", got)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %s\nwant    %s", err, tt.want)
			}
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, want *CheckError", err)
			}
			if ce.Path != tt.path || ce.Want != tt.wantT {
				t.Errorf("CheckError{Path: %q, Want: %q}, want {%q, %q}", ce.Path, ce.Want, tt.path, tt.wantT)
			}
			if !errors.Is(err, ErrBadValue) {
				t.Errorf("error does not unwrap to ErrBadValue")
			}
		})
	}
}

func TestFromText(t *testing.T) {
	tests := []struct {
		schema string
		text   string
		want   any
	}{
		{"str", "1.10", "1.10"},
		{"str", "true", "true"},
		{"str", "[a, b]", "[a, b]"},
		{"str", "", ""},
		{"str", "  spaced  ", "  spaced  "},
		{"int", "3306", int64(3306)},
		{"int", "-1", int64(-1)},
		{"int", "3306.0", int64(3306)},
		{"int", "", nil},
		{"int", "null", nil},
		{"float", "1.10", 1.1},
		{"float", "2", 2.0},
		{"bool", "true", true},
		{"bool", "false", false},
		{"[str]", "[a, b]", []any{"a", "b"}},
		{"[str]", "[]", []any{}},
		{"[int]", "[1, 2]", []any{int64(1), int64(2)}},
		{"[str]", `["x", "y"]`, []any{"x", "y"}},
		{"{host: str!, port: int}", "{host: db, port: 3306}", map[string]any{"host": "db", "port": int64(3306)}},
		{"{host: str!, port: int}", `{"host": "db"}`, map[string]any{"host": "db"}},
		{"[{host: str!}]", "[{host: a}, {host: b}]", []any{map[string]any{"host": "a"}, map[string]any{"host": "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.schema+"="+tt.text, func(t *testing.T) {
			got, err := MustParse(tt.schema).FromText(tt.text)
			if err != nil {
				t.Fatalf("FromText(%q) for %s: %v", tt.text, tt.schema, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromText(%q) for %s (-want +got):\n%s", tt.text, tt.schema, diff)
			}
		})
	}
}

func TestFromTextErrors(t *testing.T) {
	tests := []struct {
		schema string
		text   string
		want   string
	}{
		{"str!", "", `required, got ""`},
		{"int", "abc", `want int, got "abc" (string)`},
		{"int", "1.5", `want int, got 1.5 (float)`},
		{"int!", "", `required, got nothing`},
		{"float", "fast", `want float, got "fast" (string)`},
		{"float", ".nan", `want float, got NaN (float, not a finite number)`},
		{"bool", "yes", `want bool, got "yes" (string)`},
		{"bool", "1", `want bool, got 1 (int)`},
		{"[str]", "a", `want [str], got "a" (string)`},
		{"[int]", "[1, x]", `[1]: want int, got "x" (string)`},
		{"[str]", "[a, b", `want [str], got "[a, b" (yaml: line 1: did not find expected ',' or ']')`},
		{"{host: str!}", "{hots: db}", `unknown key "hots" (want one of host)`},
		{"{host: str!}", "{}", `host: required, got nothing`},
	}
	for _, tt := range tests {
		t.Run(tt.schema+"="+tt.text, func(t *testing.T) {
			got, err := MustParse(tt.schema).FromText(tt.text)
			if err == nil {
				t.Fatalf("FromText(%q) for %s = %#v, want an error", tt.text, tt.schema, got)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %s\nwant    %s", err, tt.want)
			}
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Errorf("error is %T, want *CheckError", err)
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	cases := []struct {
		name   string
		schema string
		in     any
	}{
		{"str", "str!", "db"},
		{"int", "int", 3306},
		{"object", "{host: str!, port: int, tags: [str]}", map[string]any{"host": "db", "port": 3306, "tags": []any{"a", "b"}}},
	}
	for _, c := range cases {
		s := MustParse(c.schema)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Check(c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
