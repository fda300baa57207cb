package tags

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	valid := []struct {
		in         string
		key, value string
	}{
		{"env1", "env1", ""},
		{"env1=", "env1", ""},
		{"role=db", "role", "db"},
		{"k=a=b", "k", "a=b"},
		{"node/x:y.z-w_1=10.0.0.1", "node/x:y.z-w_1", "10.0.0.1"},
		{"_x=é", "_x", "é"},
		{"9=:/-.", "9", ":/-."},
		{"A=B", "A", "B"},
	}
	for _, tc := range valid {
		t.Run(tc.in, func(t *testing.T) {
			k, v, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if k != tc.key || v != tc.value {
				t.Errorf("Parse(%q) = %q, %q; want %q, %q", tc.in, k, v, tc.key, tc.value)
			}
		})
	}

	invalid := []struct {
		in, err string
	}{
		{"", `invalid tag "": tag is empty`},
		{"=v", `invalid tag "=v": key is empty`},
		{".a", `invalid tag ".a": key must start with a letter, digit or '_', not '.'`},
		{"-a", `invalid tag "-a": key must start with a letter, digit or '_', not '-'`},
		{"é", `invalid tag "é": key must start with a letter, digit or '_', not 'é'`},
		{" a", `invalid tag " a": key must start with a letter, digit or '_', not ' '`},
		{"a b", `invalid tag "a b": ' ' is not allowed in a key (letters, digits and _ . : / - are)`},
		{"a,b", `invalid tag "a,b": ',' is not allowed in a key (letters, digits and _ . : / - are)`},
		{"a*", `invalid tag "a*": '*' is not allowed in a key (letters, digits and _ . : / - are)`},
		{"a!", `invalid tag "a!": '!' is not allowed in a key (letters, digits and _ . : / - are)`},
		{"k=a b", `invalid tag "k=a b": ' ' is not allowed in a value`},
		{"k=a\tb", `invalid tag "k=a\tb": '\t' is not allowed in a value (control character)`},
		{"k=a\nb", `invalid tag "k=a\nb": '\n' is not allowed in a value (control character)`},
		{"k=a\r", `invalid tag "k=a\r": '\r' is not allowed in a value (control character)`},
		{"k=a\u0085", `invalid tag "k=a\u0085": '\u0085' is not allowed in a value (control character)`},
		{"k=\u009b2J", `invalid tag "k=\u009b2J": '\u009b' is not allowed in a value (control character)`},
		{"k\x1b=a", `invalid tag "k\x1b=a": '\x1b' is not allowed in a key (letters, digits and _ . : / - are)`},
		{"\tk=a", `invalid tag "\tk=a": key must start with a letter, digit or '_', not '\t'`},
		{"k=a\x1b[2Jb", `invalid tag "k=a\x1b[2Jb": '\x1b' is not allowed in a value (control character)`},
		{"k=a\x00", `invalid tag "k=a\x00": '\x00' is not allowed in a value (control character)`},
		{"k=a\u00a0b", `invalid tag "k=a\u00a0b": '\u00a0' is not allowed in a value`},
		{"k=a,b", `invalid tag "k=a,b": ',' is not allowed in a value`},
		{"k=a&b", `invalid tag "k=a&b": '&' is not allowed in a value`},
		{"k=a|b", `invalid tag "k=a|b": '|' is not allowed in a value`},
		{"k=(x)", `invalid tag "k=(x)": '(' is not allowed in a value`},
		{"k=x)", `invalid tag "k=x)": ')' is not allowed in a value`},
		{"k=!x", `invalid tag "k=!x": '!' is not allowed in a value`},
		{"k=*", `invalid tag "k=*": '*' is not allowed in a value (k=* is only a wildcard in tag expressions)`},
		{"k=a*", `invalid tag "k=a*": '*' is not allowed in a value (k=* is only a wildcard in tag expressions)`},
		{"k=\xff", `invalid tag "k=\xff": value is not valid UTF-8`},
	}
	for _, tc := range invalid {
		t.Run(tc.in, func(t *testing.T) {
			k, v, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, %q; want error %s", tc.in, k, v, tc.err)
			}
			if err.Error() != tc.err {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tc.in, err, tc.err)
			}
			if !errors.Is(err, ErrInvalidTag) {
				t.Errorf("Parse(%q) error %v does not wrap ErrInvalidTag", tc.in, err)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	tests := []struct {
		name  string
		items []string
		want  Set
		err   string
	}{
		{name: "nil", items: nil, want: Set{}},
		{name: "one label", items: []string{"env1"}, want: Set{"env1": ""}},
		{name: "comma list", items: []string{"env1,role=db"}, want: Set{"env1": "", "role": "db"}},
		{name: "several items", items: []string{"env1", "role=db,zone=a"}, want: Set{"env1": "", "role": "db", "zone": "a"}},
		{name: "spaces trimmed", items: []string{" env1, role=db ,"}, want: Set{"env1": "", "role": "db"}},
		{name: "empty items ignored", items: []string{"", ",,", "a", " "}, want: Set{"a": ""}},
		{name: "same tag twice", items: []string{"env1", "env1="}, want: Set{"env1": ""}},
		{name: "conflicting values", items: []string{"env=1", "env=2"}, err: `invalid tag "env=2": key "env" is already given as "env=1"`},
		{name: "conflict with label", items: []string{"env,env=2"}, err: `invalid tag "env=2": key "env" is already given as "env"`},
		{name: "malformed item", items: []string{"ok", "a b"}, err: `invalid tag "a b": ' ' is not allowed in a key (letters, digits and _ . : / - are)`},
		{name: "malformed in list", items: []string{"ok,k=*"}, err: `invalid tag "k=*": '*' is not allowed in a value (k=* is only a wildcard in tag expressions)`},
		{name: "line break inside", items: []string{"k=a\nb"}, err: `invalid tag "k=a\nb": '\n' is not allowed in a value (control character)`},
		{name: "line break at the end", items: []string{"ok,k=a\n"}, err: `invalid tag "k=a\n": '\n' is not allowed in a value (control character)`},
		{name: "tab at the start", items: []string{"\tk=a"}, err: `invalid tag "\tk=a": key must start with a letter, digit or '_', not '\t'`},
		{name: "carriage return at the end", items: []string{"k=a\r, b"}, err: `invalid tag "k=a\r": '\r' is not allowed in a value (control character)`},
		{name: "empty key in list", items: []string{"a,=b"}, err: `invalid tag "=b": key is empty`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseList(tc.items)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("ParseList(%q) = %v, %v; want error %s", tc.items, got, err, tc.err)
				}
				if !errors.Is(err, ErrInvalidTag) {
					t.Errorf("error %v does not wrap ErrInvalidTag", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseList(%q): %v", tc.items, err)
			}
			if got == nil || !maps.Equal(got, tc.want) {
				t.Errorf("ParseList(%q) = %#v; want %#v", tc.items, got, tc.want)
			}
		})
	}
}

