package tags

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// universe returns every set over keys a, b and c where each key is absent,
// empty, "1" or "2": enough to tell k, k=v, k=* and their negations apart.
func universe() []Set {
	states := []string{"absent", "", "1", "2"}
	var sets []Set
	for _, a := range states {
		for _, b := range states {
			for _, c := range states {
				s := Set{}
				for k, v := range map[string]string{"a": a, "b": b, "c": c} {
					if v != "absent" {
						s[k] = v
					}
				}
				sets = append(sets, s)
			}
		}
	}
	return sets
}

func has(s Set, k, v string) bool {
	got, ok := s[k]
	return ok && got == v
}

func present(s Set, k string) bool {
	_, ok := s[k]
	return ok
}

// TestParseExprMatch checks each expression's canonical form and its whole
// truth table against a hand-written predicate.
func TestParseExprMatch(t *testing.T) {
	tests := []struct {
		in    string
		canon string
		want  func(Set) bool
	}{
		{"a=1", "a=1", func(s Set) bool { return has(s, "a", "1") }},
		{"a", "a", func(s Set) bool { return has(s, "a", "") }},
		{"a=", "a", func(s Set) bool { return has(s, "a", "") }},
		{"a=*", "a=*", func(s Set) bool { return present(s, "a") }},
		{"!a=*", "!a=*", func(s Set) bool { return !present(s, "a") }},
		{"!a=1", "!a=1", func(s Set) bool { return !has(s, "a", "1") }},
		{"!!a", "!!a", func(s Set) bool { return has(s, "a", "") }},
		{"a=1 & b=2", "a=1 & b=2", func(s Set) bool { return has(s, "a", "1") && has(s, "b", "2") }},
		{"a=1 | b=2", "a=1 | b=2", func(s Set) bool { return has(s, "a", "1") || has(s, "b", "2") }},
		// & binds tighter than |, on either side.
		{"a=1 | b=1 & c=1", "a=1 | b=1 & c=1", func(s Set) bool { return has(s, "a", "1") || has(s, "b", "1") && has(s, "c", "1") }},
		{"a=1 & b=1 | c=1", "a=1 & b=1 | c=1", func(s Set) bool { return has(s, "a", "1") && has(s, "b", "1") || has(s, "c", "1") }},
		// Parentheses override it.
		{"(a=1 | b=1) & c=1", "(a=1 | b=1) & c=1", func(s Set) bool { return (has(s, "a", "1") || has(s, "b", "1")) && has(s, "c", "1") }},
		{"a=1 & (b=1 | c=1)", "a=1 & (b=1 | c=1)", func(s Set) bool { return has(s, "a", "1") && (has(s, "b", "1") || has(s, "c", "1")) }},
		// ! binds tighter than & and |.
		{"!a & b", "!a & b", func(s Set) bool { return !has(s, "a", "") && has(s, "b", "") }},
		{"!a | b", "!a | b", func(s Set) bool { return !has(s, "a", "") || has(s, "b", "") }},
		{"!(a | b)", "!(a | b)", func(s Set) bool { return !(has(s, "a", "") || has(s, "b", "")) }},
		{"!(a & b=*)", "!(a & b=*)", func(s Set) bool { return !(has(s, "a", "") && present(s, "b")) }},
		// Redundant parentheses and nesting disappear from the canonical form.
		{"(a)", "a", func(s Set) bool { return has(s, "a", "") }},
		{"((!(a)))", "!a", func(s Set) bool { return !has(s, "a", "") }},
		{"(a & b) & c", "a & b & c", func(s Set) bool { return has(s, "a", "") && has(s, "b", "") && has(s, "c", "") }},
		{"a | (b | c)", "a | b | c", func(s Set) bool { return has(s, "a", "") || has(s, "b", "") || has(s, "c", "") }},
		{"(a & b) | (c)", "a & b | c", func(s Set) bool { return has(s, "a", "") && has(s, "b", "") || has(s, "c", "") }},
		{"a=2 & (b=* | !(c=1 & a))", "a=2 & (b=* | !(c=1 & a))", func(s Set) bool {
			return has(s, "a", "2") && (present(s, "b") || !(has(s, "c", "1") && has(s, "a", "")))
		}},
		// Whitespace is allowed anywhere between tokens, and none is needed.
		{"a=1&b=2|!c", "a=1 & b=2 | !c", func(s Set) bool { return has(s, "a", "1") && has(s, "b", "2") || !has(s, "c", "") }},
		{" \t( a=1 |\nb )\u00a0& ! c=* ", "(a=1 | b) & !c=*", func(s Set) bool { return (has(s, "a", "1") || has(s, "b", "")) && !present(s, "c") }},
		{"a=1&b", "a=1 & b", func(s Set) bool { return has(s, "a", "1") && has(s, "b", "") }},
		// '=' inside a value is literal (but a value cannot start with it:
		// "a==1" is a mistake, refused in TestParseExprErrors).
		{"a=1=2", "a=1=2", func(s Set) bool { return has(s, "a", "1=2") }},
		{"a=* & a=1", "a=* & a=1", func(s Set) bool { return has(s, "a", "1") }},
		{strings.Repeat("!", maxDepth) + "a", strings.Repeat("!", maxDepth) + "a", func(s Set) bool { return has(s, "a", "") }},
	}
	sets := universe()
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseExpr(tc.in)
			if err != nil {
				t.Fatalf("ParseExpr(%q): %v", tc.in, err)
			}
			if got := e.String(); got != tc.canon {
				t.Errorf("String() = %q; want %q", got, tc.canon)
			}
			for _, s := range sets {
				if got, want := e.Match(s), tc.want(s); got != want {
					t.Errorf("Match(%v) = %v; want %v", s, got, want)
				}
			}
		})
	}
}

