package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	str := &Schema{Kind: Str}
	reqStr := &Schema{Kind: Str, Required: true}
	integer := &Schema{Kind: Int}
	tests := []struct {
		text  string
		want  *Schema
		canon string
	}{
		{"str", str, "str"},
		{"int", integer, "int"},
		{"float", &Schema{Kind: Float}, "float"},
		{"bool", &Schema{Kind: Bool}, "bool"},
		{"str!", reqStr, "str!"},
		{"int!", &Schema{Kind: Int, Required: true}, "int!"},
		{"float!", &Schema{Kind: Float, Required: true}, "float!"},
		{"bool!", &Schema{Kind: Bool, Required: true}, "bool!"},
		{"[str]", &Schema{Kind: List, Elem: str}, "[str]"},
		{"[str]!", &Schema{Kind: List, Required: true, Elem: str}, "[str]!"},
		{"[str!]", &Schema{Kind: List, Elem: reqStr}, "[str!]"},
		{"[str!]!", &Schema{Kind: List, Required: true, Elem: reqStr}, "[str!]!"},
		{"[[int]]", &Schema{Kind: List, Elem: &Schema{Kind: List, Elem: integer}}, "[[int]]"},
		{"{host: str!, port: int}", &Schema{Kind: Object, Fields: []Field{
			{"host", reqStr}, {"port", integer},
		}}, "{host: str!, port: int}"},
		{"{a: int}!", &Schema{Kind: Object, Required: true, Fields: []Field{{"a", integer}}}, "{a: int}!"},
		{"[{host: str!, port: int}]!", &Schema{Kind: List, Required: true, Elem: &Schema{Kind: Object, Fields: []Field{
			{"host", reqStr}, {"port", integer},
		}}}, "[{host: str!, port: int}]!"},
		{"{a: [int], b: {c: bool}}", &Schema{Kind: Object, Fields: []Field{
			{"a", &Schema{Kind: List, Elem: integer}},
			{"b", &Schema{Kind: Object, Fields: []Field{{"c", &Schema{Kind: Bool}}}}},
		}}, "{a: [int], b: {c: bool}}"},
		// Declaration order is kept, not sorted.
		{"{z: int, a: int}", &Schema{Kind: Object, Fields: []Field{{"z", integer}, {"a", integer}}}, "{z: int, a: int}"},
		// Key names: underscore start, digits and dashes after the first byte.
		{"{_x: str, a-b_9: str, Key: str}", &Schema{Kind: Object, Fields: []Field{
			{"_x", str}, {"a-b_9", str}, {"Key", str},
		}}, "{_x: str, a-b_9: str, Key: str}"},
		// Keys may be spelled like kinds.
		{"{str: int, int: str}", &Schema{Kind: Object, Fields: []Field{{"str", integer}, {"int", str}}}, "{str: int, int: str}"},
		// Whitespace between any tokens, including before '!'.
		{"  str  ", str, "str"},
		{"str !", reqStr, "str!"},
		{"\t[ str ] !\n", &Schema{Kind: List, Required: true, Elem: str}, "[str]!"},
		{"{ host : str ! , port:int }", &Schema{Kind: Object, Fields: []Field{
			{"host", reqStr}, {"port", integer},
		}}, "{host: str!, port: int}"},
		{"{a:{b:[{c:bool!}!]!}!}!", nil, "{a: {b: [{c: bool!}!]!}!}!"},
		{"\r\n[\r\n{\nx\n:\nfloat\n}\n]", nil, "[{x: float}]"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.text, err)
			}
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.text, diff)
				}
			}
			if s := got.String(); s != tt.canon {
				t.Errorf("String() = %q, want %q", s, tt.canon)
			}
			again, err := Parse(got.String())
			if err != nil {
				t.Fatalf("canonical text %q does not parse: %v", got.String(), err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("round trip through %q changed the schema (-first +second):\n%s", got.String(), diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		text string
		want string
		col  int
	}{
		{"", `bad schema "": expected a schema at column 1`, 1},
		{"   ", `bad schema "   ": expected a schema at column 4`, 4},
		{"[str", `bad schema "[str": expected ']' at column 5`, 5},
		{"[", `bad schema "[": expected a schema at column 2`, 2},
		{"[]", `bad schema "[]": expected a schema, found ']' at column 2`, 2},
		{"[str,int]", `bad schema "[str,int]": expected ']', found ',' at column 5`, 5},
		{"{", `bad schema "{": expected a key name at column 2`, 2},
		{"{}", `bad schema "{}": expected a key name, found '}' at column 2`, 2},
		{"{host}", `bad schema "{host}": expected ':', found '}' at column 6`, 6},
		{"{host str}", `bad schema "{host str}": expected ':', found 's' at column 7`, 7},
		{"{host:}", `bad schema "{host:}": expected a schema, found '}' at column 7`, 7},
		{"{host: str", `bad schema "{host: str": expected ',' or '}' at column 11`, 11},
		{"{host: str port: int}", `bad schema "{host: str port: int}": expected ',' or '}', found 'p' at column 12`, 12},
		{"{host: str,}", `bad schema "{host: str,}": expected a key name, found '}' at column 12`, 12},
		{"{1a: str}", `bad schema "{1a: str}": expected a key name, found '1' at column 2`, 2},
		{"{-a: str}", `bad schema "{-a: str}": expected a key name, found '-' at column 2`, 2},
		{`{"a": str}`, `bad schema "{\"a\": str}": expected a key name, found '"' at column 2`, 2},
		{"{a: int, a: str}", `bad schema "{a: int, a: str}": duplicate key "a" at column 10`, 10},
		{"string", `bad schema "string": unknown type "string" (want str, int, float, bool, [T] or {k: T}) at column 1`, 1},
		{"[ integer]", `bad schema "[ integer]": unknown type "integer" (want str, int, float, bool, [T] or {k: T}) at column 3`, 3},
		{"Str", `bad schema "Str": unknown type "Str" (want str, int, float, bool, [T] or {k: T}) at column 1`, 1},
		{"!", `bad schema "!": expected a schema, found '!' at column 1`, 1},
		{"!str", `bad schema "!str": expected a schema, found '!' at column 1`, 1},
		{"str!!", `bad schema "str!!": unexpected '!' after the schema at column 5`, 5},
		{"str int", `bad schema "str int": unexpected 'i' after the schema at column 5`, 5},
		{"str]", `bad schema "str]": unexpected ']' after the schema at column 4`, 4},
		{"[str]]", `bad schema "[str]]": unexpected ']' after the schema at column 6`, 6},
		{"{a: int}}", `bad schema "{a: int}}": unexpected '}' after the schema at column 9`, 9},
		{"str?", `bad schema "str?": unexpected '?' after the schema at column 4`, 4},
		{"str! !", `bad schema "str! !": unexpected '!' after the schema at column 6`, 6},
		// Columns count runes, not bytes.
		{"{é: str}", `bad schema "{é: str}": expected a key name, found 'é' at column 2`, 2},
		{"[é]", `bad schema "[é]": expected a schema, found 'é' at column 2`, 2},
		{"{a: str, b: é}", `bad schema "{a: str, b: é}": expected a schema, found 'é' at column 13`, 13},
		{"[str] é", `bad schema "[str] é": unexpected 'é' after the schema at column 7`, 7},
		{strings.Repeat("[", 100) + "str" + strings.Repeat("]", 100),
			`bad schema "` + strings.Repeat("[", 100) + "str" + strings.Repeat("]", 100) + `": nesting deeper than 64 levels at column 65`, 65},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			s, err := Parse(tt.text)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.text, s)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %s\nwant    %s", err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, want *ParseError", err)
			}
			if pe.Column != tt.col || pe.Text != tt.text {
				t.Errorf("ParseError{Text: %q, Column: %d}, want {%q, %d}", pe.Text, pe.Column, tt.text, tt.col)
			}
			if !errors.Is(err, ErrBadSchema) {
				t.Errorf("error does not unwrap to ErrBadSchema")
			}
		})
	}
}

