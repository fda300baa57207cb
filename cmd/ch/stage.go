package ch

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// StageOptions are the inputs of "solar ch stage".
type StageOptions struct {
	App    *app.App
	Action string
	Name   string
	Tags   []string
	Diff   bool
	JSON   bool
}

// NewCmdStage builds "solar ch stage".
func NewCmdStage(a *app.App, runF func(*StageOptions) error) *cobra.Command {
	opts := &StageOptions{App: a}
	c := &cobra.Command{
		Use:     "stage [-t TAG_EXPR] [-d] | -a ACTION (-n NAME | -t TAG_EXPR)",
		Aliases: []string{"staged"},
		Short:   "List staged entries, or stage an action by hand",
		Long: `Without -a: list the staged entries in staging order (those whose tags match -t,
with the entries they caused), with -d their diffs:
  + key: value          added
  ~ key: old >> new     changed
  - key: value          removed
Sensitive values are masked. Each entry shows who staged it last
($SOLAR_ACTOR, else user@host; "-" for entries staged before solar recorded
it; --json: staged_by).

With -a ACTION: stage that action (any action the base defines: restart,
reload...) for the resource -n NAME or every resource matching -t, even when
nothing changed.` + "\n" + app.ExitHelp,
		Example: `  solar ch stage
  solar ch stage -t tier=api -d
  solar ch stage -a restart -t role=db
  solar ch stage -a reload -n haproxy --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Action == "" && opts.Name != "" {
				return app.Usagef("-n NAME needs -a ACTION (to list one resource's entries use -t resource=NAME)")
			}
			if opts.Action != "" && (opts.Name == "") == (len(opts.Tags) == 0) {
				return app.Usagef("-a ACTION needs exactly one of -n NAME or -t TAG_EXPR")
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Action != "" {
				return stageActionRun(opts)
			}
			return stageListRun(opts)
		},
	}
	c.Flags().StringVarP(&opts.Action, "action", "a", "", "action to stage")
	c.Flags().StringVarP(&opts.Name, "name", "n", "", "resource to stage the action for")
	c.Flags().StringArrayVarP(&opts.Tags, "tag", "t", nil, "tag expression selecting entries (list) or resources (-a); repeatable: union")
	c.Flags().BoolVarP(&opts.Diff, "diff", "d", false, "show each entry's diff")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type entryView struct {
	Key        string           `json:"key"`
	Resource   string           `json:"resource"`
	Action     string           `json:"action"`
	Seq        uint64           `json:"seq"`
	Tags       []string         `json:"tags"`
	Cause      string           `json:"cause"`
	AffectedBy []string         `json:"affected_by"`
	StagedAt   string           `json:"staged_at"`
	StagedBy   string           `json:"staged_by"` // "" when staged before actors
	Diff       []app.ChangeView `json:"diff"`
}

type stagedView struct {
	FormatVersion int         `json:"format_version"`
	Entries       []entryView `json:"entries"`
}

func newEntryView(e *staging.Entry) entryView {
	v := entryView{Key: e.Key, Resource: e.Resource, Action: e.Action, Seq: e.Seq, Tags: e.Tags.Strings(), Cause: e.Cause,
		AffectedBy: e.AffectedBy, StagedAt: e.StagedAt.Format("2006-01-02T15:04:05Z"), StagedBy: e.StagedBy, Diff: app.DiffView(e.Diff)}
	if v.AffectedBy == nil {
		v.AffectedBy = []string{}
	}
	return v
}

func printEntries(w io.Writer, ents []entryView, withDiff bool) error {
	if len(ents) == 0 {
		_, err := fmt.Fprintln(w, "nothing staged")
		return err
	}
	if !withDiff {
		rows := make([][]string, 0, len(ents))
		for _, e := range ents {
			t := tagsText(e)
			if len(e.Tags) == 0 && t != "" {
				t = "(" + t + ")"
			}
			rows = append(rows, []string{e.Key, e.Cause, fmt.Sprintf("%d", len(e.Diff)), app.ActorOrDash(e.StagedBy), t})
		}
		return app.Table(w, []string{"key", "cause", "changes", "staged by", "tags"}, rows)
	}
	for i, e := range ents {
		if i > 0 {
			fmt.Fprintln(w)
		}
		by := app.Escape(app.ActorOrDash(e.StagedBy))
		if t := tagsText(e); t != "" {
			fmt.Fprintf(w, "%s  (%s) [%s] by %s\n", e.Key, e.Cause, app.Escape(t), by)
		} else {
			fmt.Fprintf(w, "%s  (%s) by %s\n", e.Key, e.Cause, by)
		}
		if len(e.Diff) == 0 {
			fmt.Fprintln(w, "  (no changes)")
		}
		for _, c := range e.Diff {
			fmt.Fprintf(w, "  %s\n", app.Escape(c.Text))
		}
	}
	return nil
}

// tagsText renders an entry's tags. An entry without tags was staged
// because changes reached it through connections: it shows the resources
// they came from, unless its cause already names them all.
func tagsText(e entryView) string {
	if len(e.Tags) > 0 {
		return strings.Join(e.Tags, ",")
	}
	if len(e.AffectedBy) == 0 {
		return ""
	}
	by := "affected by " + strings.Join(e.AffectedBy, ", ")
	if by == e.Cause {
		return ""
	}
	return by
}

func stageListRun(opts *StageOptions) error {
	expr, err := tags.ParseAny(opts.Tags)
	if err != nil {
		return err
	}
	var ents []*staging.Entry
	err = opts.App.View(func(tx *store.Tx) error {
		var err error
		ents, err = staging.Select(tx, expr)
		return err
	})
	if err != nil {
		return err
	}
	out := stagedView{FormatVersion: app.FormatVersion, Entries: []entryView{}}
	for _, e := range ents {
		out.Entries = append(out.Entries, newEntryView(e))
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, out)
	}
	return printEntries(opts.App.IO.Out, out.Entries, opts.Diff)
}

func stageActionRun(opts *StageOptions) error {
	expr, err := tags.ParseAny(opts.Tags)
	if err != nil {
		return err
	}
	var (
		ents       []*staging.Entry
		removedNow []string
	)
	err = opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		names := []string{opts.Name}
		if expr != nil {
			list, err := cat.List(expr)
			if err != nil {
				return err
			}
			names = names[:0]
			for _, r := range list {
				names = append(names, r.Name)
			}
			if len(names) == 0 {
				return fmt.Errorf("%w: no resource matches %q (see solar resource list)", resources.ErrNotFound, strings.Join(opts.Tags, " | "))
			}
		}
		st := staging.New(cat, opts.App.Now).By(opts.App.Actor())
		for _, n := range names {
			var (
				e   *staging.Entry
				err error
			)
			if opts.Action == staging.ActionRemove {
				// A remove is a removal, whichever way it is asked for.
				e, err = st.Remove(n)
			} else {
				e, err = st.StageAction(n, opts.Action)
			}
			if err != nil {
				return err
			}
			if e == nil {
				removedNow = append(removedNow, n)
				continue
			}
			ents = append(ents, e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		out := stagedView{FormatVersion: app.FormatVersion, Entries: []entryView{}}
		for _, e := range ents {
			out.Entries = append(out.Entries, newEntryView(e))
		}
		return app.JSON(opts.App.IO.Out, out)
	}
	for _, e := range ents {
		fmt.Fprintf(opts.App.IO.Out, "staged %s\n", e.Key)
	}
	for _, n := range removedNow {
		fmt.Fprintf(opts.App.IO.Out, "removed %s (it was never committed)\n", n)
	}
	return nil
}

// StagedItemOptions are the inputs of "solar ch staged-item".
type StagedItemOptions struct {
	App  *app.App
	Key  string
	JSON bool
}

// NewCmdStagedItem builds "solar ch staged-item".
func NewCmdStagedItem(a *app.App, runF func(*StagedItemOptions) error) *cobra.Command {
	opts := &StagedItemOptions{App: a}
	c := &cobra.Command{
		Use:     "staged-item KEY",
		Short:   "Show one staged entry with its diff",
		Long:    "Show the staged entry KEY (<resource>.<action>) with its tags and diff.\n" + app.ExitHelp,
		Example: "  solar ch staged-item mariadb.run\n  solar ch staged-item rmq.1.run --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Key = args[0]
			if runF != nil {
				return runF(opts)
			}
			return stagedItemRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

func stagedItemRun(opts *StagedItemOptions) error {
	var e *staging.Entry
	err := opts.App.View(func(tx *store.Tx) error {
		var err error
		e, err = staging.Get(tx, opts.Key)
		return err
	})
	if err != nil {
		return err
	}
	v := newEntryView(e)
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, struct {
			FormatVersion int `json:"format_version"`
			entryView
		}{app.FormatVersion, v})
	}
	return printEntries(opts.App.IO.Out, []entryView{v}, true)
}
