package ch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// HistoryOptions are the inputs of "solar ch history".
type HistoryOptions struct {
	App  *app.App
	N    int
	Diff bool
	JSON bool
}

// NewCmdHistory builds "solar ch history".
func NewCmdHistory(a *app.App, runF func(*HistoryOptions) error) *cobra.Command {
	opts := &HistoryOptions{App: a}
	c := &cobra.Command{
		Use:   "history",
		Short: "List committed changes, oldest first (as orch list lists plans)",
		Long:  "List committed entries with their uid (for \"ch revert\"), the plan task that committed them, why they were staged (cause: \"drift\" for a repair solar drift --stage staged), and with -d their diffs.\n" + app.ExitHelp,
		Example: `  solar ch history -n 10
  solar ch history -d --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.N < 0 {
				return app.Usagef("-n/--limit %d: want 0 (all) or more", opts.N)
			}
			if runF != nil {
				return runF(opts)
			}
			return historyRun(opts)
		},
	}
	c.Flags().IntVarP(&opts.N, "limit", "n", 0, "show only the last N entries (0: all)")
	c.Flags().BoolVarP(&opts.Diff, "diff", "d", false, "show each entry's diff")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type historyEntryView struct {
	UID         uint64           `json:"uid"`
	Key         string           `json:"key"`
	Resource    string           `json:"resource"`
	Action      string           `json:"action"`
	Plan        string           `json:"plan"`
	Task        string           `json:"task"`
	CommittedAt string           `json:"committed_at"`
	Diff        []app.ChangeView `json:"diff"`
	// StagedBy, RanBy (actors) and RanOn (the runner's host) are "" in
	// entries committed before actors.
	StagedBy string `json:"staged_by"`
	RanBy    string `json:"ran_by"`
	RanOn    string `json:"ran_on"`
	// Cause is why the entry was staged ("drift" for one solar drift
	// --stage staged).
	Cause string `json:"cause"`
}

func historyRun(opts *HistoryOptions) error {
	var hs []*staging.HistoryEntry
	err := opts.App.View(func(tx *store.Tx) error {
		var err error
		hs, err = staging.History(tx, opts.N)
		return err
	})
	if err != nil {
		return err
	}
	// Oldest first, newest last, as orch list lists plans.
	views := make([]historyEntryView, 0, len(hs))
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		uid, _ := strconv.ParseUint(h.UID, 10, 64)
		views = append(views, historyEntryView{UID: uid, Key: h.Key, Resource: h.Resource, Action: h.Action, Plan: h.Plan, Task: h.Task,
			CommittedAt: h.CommittedAt.Format("2006-01-02T15:04:05Z"), StagedBy: h.StagedBy, RanBy: h.RanBy, RanOn: h.RanOn, Cause: h.Cause, Diff: app.DiffView(h.Diff)})
	}
	w := opts.App.IO.Out
	if opts.JSON {
		return app.JSON(w, struct {
			FormatVersion int                `json:"format_version"`
			History       []historyEntryView `json:"history"`
		}{app.FormatVersion, views})
	}
	if len(views) == 0 {
		_, err := fmt.Fprintln(w, "no history yet")
		return err
	}
	if !opts.Diff {
		rows := make([][]string, 0, len(views))
		for _, v := range views {
			rows = append(rows, []string{strconv.FormatUint(v.UID, 10), v.Key, v.Task, v.Plan, v.CommittedAt, app.ActorOrDash(v.StagedBy), ranBy(v), v.Cause})
		}
		return app.Table(w, []string{"uid", "key", "task", "plan", "committed", "staged by", "ran by", "cause"}, rows)
	}
	for _, v := range views {
		fmt.Fprintf(w, "%d  %s  (%s, %s, staged by %s, ran by %s)\n", v.UID, v.Key, v.Task, v.CommittedAt,
			app.Escape(app.ActorOrDash(v.StagedBy)), app.Escape(ranBy(v)))
		for _, c := range v.Diff {
			fmt.Fprintf(w, "  %s\n", app.Escape(c.Text))
		}
	}
	return nil
}

// RevertOptions are the inputs of "solar ch revert".
type RevertOptions struct {
	App *app.App
	UID string
}

// NewCmdRevert builds "solar ch revert".
func NewCmdRevert(a *app.App, runF func(*RevertOptions) error) *cobra.Command {
	opts := &RevertOptions{App: a}
	return &cobra.Command{
		Use:   "revert UID",
		Short: "Stage the inverse of a committed change",
		Long: `Stage the inverse of history entry UID: a run is undone by a remove, an update
by its old values, a remove by recreating the resource. Custom actions (restart,
reload...) cannot be reverted.` + "\n" + app.ExitHelp,
		Example: "  solar ch history -n 3\n  solar ch revert 1",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.UID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return revertRun(opts)
		},
	}
}

func revertRun(opts *RevertOptions) error {
	var ents []*staging.Entry
	err := opts.App.Update(func(tx *store.Tx) error {
		var err error
		ents, err = staging.New(resources.NewCatalog(tx), opts.App.Now).By(opts.App.Actor()).Revert(opts.UID)
		return err
	})
	if err != nil {
		return err
	}
	keys := make([]string, len(ents))
	for i, e := range ents {
		keys[i] = e.Key
	}
	if len(keys) == 0 {
		fmt.Fprintf(opts.App.IO.Out, "reverted %s (nothing left to stage)\n", opts.UID)
		return nil
	}
	fmt.Fprintf(opts.App.IO.Out, "reverted %s; staged %s\n", opts.UID, strings.Join(keys, ", "))
	return nil
}

// ranBy shows who ran a history entry's task and on which host:
// "bob@ci on runner1", "-" when it was committed before actors.
func ranBy(v historyEntryView) string {
	if v.RanBy == "" {
		return "-"
	}
	if v.RanOn == "" {
		return v.RanBy
	}
	return v.RanBy + " on " + v.RanOn
}