func TestMatchRealTags(t *testing.T) {
	db := Set{"resource": "mariadb", "env1": "", "role": "db", "node": "node1"}
	web := Set{"resource": "web", "env": "prod", "role": "web"}
	tests := []struct {
		expr string
		want map[string]bool // resource -> matches
	}{
		{"env1", map[string]bool{"mariadb": true, "web": false}},
		{"env=prod | env1", map[string]bool{"mariadb": true, "web": true}},
		{"role=db & node=*", map[string]bool{"mariadb": true, "web": false}},
		{"!node=*", map[string]bool{"mariadb": false, "web": true}},
		{"resource=web", map[string]bool{"mariadb": false, "web": true}},
		{"env", map[string]bool{"mariadb": false, "web": false}},
		{"role", map[string]bool{"mariadb": false, "web": false}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := ParseExpr(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []Set{db, web} {
				if got := e.Match(s); got != tc.want[s["resource"]] {
					t.Errorf("Match(%v) = %v; want %v", s, got, !got)
				}
			}
		})
	}
}

func TestNilExprMatchesEverything(t *testing.T) {
	var e *Expr
	for _, s := range []Set{nil, {}, {"a": "1"}} {
		if !e.Match(s) {
			t.Errorf("nil Expr does not match %v", s)
		}
	}
	if e.String() != "" || e.Required() != nil {
		t.Errorf("nil Expr: String() = %q, Required() = %v; want \"\", nil", e.String(), e.Required())
	}
}