func TestNestingLimit(t *testing.T) {
	// The limit must not refuse reasonable depth, objects and lists alike.
	deep := strings.Repeat("[", maxDepth-1) + "int" + strings.Repeat("]", maxDepth-1)
	if _, err := Parse(deep); err != nil {
		t.Errorf("Parse of %d nested lists: %v", maxDepth-1, err)
	}
	obj := strings.Repeat("{a: ", maxDepth) + "int" + strings.Repeat("}", maxDepth)
	if _, err := Parse(obj); err == nil {
		t.Errorf("Parse of %d nested objects succeeded, want the nesting error", maxDepth)
	}
}

func TestMustParse(t *testing.T) {
	if got := MustParse("[int]!").String(); got != "[int]!" {
		t.Errorf("MustParse(\"[int]!\").String() = %q", got)
	}
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, ErrBadSchema) {
			t.Errorf("MustParse(\"[int\") panicked with %v, want a *ParseError", r)
		}
	}()
	MustParse("[int")
}

func TestKindString(t *testing.T) {
	tests := map[Kind]string{Str: "str", Int: "int", Float: "float", Bool: "bool", List: "list", Object: "object", Kind(9): "Kind(9)", Kind(-1): "Kind(-1)"}
	for k, want := range tests {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

func TestTextMarshaling(t *testing.T) {
	var s Schema
	if err := s.UnmarshalText([]byte("{host: str!, port: int}")); err != nil {
		t.Fatalf("UnmarshalText: %v", err)
	}
	b, err := s.MarshalText()
	if err != nil || string(b) != "{host: str!, port: int}" {
		t.Errorf("MarshalText() = %q, %v", b, err)
	}
	if err := s.UnmarshalText([]byte("{host")); !errors.Is(err, ErrBadSchema) {
		t.Errorf("UnmarshalText of bad text = %v, want ErrBadSchema", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"str", "int!", "float", "bool", "[str]!", "{host: str!, port: int}",
		"[{host: str!, port: int}]!", "{a: [int], b: {c: bool}}", " { a : str ! } ! ",
		"[str", "{a: int, a: int}", "str!!", "{é: str}", "{}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %T, want *ParseError", text, err)
			}
			if pe.Column < 1 || pe.Column > len([]rune(text))+1 {
				t.Fatalf("Parse(%q) column %d out of range", text, pe.Column)
			}
			return
		}
		canon := s.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) ok but canonical %q fails: %v", text, canon, err)
		}
		if diff := cmp.Diff(s, again); diff != "" {
			t.Fatalf("round trip of %q through %q differs:\n%s", text, canon, diff)
		}
		if again.String() != canon {
			t.Fatalf("canonical text not stable: %q then %q", canon, again.String())
		}
	})
}
