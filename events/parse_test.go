package events

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		in        string
		want      Rule
		canonical string
	}{
		{"on a.run changed b.run", Rule{React, Ref{"a", "run"}, Changed, Ref{"b", "run"}}, ""},
		{"on a.run ok b.reload", Rule{React, Ref{"a", "run"}, OK, Ref{"b", "reload"}}, ""},
		{"on a.run success b.run", Rule{React, Ref{"a", "run"}, Success, Ref{"b", "run"}}, ""},
		{"on a.run failed b.run", Rule{React, Ref{"a", "run"}, Failed, Ref{"b", "run"}}, ""},
		{"on a.run any b.run", Rule{React, Ref{"a", "run"}, Any, Ref{"b", "run"}}, ""},
		{"after a.run b.run", Rule{After, Ref{"a", "run"}, "", Ref{"b", "run"}}, ""},
		{"after b.remove a.remove", Rule{After, Ref{"b", "remove"}, "", Ref{"a", "remove"}}, ""},
		// Dotted resource names: the action follows the last dot.
		{"on rmq.cluster.run changed rmq.1.cluster_create",
			Rule{React, Ref{"rmq.cluster", "run"}, Changed, Ref{"rmq.1", "cluster_create"}}, ""},
		{"on rmq.1.cluster_create changed rmq.2.cluster_join",
			Rule{React, Ref{"rmq.1", "cluster_create"}, Changed, Ref{"rmq.2", "cluster_join"}}, ""},
		{"after a.b.c.d.update x.y.update", Rule{After, Ref{"a.b.c.d", "update"}, "", Ref{"x.y", "update"}}, ""},
		// A resource name may end in a dot; the last dot still wins.
		{"on a..run ok b.run", Rule{React, Ref{"a.", "run"}, OK, Ref{"b", "run"}}, ""},
		{"after node-1.run db_2.update", Rule{After, Ref{"node-1", "run"}, "", Ref{"db_2", "update"}}, ""},
		{"on 0.run any 9._x1", Rule{React, Ref{"0", "run"}, Any, Ref{"9", "_x1"}}, ""},
		// Same resource, different actions is a valid rule.
		{"on a.run changed a.reload", Rule{React, Ref{"a", "run"}, Changed, Ref{"a", "reload"}}, ""},
		// Whitespace: tabs, runs, leading and trailing.
		{"on\ta.run\tchanged\tb.run", Rule{React, Ref{"a", "run"}, Changed, Ref{"b", "run"}}, "on a.run changed b.run"},
		{"   on   a.run \t changed  \t b.run  \t", Rule{React, Ref{"a", "run"}, Changed, Ref{"b", "run"}}, "on a.run changed b.run"},
		{"\tafter  a.run\t\tb.run\r\n", Rule{After, Ref{"a", "run"}, "", Ref{"b", "run"}}, "after a.run b.run"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			canonical := tt.canonical
			if canonical == "" {
				canonical = tt.in
			}
			if s := got.String(); s != canonical {
				t.Errorf("String() = %q, want %q", s, canonical)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() of a parsed rule: %v", err)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		col  int
		word string
		msg  string // substring of Error()
	}{
		{"empty", "", 1, "", "empty rule"},
		{"blank", " \t ", 1, "", "empty rule"},
		{"unknown keyword", "of a.run changed b.run", 1, "of", `expected "on" or "after", got "of"`},
		{"keyword is case sensitive", "ON a.run changed b.run", 1, "ON", `expected "on" or "after"`},
		{"keyword after spaces", "  when a.run b.run", 3, "when", `got "when"`},
		{"on alone", "on", 4, "", "missing emitter"},
		{"after alone", "after  ", 7, "", "missing emitter"},
		{"on without event", "on a.run", 10, "", "missing event"},
		{"on without subscriber", "on a.run changed", 18, "", "missing subscriber"},
		{"on with forgotten event", "on a.run b.run", 10, "b.run", `missing event before "b.run"`},
		{"unknown event", "on a.run chaged b.run", 10, "chaged", `unknown event "chaged" at column 10 (want changed, ok, success, failed, any)`},
		{"event is case sensitive", "on a.run Changed b.run", 10, "Changed", `unknown event "Changed"`},
		{"on too many words", "on a.run changed b.run c.run", 24, "c.run", `too many words: "c.run"`},
		{"on many extra words", "on a.run changed b.run c d e f", 24, "c", `too many words: "c"`},
		{"after without subscriber", "after a.run", 13, "", "missing subscriber"},
		{"after with event", "after a.run changed b.run", 13, "changed", `after rules take no event, got "changed"`},
		{"after with only an event", "after a.run ok", 13, "ok", "after rules take no event"},
		{"after too many words", "after a.run b.run c.run", 19, "c.run", `too many words: "c.run"`},
		{"missing action", "on a changed b.run", 4, "a", `missing action in "a" at column 4 (write <resource>.<action>)`},
		{"trailing dot", "on a. changed b.run", 4, "a.", `missing action in "a."`},
		{"missing subscriber action", "on a.run changed b", 18, "b", `missing action in "b"`},
		{"empty resource", "on .run changed b.run", 4, ".run", `missing resource in ".run"`},
		{"empty subscriber resource", "after a.run .run", 13, ".run", `missing resource in ".run"`},
		{"upper case resource", "on A.run changed b.run", 4, "A.run", `bad resource name "A" in "A.run"`},
		{"resource starts with underscore", "on _a.run changed b.run", 4, "_a.run", `bad resource name "_a"`},
		{"resource starts with dash", "after -a.run b.run", 7, "-a.run", `bad resource name "-a"`},
		{"bad resource character", "on a.run changed b$.run", 18, "b$.run", `bad resource name "b$"`},
		{"non-ascii resource", "on a.run changed bü.run", 18, "bü.run", `bad resource name "bü"`},
		{"upper case action", "on a.Run changed b.run", 4, "a.Run", `bad action name "Run" in "a.Run"`},
		{"action starts with digit", "on a.run changed b.9run", 18, "b.9run", `bad action name "9run"`},
		{"action with dash", "after a.run b.re-load", 13, "b.re-load", `bad action name "re-load"`},
		{"non-breaking space is not a separator", "on\u00a0a.run changed b.run", 1, "on\u00a0a.run", `expected "on" or "after"`},
		{"self rule", "on a.run changed a.run", 18, "a.run", `emitter and subscriber are the same action "a.run"`},
		{"self rule after", "after rmq.1.run rmq.1.run", 17, "rmq.1.run", "emitter and subscriber are the same action"},
		// Errors are reported left to right: the emitter before the event.
		{"first error wins", "on A.run chaged b.run", 4, "A.run", "bad resource name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.in, r)
			}
			if r != (Rule{}) {
				t.Errorf("Parse(%q) returned %#v with its error, want the zero Rule", tt.in, r)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			if !errors.Is(err, ErrBadRule) {
				t.Errorf("error does not wrap ErrBadRule: %v", err)
			}
			if pe.Col != tt.col || pe.Word != tt.word {
				t.Errorf("error at column %d word %q, want column %d word %q (%v)", pe.Col, pe.Word, tt.col, tt.word, err)
			}
			if pe.Rule != tt.in {
				t.Errorf("error names rule %q, want %q", pe.Rule, tt.in)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "bad rule ") || !strings.Contains(msg, tt.msg) {
				t.Errorf("error %q, want it to start with \"bad rule \" and contain %q", msg, tt.msg)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := Parse("on a.run chaged b.run")
	want := `bad rule "on a.run chaged b.run": unknown event "chaged" at column 10 (want changed, ok, success, failed, any)`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

func TestParseEvent(t *testing.T) {
	for _, e := range []Event{Changed, OK, Success, Failed, Any} {
		got, err := ParseEvent(string(e))
		if err != nil || got != e {
			t.Errorf("ParseEvent(%q) = %q, %v", e, got, err)
		}
	}
	for _, s := range []string{"", "Changed", "error", "created", " ok"} {
		_, err := ParseEvent(s)
		if !errors.Is(err, ErrUnknownEvent) {
			t.Errorf("ParseEvent(%q) error = %v, want ErrUnknownEvent", s, err)
		}
		if err != nil && !strings.Contains(err.Error(), "want changed, ok, success, failed, any") {
			t.Errorf("ParseEvent(%q) error %q does not list the events", s, err)
		}
	}
}

func TestMatches(t *testing.T) {
	results := []Result{ResultChanged, ResultOK, ResultFailed}
	// want[event] lists the outcome for changed, ok, failed in that order.
	want := map[Event][3]bool{
		Changed: {true, false, false},
		OK:      {false, true, false},
		Success: {true, true, false},
		Failed:  {false, false, true},
		Any:     {true, true, true},
	}
	for e, row := range want {
		for i, r := range results {
			t.Run(string(e)+"/"+r.String(), func(t *testing.T) {
				if got := e.Matches(r); got != row[i] {
					t.Errorf("%s.Matches(%s) = %v, want %v", e, r, got, row[i])
				}
			})
		}
	}
	t.Run("zero result matches nothing", func(t *testing.T) {
		for e := range want {
			if e.Matches(Result(0)) {
				t.Errorf("%s.Matches(Result(0)) = true", e)
			}
		}
	})
	t.Run("unknown event matches nothing", func(t *testing.T) {
		for _, r := range results {
			if Event("created").Matches(r) || Event("").Matches(r) {
				t.Errorf("an unknown event matched %s", r)
			}
		}
	})
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{React.String(), "on"},
		{After.String(), "after"},
		{Kind(7).String(), "Kind(7)"},
		{ResultChanged.String(), "changed"},
		{ResultOK.String(), "ok"},
		{ResultFailed.String(), "failed"},
		{Result(0).String(), "Result(0)"},
		{Ref{"rmq.1", "run"}.String(), "rmq.1.run"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	a, b := Ref{"a", "run"}, Ref{"b", "run"}
	tests := []struct {
		name string
		r    Rule
		msg  string
	}{
		{"after with event", Rule{After, a, Changed, b}, `after rules take no event, got "changed"`},
		{"react without event", Rule{React, a, "", b}, `unknown event ""`},
		{"react with unknown event", Rule{React, a, "created", b}, `unknown event "created"`},
		{"unknown kind", Rule{Kind(9), a, Changed, b}, "unknown rule kind 9"},
		{"empty resource", Rule{After, Ref{"", "run"}, "", b}, `bad resource name ""`},
		{"resource with space", Rule{After, Ref{"a b", "run"}, "", b}, `bad resource name "a b"`},
		{"action with dot", Rule{After, a, "", Ref{"b", "re.load"}}, `bad action name "re.load"`},
		{"empty action", Rule{After, a, "", Ref{"b", ""}}, `bad action name ""`},
		{"self", Rule{React, a, Any, a}, `same action "a.run"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if !errors.Is(err, ErrBadRule) {
				t.Fatalf("Validate() = %v, want ErrBadRule", err)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), tt.r.String()) {
				t.Errorf("Validate() = %q, want it to name the rule and contain %q", err, tt.msg)
			}
			if _, err := tt.r.MarshalText(); err == nil {
				t.Errorf("MarshalText accepted an invalid rule")
			}
		})
	}
}

func TestText(t *testing.T) {
	in := "on rmq.1.cluster_create changed rmq.2.cluster_join"
	var r Rule
	if err := r.UnmarshalText([]byte("  " + in + "\t")); err != nil {
		t.Fatal(err)
	}
	b, err := r.MarshalText()
	if err != nil || string(b) != in {
		t.Fatalf("MarshalText = %q, %v; want %q", b, err, in)
	}
	if err := r.UnmarshalText([]byte("on a.run")); !errors.Is(err, ErrBadRule) {
		t.Errorf("UnmarshalText of a bad rule = %v, want ErrBadRule", err)
	}
	if r.String() != in {
		t.Errorf("a failed UnmarshalText changed the rule to %q", r)
	}
}

func TestParseLines(t *testing.T) {
	t.Run("comments and blanks", func(t *testing.T) {
		in := "\ufeff# rules for the rmq cluster\n" +
			"\n" +
			"on rmq.cluster.run changed rmq.1.cluster_create   # the seed node\r\n" +
			"   \t\n" +
			"\ton rmq.1.cluster_create changed rmq.2.cluster_join\n" +
			"after a.run b.run" // no final newline
		got, err := ParseLines(strings.NewReader(in), "rules.txt")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"on rmq.cluster.run changed rmq.1.cluster_create",
			"on rmq.1.cluster_create changed rmq.2.cluster_join",
			"after a.run b.run",
		}
		if len(got) != len(want) {
			t.Fatalf("got %d rules %v, want %d", len(got), got, len(want))
		}
		for i := range want {
			if got[i].String() != want[i] {
				t.Errorf("rule %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
	t.Run("empty input", func(t *testing.T) {
		got, err := ParseLines(strings.NewReader("# nothing\n\n"), "rules.txt")
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v; want no rules", got, err)
		}
	})
	t.Run("first error wins, nothing returned", func(t *testing.T) {
		in := "on a.run changed b.run\n\n  on a.run chaged b.run # typo\non x y\n"
		got, err := ParseLines(strings.NewReader(in), "rules.txt")
		if got != nil {
			t.Errorf("got rules %v with an error", got)
		}
		want := `rules.txt:3: bad rule "  on a.run chaged b.run": unknown event "chaged" at column 12`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("error = %v\nwant prefix %s", err, want)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Word != "chaged" {
			t.Errorf("error does not unwrap to the *ParseError for \"chaged\": %#v", pe)
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		_, err := ParseLines(failingReader{boom}, "rules.txt")
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rules.txt") {
			t.Fatalf("error = %v, want it to wrap the read error and name the file", err)
		}
	})
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// randomRule builds a valid rule from the whole alphabet of names, dots
// included, so the round trip covers what a hand-written table misses.
func randomRule(rng *rand.Rand) Rule {
	const first = "abcdefghijklmnopqrstuvwxyz0123456789"
	const rest = first + "_.-"
	const actFirst = "abcdefghijklmnopqrstuvwxyz_"
	const actRest = actFirst + "0123456789"
	name := func(first, rest string) string {
		b := []byte{first[rng.IntN(len(first))]}
		for n := rng.IntN(12); n > 0; n-- {
			b = append(b, rest[rng.IntN(len(rest))])
		}
		return string(b)
	}
	ref := func() Ref { return Ref{name(first, rest), name(actFirst, actRest)} }
	r := Rule{Kind: After, Emitter: ref(), Subscriber: ref()}
	for r.Subscriber == r.Emitter {
		r.Subscriber = ref()
	}
	if rng.IntN(2) == 0 {
		r.Kind = React
		r.Event = [...]Event{Changed, OK, Success, Failed, Any}[rng.IntN(5)]
	}
	return r
}

func TestRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		r := randomRule(rng)
		text := r.String()
		got, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) of a valid rule: %v", text, err)
		}
		if got != r {
			t.Fatalf("Parse(%q) = %#v, want %#v", text, got, r)
		}
		// The same rule written with arbitrary blanks parses the same.
		spaced := "\t" + strings.ReplaceAll(text, " ", strings.Repeat(" \t", 1+rng.IntN(3))) + " "
		if got, err := Parse(spaced); err != nil || got != r {
			t.Fatalf("Parse(%q) = %#v, %v; want %#v", spaced, got, err, r)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Validate(%q): %v", text, err)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse("on rmq.1.cluster_create changed rmq.2.cluster_join"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocates %.0f times per valid rule, want 0", allocs)
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("on rmq.1.cluster_create changed rmq.2.cluster_join"); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParse(f *testing.F) {
	// The seed corpus lives in testdata/fuzz/FuzzParse.
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %T is not a *ParseError", s, err)
			}
			if pe.Col < 1 || pe.Col > len(s)+2 {
				t.Fatalf("Parse(%q) error column %d out of range", s, pe.Col)
			}
			if pe.Word != "" && !strings.Contains(s, pe.Word) {
				t.Fatalf("Parse(%q) error word %q is not in the rule", s, pe.Word)
			}
			if end := pe.Col - 1 + len(pe.Word); pe.Word != "" && (end > len(s) || s[pe.Col-1:end] != pe.Word) {
				t.Fatalf("Parse(%q) error column %d does not point at %q", s, pe.Col, pe.Word)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Parse(%q) returned a rule Validate rejects: %v", s, err)
		}
		text := r.String()
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) of canonical form of %q: %v", text, s, err)
		}
		if again != r {
			t.Fatalf("round trip of %q: %#v, then %#v", s, r, again)
		}
		if again.String() != text {
			t.Fatalf("String is not stable: %q then %q", text, again.String())
		}
	})
}
