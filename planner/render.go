package planner

import (
	"strconv"
	"strings"
)

// Task statuses as the drawings know them. The executor owns their meaning;
// the planner only colors them.
const (
	StatusPending    = "PENDING"
	StatusInProgress = "INPROGRESS"
	StatusSuccess    = "SUCCESS"
	StatusNoop       = "NOOP"
	StatusSkipped    = "SKIPPED"
	StatusError      = "ERROR"
)

// statusStyles lists every status with its fill color, in the order the
// Mermaid class definitions are written.
var statusStyles = []struct{ status, fill string }{
	{StatusPending, "#ffffff"},
	{StatusInProgress, "#fff2a8"},
	{StatusSuccess, "#a8e6a1"},
	{StatusNoop, "#d6ecd2"},
	{StatusSkipped, "#d9d9d9"},
	{StatusError, "#f4a6a6"},
}

// style returns the status to draw for a node and its fill color. A nil
// status function, "" and unknown statuses draw as PENDING.
func style(status func(id string) string, id string) (string, string) {
	if status != nil {
		s := status(id)
		for _, st := range statusStyles {
			if st.status == s {
				return st.status, st.fill
			}
		}
	}
	return statusStyles[0].status, statusStyles[0].fill
}

// DOT renders the plan as a Graphviz digraph. Nodes are labelled by id and
// filled by status (status may be nil: all PENDING); staged nodes have a
// bold border; react edges are labelled with their event and after-edges
// are dashed. The output depends only on the plan and the statuses.
func DOT(p *Plan, status func(id string) string) string {
	var sb strings.Builder
	sb.WriteString("digraph plan {\n")
	sb.WriteString("\tnode [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n")
	sb.WriteString("\tedge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, n := range p.Nodes {
		_, fill := style(status, n.ID)
		sb.WriteString("\t")
		sb.WriteString(strconv.Quote(n.ID))
		sb.WriteString(" [fillcolor=\"")
		sb.WriteString(fill)
		sb.WriteString("\"")
		if n.Staged {
			sb.WriteString(", penwidth=2")
		}
		sb.WriteString("];\n")
	}
	for _, e := range p.Edges {
		sb.WriteString("\t")
		sb.WriteString(strconv.Quote(e.From))
		sb.WriteString(" -> ")
		sb.WriteString(strconv.Quote(e.To))
		if e.Kind == EdgeAfter {
			sb.WriteString(" [style=dashed]")
		} else {
			sb.WriteString(" [label=")
			sb.WriteString(strconv.Quote(string(e.Event)))
			sb.WriteString("]")
		}
		sb.WriteString(";\n")
	}
	sb.WriteString("}\n")
	return sb.String()
}

// Mermaid renders the plan as a Mermaid flowchart, top down, with one class
// per status (status may be nil: all PENDING). Node ids contain characters
// Mermaid reserves, so nodes are named n0, n1... in plan order and labelled
// with their id. React edges are labelled with their event; after-edges
// are dotted.
func Mermaid(p *Plan, status func(id string) string) string {
	var sb strings.Builder
	sb.WriteString("flowchart TD\n")
	for _, st := range statusStyles {
		sb.WriteString("\tclassDef ")
		sb.WriteString(strings.ToLower(st.status))
		sb.WriteString(" fill:")
		sb.WriteString(st.fill)
		sb.WriteString(",stroke:#333333\n")
	}
	name := make(map[string]string, len(p.Nodes))
	for i, n := range p.Nodes {
		short := "n" + strconv.Itoa(i)
		name[n.ID] = short
		st, _ := style(status, n.ID)
		sb.WriteString("\t")
		sb.WriteString(short)
		sb.WriteString("[\"")
		sb.WriteString(mermaidEscape(n.ID))
		sb.WriteString("\"]:::")
		sb.WriteString(strings.ToLower(st))
		sb.WriteString("\n")
	}
	for _, e := range p.Edges {
		sb.WriteString("\t")
		sb.WriteString(name[e.From])
		if e.Kind == EdgeAfter {
			sb.WriteString(" -.-> ")
		} else {
			sb.WriteString(" -->|")
			sb.WriteString(mermaidEscape(string(e.Event)))
			sb.WriteString("| ")
		}
		sb.WriteString(name[e.To])
		sb.WriteString("\n")
	}
	return sb.String()
}

// mermaidEscape writes '#' and '"' as Mermaid entity codes: a bare '#'
// starts an entity and a '"' ends the label.
func mermaidEscape(s string) string {
	if !strings.ContainsAny(s, "#\"") {
		return s
	}
	return strings.NewReplacer("#", "#35;", "\"", "#quot;").Replace(s)
}
