package resources

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"
)

// entries returns n composition entries, each made by entry(i).
func entries(n int, entry func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(entry(i))
	}
	return b.String()
}

func chainEntry(i int) string {
	return fmt.Sprintf("  - id: r%d\n    from: ./noop\n    input: {value: \"r%d::value\"}\n", i+1, i)
}

// wholeParse is what parseComposition must always agree with.
func wholeParse(raw []byte) (compFile, error) {
	var f compFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	err := dec.Decode(&f)
	return f, err
}

// TestSplitParsesAsWhole: a composition parsed in parts decodes to the
// nodes, lines included, that parsing it whole gives; one that cannot be
// cut safely, or whose parts do not parse, is parsed whole (and fails as a
// whole).
func TestSplitParsesAsWhole(t *testing.T) {
	const n = 12
	tests := []struct {
		name string
		doc  string
		cut  bool // split cuts it
	}{
		{"chain", "resources:\n" + entries(n, chainEntry), true},
		{"comments and events", "# a chain\n\nresources:\n# first\n" + entries(n, func(i int) string {
			return chainEntry(i) + "# after r" + fmt.Sprint(i+1) + "\n\n"
		}) + "events:\n  - on r1.run changed r2.run\n  - after r3.run r4.run\n", true},
		{"entries at column 0", "resources:\n" + entries(n, func(i int) string { return fmt.Sprintf("- id: r%d\n  from: b\n", i) }), true},
		{"block text", "resources:\n" + entries(n, func(i int) string {
			return fmt.Sprintf("  - id: r%d\n    from: b\n    input:\n      text: |\n        - not an entry\n        line %d\n", i, i)
		}), true},
		{"anchor used in another part", "resources:\n  - id: r0\n    from: &b ./b\n" + entries(n, func(i int) string { return fmt.Sprintf("  - id: r%d\n    from: *b\n", i+1) }), true},
		{"quoted text over a cut", "resources:\n" + entries(n, func(i int) string {
			if i == n/2-1 {
				return fmt.Sprintf("  - id: r%d\n    from: \"b\n  - id: x\"\n", i)
			}
			return chainEntry(i)
		}), true},
		{"flow mapping over a cut", "resources:\n" + entries(n, func(i int) string {
			if i == n/2-1 {
				return fmt.Sprintf("  - {id: r%d,\n  - from: b}\n", i)
			}
			return chainEntry(i)
		}), true},
		{"an error in one part", "resources:\n" + entries(n, func(i int) string {
			if i == n-2 {
				return "  - id: [r\n"
			}
			return chainEntry(i)
		}), true},
		{"too few entries", "resources:\n" + entries(3, chainEntry), false},
		{"tabs", "resources:\n" + entries(n, chainEntry) + "\t\n", false},
		{"another key", "resources:\n" + entries(n, chainEntry) + "other: 1\n", false},
		{"events first", "events: []\nresources:\n" + entries(n, chainEntry), false},
		{"resources twice", "resources:\n" + entries(n, chainEntry) + "resources:\n" + entries(n, chainEntry), false},
		{"text before the first entry", "resources:\n  x\n" + entries(n, chainEntry), false},
		{"an entry indented more", "resources:\n" + entries(n, chainEntry) + "    - id: y\n", true},
		{"two documents", "resources:\n" + entries(n, chainEntry) + "---\nresources: []\n", false},
		{"flow list", "resources: [" + strings.Repeat("{id: a, from: b},", n) + "]\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.doc)
			_, _, cut := split(raw, 3, n/2)
			if cut != tt.cut {
				t.Fatalf("split cut it: %v, want %v", cut, tt.cut)
			}
			want, wantErr := wholeParse(raw)
			var got compFile
			var gotErr error
			if parts, shifts, ok := split(raw, 3, n/2); ok {
				var parsed bool
				if got, parsed = parseParts(parts, shifts); !parsed {
					got, gotErr = wholeParse(raw)
				}
			} else {
				got, gotErr = wholeParse(raw)
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, parsed whole %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(want, got, ignoreComments); diff != "" {
				t.Errorf("parsed in parts (-whole +parts):\n%s", diff)
			}
		})
	}
}

// ignoreComments: comments around a cut attach to other nodes; nothing
// reads them.
var ignoreComments = cmpopts.IgnoreFields(yaml.Node{}, "HeadComment", "LineComment", "FootComment")

// TestParseCompositionInParts: a big composition is parsed in parts (with
// two or more cores), to what parsing it whole gives.
func TestParseCompositionInParts(t *testing.T) {
	raw := []byte("resources:\n" + entries(minSplit, chainEntry) + "events:\n  - after r1.run r2.run\n")
	parts, shifts, ok := split(raw, 2, minSplit)
	if !ok || len(parts) != 2 {
		t.Fatalf("split: %d parts, %v", len(parts), ok)
	}
	got, ok := parseParts(parts, shifts)
	if !ok {
		t.Fatal("the parts do not parse")
	}
	want, err := wholeParse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed in parts (-whole +parts):\n%s", diff)
	}
	if f, err := parseComposition(raw); err != nil || !cmp.Equal(f, want) {
		t.Errorf("parseComposition differs from the whole: %v", err)
	}
}
