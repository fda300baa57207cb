package ch

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// DiscardOptions are the inputs of "solar ch discard".
type DiscardOptions struct {
	App  *app.App
	Keys []string
	All  bool
}

// NewCmdDiscard builds "solar ch discard".
func NewCmdDiscard(a *app.App, runF func(*DiscardOptions) error) *cobra.Command {
	opts := &DiscardOptions{App: a}
	c := &cobra.Command{
		Use:   "discard KEY... | --all",
		Short: "Undo staged changes",
		Long: `Undo staged entries:
  a run of a resource never committed deletes the resource;
  an update restores the committed values and connections;
  a remove keeps the resource;
  a custom action (restart, reload...) just drops the entry.
Resources downstream are restaged to match. A discarded entry's task in a plan
not yet run is SKIPPED with reason "discarded".` + "\n" + app.ExitHelp,
		Example: `  solar resource update mariadb port=3307 && solar ch discard mariadb.update
  solar ch discard mariadb.run      # a never-committed mariadb is deleted
  solar ch discard --all`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Keys = args
			if (len(args) == 0) != opts.All {
				return app.Usagef("give KEY... or --all")
			}
			if runF != nil {
				return runF(opts)
			}
			return discardRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "discard every staged entry")
	return c
}

func discardRun(opts *DiscardOptions) error {
	var (
		ents  []*staging.Entry
		kept  = map[string]*staging.Entry{}
		plans []string
	)
	err := opts.App.Update(func(tx *store.Tx) error {
		st := staging.New(resources.NewCatalog(tx), opts.App.Now).By(opts.App.Actor())
		var err error
		if opts.All {
			ents, err = st.DiscardAll()
		} else {
			ents, err = st.Discard(opts.Keys...)
		}
		if err != nil {
			return err
		}
		// An affected child stays staged while the change that caused it
		// does: say so rather than claim it was discarded.
		var gone []string
		for _, e := range ents {
			if cur, err := staging.Get(tx, e.Key); err == nil {
				kept[e.Key] = cur
			} else {
				gone = append(gone, e.Key)
			}
		}
		// A discarded entry must not run in a plan made before.
		plans, err = orch.SkipPending(tx, gone, orch.ReasonDiscarded, opts.App.Now())
		return err
	})
	if err != nil {
		return err
	}
	for _, e := range ents {
		if cur, ok := kept[e.Key]; ok {
			if len(cur.AffectedBy) > 0 {
				fmt.Fprintf(opts.App.IO.Out, "kept %s: it follows the staged change of %s\n", e.Key, strings.Join(cur.AffectedBy, ", "))
			} else {
				fmt.Fprintf(opts.App.IO.Out, "kept %s: staged again (%s)\n", e.Key, cur.Cause)
			}
			continue
		}
		fmt.Fprintf(opts.App.IO.Out, "discarded %s\n", e.Key)
	}
	if len(ents) == 0 {
		fmt.Fprintln(opts.App.IO.Out, "nothing staged")
	}
	for _, uid := range plans {
		fmt.Fprintf(opts.App.IO.Out, "plan %s will not run the discarded entries (their tasks are SKIPPED \"discarded\")\n", uid)
	}
	return nil
}
