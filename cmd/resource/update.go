package resource

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// UpdateOptions are the inputs of "solar resource update".
type UpdateOptions struct {
	App    *app.App
	Name   string
	Values []string
	Meta   []string
}

// NewCmdUpdate builds "solar resource update".
func NewCmdUpdate(a *app.App, runF func(*UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{App: a}
	c := &cobra.Command{
		Use:   "update NAME [INPUT=VALUE | JSON]...",
		Short: "Change a resource's inputs or metaparameters and stage the change",
		Long: `Change input values (read like "create") or metaparameters. A resource that was
never committed keeps its run entry staged, with the new values; a committed one
stages update with the diff. Resources downstream whose effective inputs change
are staged too. An input that follows a connection cannot be written.` + "\n" + app.ExitHelp,
		Example: `  solar resource update mariadb port=3307
  solar resource update keystone '{"port": 5001, "admin_port": 35358}'
  solar resource update mariadb --meta retry=3,delay=200ms`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.Values = args[0], args[1:]
			if len(opts.Values) == 0 && len(opts.Meta) == 0 {
				return app.Usagef("nothing to update: give INPUT=VALUE or --meta key=value")
			}
			if runF != nil {
				return runF(opts)
			}
			return updateRun(opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Meta, "meta", nil, "metaparameters retry=N, delay=D, timeout=D, sema=NAME:N, drift_ignore=NAME, rate=NAME:N/UNIT[:BURST], limit=N/UNIT, burst=N, comma separated (repeatable; sema, drift_ignore and rate add to their lists)")
	return c
}

func updateRun(opts *UpdateOptions) error {
	vals, err := resources.ParseValues(opts.Values)
	if err != nil {
		return err
	}
	meta, err := parseMeta(opts.Meta)
	if err != nil {
		return err
	}
	var staged []*staging.Entry
	err = opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		r, err := cat.Get(opts.Name)
		if err != nil {
			return err
		}
		if r.Removing {
			return fmt.Errorf("%w: %s is staged for removal; discard that first (solar ch discard %s)", resources.ErrInvalid, opts.Name, staging.Key(opts.Name, staging.ActionRemove))
		}
		if _, err := cat.Update(opts.Name, vals, meta); err != nil {
			return err
		}
		staged, err = staging.New(cat, opts.App.Now).By(opts.App.Actor()).Touch("update", opts.Name)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "updated %s%s\n", opts.Name, stagedNote(staged))
	return nil
}
