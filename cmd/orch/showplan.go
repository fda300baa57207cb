package orch

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
)

// newPlanView is the --json view of sum: every list and map non-nil,
// sensitive values masked.
func newPlanView(sum *orch.ShowSummary) planView {
	rec := sum.Record
	v := planView{FormatVersion: app.FormatVersion, UID: rec.UID, CreatedAt: rec.CreatedAt.Format("2006-01-02T15:04:05Z"),
		Selection: nonNil(rec.Selection), Tasks: make([]taskView, 0, len(sum.Tasks)), Edges: make([]edgeView, 0, len(rec.Plan.Edges)),
		Warnings: nonNil(rec.Plan.Warnings), Stale: staleViews(sum.Stale), Pinned: sum.Pinned, Rates: rateViews(sum.Rates)}
	for _, t := range sum.Tasks {
		v.Tasks = append(v.Tasks, newTaskView(t))
	}
	for _, e := range rec.Plan.Edges {
		v.Edges = append(v.Edges, edgeView{From: e.From, To: e.To, Kind: e.Kind, Event: string(e.Event), Rule: e.Rule})
	}
	return v
}

// newTaskView is the --json view of one task of a plan.
func newTaskView(t orch.ShowTask) taskView {
	n := t.Node
	why := "staged " + n.StagedKey
	if !n.Staged {
		why = "triggered by " + strings.Join(n.TriggeredBy, "; ")
	}
	tv := taskView{ID: n.ID, Resource: n.Resource, Action: n.Action, Instance: n.Instance,
		Status: string(t.Status), Staged: n.Staged, StagedKey: n.StagedKey, TriggeredBy: nonNil(n.TriggeredBy), Weight: n.Weight,
		DiffSource: t.Diff.Source, Diff: app.DiffView(t.Diff.Diff),
		Inputs: map[string]any{}, Sensitive: []string{}, Later: map[string]string{}, Node: map[string]any{},
		Why: why, After: nonNil(t.After), Before: nonNil(t.Before), BatchGroup: t.BatchGroup}
	p := t.Planned
	if p == nil {
		return tv
	}
	tv.Base = baseView{Name: p.Base.Name, Version: p.Base.Version, Digest: p.Base.Digest}
	later := map[string]string{}
	for _, in := range p.Inputs {
		tv.Inputs[in.Name] = masked(in)
		if in.Sensitive {
			tv.Sensitive = append(tv.Sensitive, in.Name)
		}
		if in.Later != "" {
			tv.Later[in.Name] = in.Later
			later[in.Name] = in.Later
		}
	}
	tv.Location = p.NodeName
	for _, in := range p.Node {
		tv.Node[in.Name] = masked(in)
	}
	if t.Diff.Source != "committed" {
		// A committed diff has the values the task ran with; a planned
		// one has none yet for the values an earlier task sends.
		for i, c := range t.Diff.Diff {
			if text, ok := laterText(c, later[c.Key]); ok {
				tv.Diff[i].New = nil
				tv.Diff[i].Text = text
			}
		}
	}
	return tv
}

// laterText is the text of change c of an input whose value task later
// sends, known only when it runs; false when c is not such a change.
func laterText(c staging.Change, later string) (string, bool) {
	if later == "" || c.Connection || c.Op == staging.OpRemove {
		return "", false
	}
	known := knownAfter(later)
	if c.Op == staging.OpAdd {
		return "+ " + c.Key + ": " + known, true
	}
	old := staging.FormatChange(staging.Change{Op: staging.OpRemove, Key: c.Key, Old: c.Old, Sensitive: c.Sensitive})
	return "~" + strings.TrimPrefix(old, "-") + " >> " + known, true
}

// printLater prints, under task t's diff, the inputs whose values an
// earlier task sends that the diff does not name (an unset input fed by a
// connection has no line of its own).
func printLater(w io.Writer, t taskView) {
	inDiff := make(map[string]bool, len(t.Diff))
	for _, c := range t.Diff {
		if !c.Connection {
			inDiff[c.Key] = true
		}
	}
	names := make([]string, 0, len(t.Later))
	for in := range t.Later {
		if !inDiff[in] {
			names = append(names, in)
		}
	}
	sort.Strings(names)
	for _, in := range names {
		fmt.Fprintf(w, "    %s: %s\n", in, knownAfter(t.Later[in]))
	}
}

func knownAfter(task string) string { return "(known after " + task + " runs)" }

// masked is v's value as shown: masked when sensitive and set.
func masked(v orch.PlannedValue) any {
	if v.Sensitive && v.Value != nil {
		return app.Mask
	}
	return v.Value
}

// shownValue is v's value for humans.
func shownValue(v orch.PlannedValue) string {
	switch {
	case v.Later != "" && v.Value == nil:
		return knownAfter(v.Later)
	case v.Value == nil:
		return "(unset)"
	case v.Sensitive:
		return app.Mask
	case v.Value == "":
		return `""` // bare, it would vanish into "name: "
	}
	return schema.Format(v.Value)
}

// printValues prints, per task, its base and every value it was planned
// with (orch show --values).
func printValues(w io.Writer, sum *orch.ShowSummary) {
	fmt.Fprintln(w, "values:")
	if !sum.Pinned {
		fmt.Fprintln(w, "  (none recorded: the plan was made before solar pinned values; it runs with the values of when it runs)")
		fmt.Fprintln(w)
		return
	}
	for _, t := range sum.Tasks {
		p := t.Planned
		if p == nil {
			fmt.Fprintf(w, "  %s: (none recorded: its resource was gone when the plan was made)\n", t.Node.ID)
			continue
		}
		fmt.Fprintf(w, "  %s: base %s\n", t.Node.ID, baseName(p.Base))
		for _, in := range p.Inputs {
			fmt.Fprintf(w, "    %s: %s\n", in.Name, app.Escape(shownValue(in)))
		}
		if p.NodeName != "" {
			fmt.Fprintf(w, "    on node %s:\n", p.NodeName)
			for _, in := range p.Node {
				fmt.Fprintf(w, "      %s: %s\n", in.Name, app.Escape(shownValue(in)))
			}
		}
	}
	fmt.Fprintln(w)
}

// baseName is a base as an operator names it: name@digest (12 hex digits,
// as base list shows it), with its version.
func baseName(b orch.BaseRef) string {
	s := b.Name + "@" + b.Digest[:min(len(b.Digest), 12)]
	if b.Version != "" {
		s += " (version " + b.Version + ")"
	}
	return s
}

// nonNil returns s, or an empty list for nil: --json never prints null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