func TestSetStrings(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		want []string
	}{
		{"nil", nil, []string{}},
		{"empty", Set{}, []string{}},
		{"sorted by key", Set{"zone": "a", "env1": "", "resource": "db1", "b": "=x"}, []string{"b==x", "env1", "resource=db1", "zone=a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.set.Strings()
			if got == nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Strings() = %#v; want %#v", got, tc.want)
			}
			for _, s := range got {
				k, v, err := Parse(s)
				if err != nil {
					t.Fatalf("Parse(%q) of a rendered tag: %v", s, err)
				}
				if want, ok := tc.set[k]; !ok || want != v {
					t.Errorf("Parse(%q) = %q, %q; the set has %q=%q", s, k, v, k, want)
				}
			}
			back, err := ParseList([]string{tc.set.String()})
			if err != nil {
				t.Fatalf("ParseList(%q): %v", tc.set.String(), err)
			}
			if !maps.Equal(back, tc.set) {
				t.Errorf("ParseList(String()) = %v; want %v", back, tc.set)
			}
		})
	}
	if got, want := (Set{"b": "2", "a": ""}).String(), "a,b=2"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

func TestSetClone(t *testing.T) {
	if got := Set(nil).Clone(); got != nil {
		t.Errorf("nil.Clone() = %#v; want nil", got)
	}
	orig := Set{"env": "1", "db": ""}
	c := orig.Clone()
	if !maps.Equal(c, orig) {
		t.Fatalf("Clone() = %v; want %v", c, orig)
	}
	c["env"] = "2"
	c["new"] = ""
	if orig["env"] != "1" || len(orig) != 2 {
		t.Errorf("changing the clone changed the original: %v", orig)
	}
}
