package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// drawPlan has a staged root, a react edge and an after-edge, and ids that
// need escaping in Mermaid.
func drawPlan(t *testing.T) *Plan {
	return mustBuild(t, Input{
		Entries: staged("db.run", "web.run"),
		Rules:   rules(t, "on db.run changed cfg.run", "after db.run web.run"),
	})
}

var drawStatuses = map[string]string{
	"db.run#0":  StatusSuccess,
	"cfg.run#0": StatusError,
	"web.run#0": "BOGUS", // unknown statuses draw as PENDING
}

func TestDOT(t *testing.T) {
	tests := []struct {
		name   string
		status func(string) string
		want   string
	}{
		{
			name:   "statuses color the nodes",
			status: func(id string) string { return drawStatuses[id] },
			want: `digraph plan {
	node [shape=box, style="rounded,filled", fontname="Helvetica"];
	edge [fontname="Helvetica", fontsize=10];
	"db.run#0" [fillcolor="#a8e6a1", penwidth=2];
	"cfg.run#0" [fillcolor="#f4a6a6"];
	"web.run#0" [fillcolor="#ffffff", penwidth=2];
	"db.run#0" -> "cfg.run#0" [label="changed"];
	"db.run#0" -> "web.run#0" [style=dashed];
}
`,
		},
		{
			name: "no status function means all pending",
			want: `digraph plan {
	node [shape=box, style="rounded,filled", fontname="Helvetica"];
	edge [fontname="Helvetica", fontsize=10];
	"db.run#0" [fillcolor="#ffffff", penwidth=2];
	"cfg.run#0" [fillcolor="#ffffff"];
	"web.run#0" [fillcolor="#ffffff", penwidth=2];
	"db.run#0" -> "cfg.run#0" [label="changed"];
	"db.run#0" -> "web.run#0" [style=dashed];
}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, DOT(drawPlan(t), tt.status)); diff != "" {
				t.Errorf("DOT (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMermaid(t *testing.T) {
	want := `flowchart TD
	classDef pending fill:#ffffff,stroke:#333333
	classDef inprogress fill:#fff2a8,stroke:#333333
	classDef success fill:#a8e6a1,stroke:#333333
	classDef noop fill:#d6ecd2,stroke:#333333
	classDef skipped fill:#d9d9d9,stroke:#333333
	classDef error fill:#f4a6a6,stroke:#333333
	n0["db.run#35;0"]:::success
	n1["cfg.run#35;0"]:::error
	n2["web.run#35;0"]:::pending
	n0 -->|changed| n1
	n0 -.-> n2
`
	got := Mermaid(drawPlan(t), func(id string) string { return drawStatuses[id] })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Mermaid (-want +got):\n%s", diff)
	}
}

func TestMermaidEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"changed", "changed"},
		{"ha.run#1", "ha.run#35;1"},
		{`a"b#`, "a#quot;b#35;"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := mermaidEscape(tt.in); got != tt.want {
				t.Errorf("mermaidEscape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