func TestParseExprErrors(t *testing.T) {
	tests := []struct {
		in  string
		col int
		msg string
	}{
		{"", 1, "expression is empty"},
		{" \t ", 1, "expression is empty"},
		// Missing operands.
		{"env=1 &", 8, "expected a tag after '&'"},
		{"a | ", 5, "expected a tag after '|'"},
		{"a\t&", 4, "expected a tag after '&'"},
		{"!", 2, "expected a tag after '!'"},
		{"(", 2, "expected a tag after '('"},
		{"& a", 1, "expected a tag, found '&'"},
		{"| a", 1, "expected a tag, found '|'"},
		{")", 1, "expected a tag, found ')'"},
		{"a & | b", 5, "expected a tag after '&', found '|'"},
		{"a & & b", 5, "expected a tag after '&', found '&'"},
		{"!)", 2, "expected a tag after '!', found ')'"},
		{"()", 2, "expected a tag after '(', found ')'"},
		{"a | (b &)", 9, "expected a tag after '&', found ')'"},
		{"a &&b", 3, "'&&' is not an operator: write a single '&'"},
		{"a || b", 3, "'||' is not an operator: write a single '|'"},
		{"env==stg", 5, "'==' is not an operator: a tag test is k=v, with one '='"},
		// Missing operators.
		{"a b", 3, `missing '&' or '|' before "b"`},
		{"a=1 b=2", 5, `missing '&' or '|' before "b=2"`},
		{"a (b)", 3, "missing '&' or '|' before '('"},
		{"a !b", 3, "missing '&' or '|' before '!'"},
		{"k=a!b", 4, "missing '&' or '|' before '!'"},
		{"(a b)", 4, `missing '&' or '|' before "b"`},
		{"k= v", 4, `missing '&' or '|' before "v" (no spaces are allowed after '=')`},
		// Parentheses.
		{"(a | b", 1, "unclosed '('"},
		{"a & (b | (c)", 5, "unclosed '('"},
		{"a)", 2, "unmatched ')'"},
		{"(a))", 4, "unmatched ')'"},
		// Malformed terms.
		{"env = 1", 5, "unexpected '=': write a tag as k=v, without spaces"},
		{"=1", 1, "missing tag key before '='"},
		{"a & =1", 5, "missing tag key before '='"},
		{"a,b", 2, "',' does not combine tags in an expression: use '&' or '|'"},
		{"k=a,b", 4, "',' does not combine tags in an expression: use '&' or '|'"},
		{"k=*,b", 4, "',' does not combine tags in an expression: use '&' or '|'"},
		{",a", 1, "',' does not combine tags in an expression: use '&' or '|'"},
		{"k=*x", 3, "'*' must be the whole value, as in k=*"},
		{"k=**", 3, "'*' must be the whole value, as in k=*"},
		{"k=a*", 4, "'*' must be the whole value, as in k=*"},
		{"k=\x1b[2J", 3, `'\x1b' is not allowed in a tag value (control character)`},
		{"k=a\x00", 4, `'\x00' is not allowed in a tag value (control character)`},
		{"k=*\x1b", 4, `'\x1b' is not allowed in a tag value (control character)`},
		{"*", 1, "'*' is only a whole value, as in k=*"},
		{"a & *=1", 5, "'*' is only a whole value, as in k=*"},
		{"a*", 2, "'*' is only a whole value, as in k=*"},
		{"a$b", 2, "'$' is not allowed in a tag key (letters, digits and _ . : / - are)"},
		{"$a", 1, "'$' cannot start a tag: keys start with a letter, digit or '_'"},
		{".a", 1, "'.' cannot start a tag: keys start with a letter, digit or '_'"},
		{"é=1", 1, "'é' cannot start a tag: keys start with a letter, digit or '_'"},
		// Columns count characters, not bytes.
		{"k=é & x$", 8, "'$' is not allowed in a tag key (letters, digits and _ . : / - are)"},
		{"k=\xff", 3, "invalid UTF-8"},
		{"\xff", 1, "invalid UTF-8"},
		{strings.Repeat("(", maxDepth+1) + "a", maxDepth + 1, fmt.Sprintf("expression nests more than %d levels deep", maxDepth)},
		{strings.Repeat("!", maxDepth+1) + "a", maxDepth + 1, fmt.Sprintf("expression nests more than %d levels deep", maxDepth)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseExpr(tc.in)
			if err == nil {
				t.Fatalf("ParseExpr(%q) = %q; want error", tc.in, e)
			}
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v (%T) is not an *ExprError", err, err)
			}
			if ee.Expr != tc.in || ee.Col != tc.col || ee.Msg != tc.msg {
				t.Errorf("got {Col: %d, Msg: %q}; want {Col: %d, Msg: %q}", ee.Col, ee.Msg, tc.col, tc.msg)
			}
			if !errors.Is(err, ErrBadExpr) {
				t.Errorf("error %v does not wrap ErrBadExpr", err)
			}
		})
	}
}

func TestExprErrorMessage(t *testing.T) {
	_, err := ParseExpr("env=1 &")
	want := `bad tag expression "env=1 &": expected a tag after '&' at column 8`
	if err == nil || err.Error() != want {
		t.Errorf("ParseExpr error:\n got %v\nwant %s", err, want)
	}
}

// TestStringRoundTrip checks that the canonical form re-parses to an
// expression with the same truth table and the same canonical form.
func TestStringRoundTrip(t *testing.T) {
	exprs := []string{
		"a", "a=1", "a=*", "!a", "!!a=*",
		"a | b & c", "(a | b) & c", "a & (b | c) & !c=*",
		"!(a | b) | !(a & b)", "((a | b) & (b=1 | c=2)) | !(!a & c=*)",
		"a & (b | (c & (a=1 | b=2)))", "a=x=y | b=c=",
		" ( a ) & ( ( b ) ) ",
	}
	sets := universe()
	for _, in := range exprs {
		t.Run(in, func(t *testing.T) {
			e, err := ParseExpr(in)
			if err != nil {
				t.Fatalf("ParseExpr(%q): %v", in, err)
			}
			canon := e.String()
			e2, err := ParseExpr(canon)
			if err != nil {
				t.Fatalf("ParseExpr(String() = %q): %v", canon, err)
			}
			if got := e2.String(); got != canon {
				t.Errorf("String() is not stable: %q then %q", canon, got)
			}
			for _, s := range sets {
				if e.Match(s) != e2.Match(s) {
					t.Errorf("%q and its String() %q disagree on %v", in, canon, s)
				}
			}
		})
	}
}

