package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/solarops/solar/events"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// rules parses rule texts, so tests read like the rules an operator writes.
func rules(t testing.TB, lines ...string) []events.Rule {
	t.Helper()
	out := make([]events.Rule, len(lines))
	for i, l := range lines {
		r, err := events.Parse(l)
		if err != nil {
			t.Fatalf("rule %q: %v", l, err)
		}
		out[i] = r
	}
	return out
}

// staged makes entries from "<resource>.<action>" keys, in staging order.
func staged(keys ...string) []Entry {
	out := make([]Entry, len(keys))
	for i, k := range keys {
		dot := strings.LastIndexByte(k, '.')
		out[i] = Entry{Key: k, Resource: k[:dot], Action: k[dot+1:]}
	}
	return out
}

// edgeTexts prints edges as "from -> to (event)", "(after)" for after-edges.
func edgeTexts(p *Plan) []string {
	out := make([]string, len(p.Edges))
	for i, e := range p.Edges {
		label := string(e.Event)
		if e.Kind == EdgeAfter {
			label = "after"
		}
		out[i] = e.From + " -> " + e.To + " (" + label + ")"
	}
	return out
}

func nodeIDs(p *Plan) []string {
	out := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		out[i] = n.ID
	}
	return out
}

func stagedIDs(p *Plan) []string {
	var out []string
	for _, n := range p.Nodes {
		if n.Staged {
			out = append(out, n.ID+"="+n.StagedKey)
		}
	}
	return out
}

func mustBuild(t testing.TB, in Input) *Plan {
	t.Helper()
	p, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p
}

// The keystone/glance/haproxy cycle of SPEC section 6 and the seed 000.
var keystoneRules = []string{
	"on k.run changed kc.run",
	"on kc.run changed ha.run",
	"on g.run changed gc.run",
	"on gc.run changed ha.run",
	"on ha.run changed gc.run",
	"on ha.run changed mon.reload",
}

// The rabbitmq cluster as drawn in seed 000: each node runs, node 1 creates
// the cluster, and the others join it after their own run.
var rabbitmqRules = []string{
	"on rmq.1.run changed rmq.1.cluster_create",
	"on rmq.1.cluster_create changed rmq.2.cluster_join",
	"on rmq.1.cluster_create changed rmq.3.cluster_join",
	"on rmq.2.run changed rmq.2.cluster_join",
	"on rmq.3.run changed rmq.3.cluster_join",
}

func TestBuildSeeds(t *testing.T) {
	tests := []struct {
		name   string
		in     Input
		nodes  []string
		edges  []string
		staged []string
	}{
		{
			name: "keystone_glance_haproxy",
			in:   Input{Entries: staged("k.run", "g.run"), Rules: rules(t, keystoneRules...)},
			nodes: []string{
				"k.run#0", "kc.run#0", "ha.run#0", "gc.run#0", "ha.run#1", "mon.reload#0", "g.run#0",
			},
			edges: []string{
				"k.run#0 -> kc.run#0 (changed)",
				"kc.run#0 -> ha.run#0 (changed)",
				"ha.run#0 -> gc.run#0 (changed)",
				"gc.run#0 -> ha.run#1 (changed)",
				"ha.run#1 -> mon.reload#0 (changed)",
				"g.run#0 -> gc.run#0 (changed)",
			},
			staged: []string{"k.run#0=k.run", "g.run#0=g.run"},
		},
		{
			name: "rabbitmq",
			in: Input{
				Entries: staged("rmq.1.run", "rmq.2.run", "rmq.3.run"),
				Rules:   rules(t, rabbitmqRules...),
			},
			nodes: []string{
				"rmq.1.run#0", "rmq.1.cluster_create#0", "rmq.2.cluster_join#0", "rmq.3.cluster_join#0",
				"rmq.2.run#0", "rmq.3.run#0",
			},
			edges: []string{
				"rmq.1.run#0 -> rmq.1.cluster_create#0 (changed)",
				"rmq.1.cluster_create#0 -> rmq.2.cluster_join#0 (changed)",
				"rmq.1.cluster_create#0 -> rmq.3.cluster_join#0 (changed)",
				"rmq.2.run#0 -> rmq.2.cluster_join#0 (changed)",
				"rmq.3.run#0 -> rmq.3.cluster_join#0 (changed)",
			},
			staged: []string{"rmq.1.run#0=rmq.1.run", "rmq.2.run#0=rmq.2.run", "rmq.3.run#0=rmq.3.run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustBuild(t, tt.in)
			// Checked apart from the golden file, so that a careless -update
			// cannot bless a wrong plan.
			if diff := cmp.Diff(tt.nodes, nodeIDs(p)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.edges, edgeTexts(p)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.staged, stagedIDs(p)); diff != "" {
				t.Errorf("staged nodes (-want +got):\n%s", diff)
			}
			if len(p.Warnings) != 0 {
				t.Errorf("warnings: %q", p.Warnings)
			}
			checkGolden(t, tt.name, goldenText(t, p))
		})
	}
}

// goldenText is what golden files hold: the plan as stored (indented JSON)
// and both drawings.
func goldenText(t testing.TB, p *Plan) []byte {
	t.Helper()
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(js)
	buf.WriteString("\n\n")
	buf.WriteString(DOT(p, nil))
	buf.WriteString("\n")
	buf.WriteString(Mermaid(p, nil))
	return buf.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./planner -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the plan built (-golden +got):\n%s", path, diff)
	}
}

// Staging more of the cycle's actions changes which nodes are marked staged
// and nothing else: expansion from k reaches them all first, in the same
// order, so the later entries only mark their existing #0 instance.
func TestBuildKeystoneAllStaged(t *testing.T) {
	two := mustBuild(t, Input{Entries: staged("k.run", "g.run"), Rules: rules(t, keystoneRules...)})
	six := mustBuild(t, Input{
		Entries: staged("k.run", "kc.run", "ha.run", "g.run", "gc.run", "mon.reload"),
		Rules:   rules(t, keystoneRules...),
	})
	wantStaged := []string{
		"k.run#0=k.run", "kc.run#0=kc.run", "ha.run#0=ha.run", "gc.run#0=gc.run", "mon.reload#0=mon.reload", "g.run#0=g.run",
	}
	if diff := cmp.Diff(wantStaged, stagedIDs(six)); diff != "" {
		t.Errorf("staged nodes (-want +got):\n%s", diff)
	}
	unstage := func(p *Plan) *Plan {
		q := *p
		q.Nodes = append([]Node(nil), p.Nodes...)
		for i := range q.Nodes {
			q.Nodes[i].Staged, q.Nodes[i].StagedKey = false, ""
		}
		return &q
	}
	if diff := cmp.Diff(unstage(two), unstage(six)); diff != "" {
		t.Errorf("plans differ beyond staged flags (-k,g +all six):\n%s", diff)
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name     string
		entries  []Entry
		rules    []string
		nodes    []string
		edges    []string
		warnings []string
	}{
		{
			name:    "after rule orders two staged actions",
			entries: staged("b.run", "a.run"),
			rules:   []string{"after a.run b.run"},
			nodes:   []string{"b.run#0", "a.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (after)"},
		},
		{
			name:    "after rule with a side missing adds nothing",
			entries: staged("a.run"),
			rules:   []string{"after a.run c.run", "after c.run a.run"},
			nodes:   []string{"a.run#0"},
			edges:   []string{},
		},
		{
			name:    "react rule whose emitter is not in the plan adds nothing",
			entries: staged("a.run"),
			rules:   []string{"on b.run changed a.run", "on b.run changed c.run"},
			nodes:   []string{"a.run#0"},
			edges:   []string{},
		},
		{
			name:    "after rule closing a cycle through react rules is dropped",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on b.run ok c.run", "after c.run a.run"},
			nodes:   []string{"a.run#0", "b.run#0", "c.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)", "b.run#0 -> c.run#0 (ok)"},
			warnings: []string{
				`dropped "after c.run a.run": c.run#0 -> a.run#0 would close the cycle c.run#0 -> a.run#0 -> b.run#0 -> c.run#0, which react rules need`,
			},
		},
		{
			name:    "a long cycle is shortened in the warning",
			entries: staged("n0.run"),
			rules: []string{
				"on n0.run changed n1.run", "on n1.run changed n2.run", "on n2.run changed n3.run",
				"on n3.run changed n4.run", "on n4.run changed n5.run", "on n5.run changed n6.run",
				"on n6.run changed n7.run", "on n7.run changed n8.run", "on n8.run changed n9.run",
				"after n9.run n0.run",
			},
			nodes: []string{
				"n0.run#0", "n1.run#0", "n2.run#0", "n3.run#0", "n4.run#0",
				"n5.run#0", "n6.run#0", "n7.run#0", "n8.run#0", "n9.run#0",
			},
			edges: []string{
				"n0.run#0 -> n1.run#0 (changed)", "n1.run#0 -> n2.run#0 (changed)", "n2.run#0 -> n3.run#0 (changed)",
				"n3.run#0 -> n4.run#0 (changed)", "n4.run#0 -> n5.run#0 (changed)", "n5.run#0 -> n6.run#0 (changed)",
				"n6.run#0 -> n7.run#0 (changed)", "n7.run#0 -> n8.run#0 (changed)", "n8.run#0 -> n9.run#0 (changed)",
			},
			warnings: []string{
				`dropped "after n9.run n0.run": n9.run#0 -> n0.run#0 would close the cycle ` +
					`n9.run#0 -> n0.run#0 -> n1.run#0 -> n2.run#0 -> n3.run#0 -> ... (2 more) -> ` +
					`n6.run#0 -> n7.run#0 -> n8.run#0 -> n9.run#0, which react rules need`,
			},
		},
		{
			name:    "after rule between nodes already joined adds no edge",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "after a.run b.run"},
			nodes:   []string{"a.run#0", "b.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)"},
		},
		{
			name:    "after rule goes from the last instance to the first",
			entries: staged("k.run", "g.run", "x.run"),
			rules:   append([]string{"after ha.run x.run", "after x.run gc.run"}, keystoneRules...),
			nodes:   []string{"k.run#0", "kc.run#0", "ha.run#0", "gc.run#0", "ha.run#1", "mon.reload#0", "g.run#0", "x.run#0"},
			edges: []string{
				"k.run#0 -> kc.run#0 (changed)",
				"kc.run#0 -> ha.run#0 (changed)",
				"ha.run#0 -> gc.run#0 (changed)",
				"gc.run#0 -> ha.run#1 (changed)",
				"ha.run#1 -> mon.reload#0 (changed)",
				"g.run#0 -> gc.run#0 (changed)",
				"ha.run#1 -> x.run#0 (after)",
			},
			warnings: []string{
				`dropped "after x.run gc.run": x.run#0 -> gc.run#0 would close the cycle x.run#0 -> gc.run#0 -> ha.run#1 -> x.run#0, which react rules need`,
			},
		},
		{
			name:    "react rules on one pair with different events give parallel edges",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on a.run failed b.run"},
			nodes:   []string{"a.run#0", "b.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)", "a.run#0 -> b.run#0 (failed)"},
		},
		{
			name:    "a rule repeated in the input counts once",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on a.run changed b.run"},
			nodes:   []string{"a.run#0", "b.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)"},
		},
		{
			name:    "expansion descends into each subscriber before the next rule",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on a.run changed c.run", "on b.run changed d.run"},
			nodes:   []string{"a.run#0", "b.run#0", "d.run#0", "c.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)", "b.run#0 -> d.run#0 (changed)", "a.run#0 -> c.run#0 (changed)"},
		},
		{
			name:    "a two-action react cycle runs the second action twice",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on b.run changed a.run"},
			nodes:   []string{"a.run#0", "b.run#0", "a.run#1"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)", "b.run#0 -> a.run#1 (changed)"},
		},
		{
			name:    "subscribers of an older instance run after the last one only",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on b.run changed a.run", "on a.run changed c.run"},
			nodes:   []string{"a.run#0", "b.run#0", "a.run#1", "c.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)", "b.run#0 -> a.run#1 (changed)", "a.run#1 -> c.run#0 (changed)"},
		},
		{
			name:    "a subscriber leading back into the cycle stays on the older instance",
			entries: staged("a.run"),
			rules:   []string{"on a.run changed b.run", "on b.run changed a.run", "on a.run failed b.run"},
			nodes:   []string{"a.run#0", "b.run#0", "a.run#1"},
			edges: []string{
				"a.run#0 -> b.run#0 (changed)",
				"b.run#0 -> a.run#1 (changed)",
				"a.run#0 -> b.run#0 (failed)",
			},
		},
		{
			name:    "an entry reached by expansion is marked, not added again",
			entries: staged("a.run", "b.run"),
			rules:   []string{"on a.run changed b.run"},
			nodes:   []string{"a.run#0", "b.run#0"},
			edges:   []string{"a.run#0 -> b.run#0 (changed)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustBuild(t, Input{Entries: tt.entries, Rules: rules(t, tt.rules...)})
			if diff := cmp.Diff(tt.nodes, nodeIDs(p)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.edges, edgeTexts(p)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			want := tt.warnings
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, p.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildDependencyCycle(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		rules   []string
		cycle   []string
		cause   []string
	}{
		{
			name:    "two after rules",
			entries: staged("a.run", "b.run"),
			rules:   []string{"after a.run b.run", "after b.run a.run"},
			cycle:   []string{"b.run#0", "a.run#0", "b.run#0"},
			cause:   []string{"after b.run a.run", "after a.run b.run"},
		},
		{
			name:    "three after rules beside react edges",
			entries: staged("a.run", "c.run"),
			rules: []string{
				"on a.run changed x.run", "after a.run b.run", "after b.run c.run", "after c.run a.run",
			},
			cycle: []string{"c.run#0", "a.run#0", "b.run#0", "c.run#0"},
			cause: []string{"after c.run a.run", "after a.run b.run", "after b.run c.run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// b.run is only reached through after rules here, so stage what
			// the cycle needs.
			in := Input{Entries: append(tt.entries, staged("b.run")...), Rules: rules(t, tt.rules...)}
			p, err := Build(in)
			if err == nil {
				t.Fatalf("Build succeeded with edges %q, want a dependency cycle", edgeTexts(p))
			}
			if !errors.Is(err, ErrDependencyCycle) {
				t.Fatalf("error %v does not wrap ErrDependencyCycle", err)
			}
			var ce *CycleError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *CycleError", err)
			}
			if diff := cmp.Diff(tt.cycle, ce.Cycle); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.cause, ce.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			want := "dependency cycle: " + strings.Join(tt.cycle, " -> ") +
				" (after rules add no work, so this cycle cannot be resolved; remove one of the rules)"
			if err.Error() != want {
				t.Errorf("message:\n got %s\nwant %s", err, want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want error
	}{
		{
			name: "no entries",
			in:   Input{Rules: rules(t, "on a.run changed b.run")},
			want: ErrEmpty,
		},
		{
			name: "rule of unknown kind",
			in: Input{
				Entries: staged("a.run"),
				Rules: []events.Rule{{
					Kind:       events.Kind(7),
					Emitter:    events.Ref{Resource: "a", Action: "run"},
					Subscriber: events.Ref{Resource: "b", Action: "run"},
				}},
			},
			want: events.ErrBadRule,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Build = %v, %v; want error %v", p, err, tt.want)
			}
		})
	}
}

// A rule from an action to itself cannot be written (events.Parse refuses
// it), but a Rule built in code must not make expansion loop: the second
// instance does not fire the rule again.
func TestBuildSelfRuleTerminates(t *testing.T) {
	a := events.Ref{Resource: "a", Action: "run"}
	p := mustBuild(t, Input{
		Entries: staged("a.run"),
		Rules:   []events.Rule{{Kind: events.React, Emitter: a, Event: events.Failed, Subscriber: a}},
	})
	if diff := cmp.Diff([]string{"a.run#0 -> a.run#1 (failed)"}, edgeTexts(p)); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
}

func TestBuildNodeFields(t *testing.T) {
	p := mustBuild(t, Input{
		Entries: staged("k.run", "g.run"),
		Rules: rules(t, append(keystoneRules,
			"on g.run failed gc.run",
			"after k.run g.run")...),
	})
	type fields struct {
		Weight      int
		TriggeredBy []string
	}
	got := map[string]fields{}
	for _, n := range p.Nodes {
		got[n.ID] = fields{n.Weight, n.TriggeredBy}
	}
	want := map[string]fields{
		"k.run#0":      {6, []string{}},
		"kc.run#0":     {5, []string{"on k.run changed kc.run"}},
		"ha.run#0":     {4, []string{"on kc.run changed ha.run"}},
		"gc.run#0":     {3, []string{"on ha.run changed gc.run", "on g.run changed gc.run", "on g.run failed gc.run"}},
		"ha.run#1":     {2, []string{"on gc.run changed ha.run"}},
		"mon.reload#0": {1, []string{"on ha.run changed mon.reload"}},
		"g.run#0":      {4, []string{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("weights and triggers (-want +got):\n%s", diff)
	}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte("null")) {
		t.Errorf("plan JSON holds a null: %s", js)
	}
}

// cloneThroughMaps rebuilds in as a generator keeping rules and entries in
// maps would: by iterating those maps (in Go's random order) and copying
// every string, yet yielding slices equal to the originals.
func cloneThroughMaps(in Input) Input {
	rs := make(map[int]events.Rule, len(in.Rules))
	for i, r := range in.Rules {
		rs[i] = r
	}
	es := make(map[int]Entry, len(in.Entries))
	for i, e := range in.Entries {
		es[i] = e
	}
	ref := func(r events.Ref) events.Ref {
		return events.Ref{Resource: strings.Clone(r.Resource), Action: strings.Clone(r.Action)}
	}
	out := Input{Rules: make([]events.Rule, len(rs)), Entries: make([]Entry, len(es))}
	for i, r := range rs {
		out.Rules[i] = events.Rule{Kind: r.Kind, Emitter: ref(r.Emitter), Event: r.Event, Subscriber: ref(r.Subscriber)}
	}
	for i, e := range es {
		out.Entries[i] = Entry{Key: strings.Clone(e.Key), Resource: strings.Clone(e.Resource), Action: strings.Clone(e.Action)}
	}
	return out
}

func TestBuildDeterministic(t *testing.T) {
	type named struct {
		name string
		in   Input
	}
	inputs := []named{
		{"keystone", Input{Entries: staged("k.run", "g.run"), Rules: rules(t, keystoneRules...)}},
	}
	for _, shape := range GenShapes {
		inputs = append(inputs, named{shape, GenInput(shape, 3000)})
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 20 {
		inputs = append(inputs, named{fmt.Sprintf("random%d", i), randomInput(rng)})
	}
	encode := func(t *testing.T, in Input) []byte {
		t.Helper()
		p, err := Build(in)
		if err != nil {
			return []byte(err.Error())
		}
		return append(mustJSON(p), DOT(p, nil)+Mermaid(p, nil)...)
	}
	for _, tt := range inputs {
		t.Run(tt.name, func(t *testing.T) {
			want := encode(t, tt.in)
			for range 3 {
				if got := encode(t, cloneThroughMaps(tt.in)); !bytes.Equal(want, got) {
					t.Fatalf("builds of identical input differ:\n%s\n%s", want, got)
				}
			}
		})
	}
}

// Actions of one resource in one plan are ordered as an operator expects:
// run before its custom actions; an explicit rule the other way wins.
func TestBuildResourceOrder(t *testing.T) {
	react := func(e, s string) events.Rule {
		r, err := events.Parse("on " + e + " changed " + s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	in := Input{
		Entries: []Entry{{Key: "db.run", Resource: "db", Action: "run"}, {Key: "ks.run", Resource: "ks", Action: "run"}},
		Rules:   []events.Rule{react("db.run", "ks.restart")},
	}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range p.Edges {
		if e.From == "ks.run#0" && e.To == "ks.restart#0" && e.Kind == EdgeAfter && e.Rule == "after ks.run ks.restart (same resource)" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no implicit ks.run#0 -> ks.restart#0 edge in %+v", p.Edges)
	}
	back, err := events.Parse("after ks.restart ks.run")
	if err != nil {
		t.Fatal(err)
	}
	in.Rules = append(in.Rules, back)
	p, err = Build(in)
	if err != nil {
		t.Fatalf("an explicit rule against the implicit order must win, got %v", err)
	}
	for _, e := range p.Edges {
		if e.From == "ks.run#0" && e.To == "ks.restart#0" {
			t.Fatalf("implicit edge kept against an explicit rule: %+v", p.Edges)
		}
	}
	if len(p.Warnings) != 0 {
		t.Fatalf("implicit rules must not warn: %q", p.Warnings)
	}
}