func TestRequired(t *testing.T) {
	tests := []struct {
		in   string
		want [][2]string
	}{
		{"a=1", [][2]string{{"a", "1"}}},
		{"a", [][2]string{{"a", ""}}},
		{"a=*", [][2]string{{"a", "*"}}},
		{"(a=1)", [][2]string{{"a", "1"}}},
		{"a=1 & b=* & !c", [][2]string{{"a", "1"}, {"b", "*"}}},
		{"(a & b) & c", [][2]string{{"a", ""}, {"b", ""}, {"c", ""}}},
		{"a & (b | c)", [][2]string{{"a", ""}}},
		{"a & a & a=*", [][2]string{{"a", ""}, {"a", "*"}}},
		{"a | b", nil},
		{"a & b | c", nil},
		{"!a", nil},
		{"!a & !b=*", nil},
		{"(a | b) & !c", nil},
	}
	sets := universe()
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseExpr(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := e.Required()
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("Required() = %#v; want %#v", got, tc.want)
			}
			// The contract an index relies on: every match carries every
			// required term.
			for _, s := range sets {
				if !e.Match(s) {
					continue
				}
				for _, kv := range got {
					if kv[1] == "*" && !present(s, kv[0]) || kv[1] != "*" && !has(s, kv[0], kv[1]) {
						t.Errorf("%v matches but lacks required %s=%s", s, kv[0], kv[1])
					}
				}
			}
		})
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	e, err := ParseExpr("(env=prod | env=stage) & role=db & !maintenance & node=*")
	if err != nil {
		t.Fatal(err)
	}
	s := Set{"env": "stage", "role": "db", "node": "n1", "resource": "db1"}
	var matched bool
	allocs := testing.AllocsPerRun(100, func() { matched = e.Match(s) })
	if !matched {
		t.Fatal("sample set should match")
	}
	if allocs != 0 {
		t.Errorf("Match allocates %v times per call; want 0", allocs)
	}
}

func FuzzParseExpr(f *testing.F) {
	for _, seed := range []string{
		"env=1 & role=db",
		"!(a | b=*) & c",
		"a=1 | b & !(c=x=y)",
		"((a)) | !!b",
		"env = 1",
		"k=é|x",
		"a &&",
		"",
	} {
		f.Add(seed)
	}
	sets := universe()
	f.Fuzz(func(t *testing.T, in string) {
		e, err := ParseExpr(in)
		if err != nil {
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("ParseExpr(%q) error %v is %T, not *ExprError", in, err, err)
			}
			if ee.Col < 1 || ee.Col > utf8.RuneCountInString(in)+1 {
				t.Fatalf("ParseExpr(%q): column %d outside 1..%d", in, ee.Col, utf8.RuneCountInString(in)+1)
			}
			return
		}
		canon := e.String()
		e2, err := ParseExpr(canon)
		if err != nil {
			t.Fatalf("ParseExpr(%q).String() = %q does not parse: %v", in, canon, err)
		}
		if got := e2.String(); got != canon {
			t.Fatalf("String() not stable for %q: %q then %q", in, canon, got)
		}
		for _, s := range sets {
			if e.Match(s) != e2.Match(s) {
				t.Fatalf("%q and %q disagree on %v", in, canon, s)
			}
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	set := Set{"resource": "mariadb", "env": "prod", "role": "db", "node": "node1", "zone": "a", "env1": ""}
	shapes := []struct{ name, expr string }{
		{"terms=1", "env=prod"},
		{"terms=4/and", "env=prod & role=db & node=* & !maintenance"},
		{"terms=4/or-miss", "env=stage | env=dev | role=web | zone=b"},
		{"terms=6/nested", "(env=prod | env=stage) & (role=db | role=cache) & !(zone=b & node=*)"},
	}
	for _, sh := range shapes {
		e, err := ParseExpr(sh.expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(sh.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Match(set)
			}
		})
	}
}

// -t given twice means the union everywhere.
func TestParseAnyIsTheUnion(t *testing.T) {
	e, err := ParseAny([]string{"env=a", "env=b | role=db", "x & y"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set  Set
		want bool
	}{
		{Set{"env": "a"}, true},
		{Set{"env": "b"}, true},
		{Set{"role": "db"}, true},
		{Set{"x": "", "y": ""}, true},
		{Set{"x": ""}, false},
		{Set{"env": "c"}, false},
	} {
		if got := e.Match(tc.set); got != tc.want {
			t.Errorf("Match(%v) = %v, want %v", tc.set, got, tc.want)
		}
	}
	if got := e.String(); got != "env=a | env=b | role=db | x & y" {
		t.Errorf("String() = %q", got)
	}
	if e, err := ParseAny(nil); e != nil || err != nil {
		t.Errorf("ParseAny(nil) = %v, %v; want nil, nil", e, err)
	}
	if _, err := ParseAny([]string{"a", "env==x"}); err == nil || !strings.Contains(err.Error(), `"env==x"`) {
		t.Errorf("err = %v, want it to name the bad expression", err)
	}
}
