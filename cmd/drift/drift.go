// Package drift holds "solar drift": the check of committed resources
// against the world, its history, and its continuous mode.
package drift

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Options are solar drift's flags.
type Options struct {
	App         *app.App
	Tags        []string
	Names       []string
	JSON        bool
	Stage       bool
	Every       time.Duration
	Concurrency int
	PerNode     int
}

// NewCmd returns "solar drift" with its list and show.
func NewCmd(a *app.App) *cobra.Command {
	opts := &Options{App: a}
	c := &cobra.Command{
		Use:   "drift",
		Short: "Check whether committed resources are still what was committed",
		Long: `Run the check of every selected committed resource (its update, or run,
where its base checks that action) with the values it last committed, on its
node, in parallel within --concurrency and --per-node, and say for each: in
sync, drifted (with what the check said differs), cannot check (its base has
no check), or error. Nothing changes: a change staged but not yet run is never
drift, since the committed values are what is checked. A base or a resource
may ignore some differences (meta.yaml drift: {ignore: [...]}, or --meta
drift_ignore=NAME): docs/bases.md.

Every drift run is kept: solar drift list, solar drift show ID. --stage stages
the corrective action of each drifted resource (cause "drift"), which the usual
ch process, review and orch run-once repair; orch report marks those tasks
corrective. --every D checks again every D until Ctrl-C, one summary line per
round (with --stage it stages, never runs); on a PostgreSQL store one such
loop runs per selection at a time.

Exit status 6 when a resource drifted, 1 when a check failed (1 wins).` + "\n" + app.ExitHelp,
		Example: `  solar drift
  solar drift -t env1 --json
  solar drift -n db --stage && solar ch process -t env1 && solar orch run-once last
  solar drift -t env1 --every 5m --stage`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Concurrency < 1 || opts.PerNode < 1 {
				return app.Usagef("--concurrency and --per-node must be at least 1")
			}
			if c.Flags().Changed("every") && opts.Every < time.Second {
				return app.Usagef("--every %s is too short: at least 1s", opts.Every)
			}
			return run(opts)
		},
	}
	c.Flags().StringArrayVarP(&opts.Tags, "tag", "t", nil, "tag expression selecting resources (repeatable: union)")
	c.Flags().StringArrayVarP(&opts.Names, "name", "n", nil, "a resource to check (repeatable)")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	c.Flags().BoolVar(&opts.Stage, "stage", false, "stage the corrective action of each drifted resource")
	c.Flags().DurationVar(&opts.Every, "every", 0, "check again every D until interrupted")
	c.Flags().IntVar(&opts.Concurrency, "concurrency", 10, "at most N checks at once")
	c.Flags().IntVar(&opts.PerNode, "per-node", 1, "at most N checks at once on one location node")
	c.AddCommand(newCmdList(a), newCmdShow(a))
	return c
}

// driftOptions turns the flags into orch's options.
func driftOptions(opts *Options) (orch.DriftOptions, error) {
	a := opts.App
	o := orch.DriftOptions{Names: opts.Names, Concurrency: opts.Concurrency, PerNode: opts.PerNode, Stage: opts.Stage}
	if len(opts.Tags) > 0 {
		expr, err := tags.ParseAny(opts.Tags)
		if err != nil {
			return o, err
		}
		o.Tags = expr
	}
	var sel []string
	for _, t := range opts.Tags {
		sel = append(sel, "-t "+t)
	}
	for _, n := range opts.Names {
		sel = append(sel, "-n "+n)
	}
	// One selection however its flags are ordered: the lock of --every
	// is named by it.
	sort.Strings(sel)
	o.Selection = strings.Join(sel, " ")
	if o.Selection == "" {
		o.Selection = "all"
	}
	var err error
	o.Settings, err = a.RunSettings()
	return o, err
}

func run(opts *Options) error {
	a := opts.App
	o, err := driftOptions(opts)
	if err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	h := store.NewHandle(path)
	if opts.Every == 0 {
		d, err := orch.Drift(context.Background(), h, o)
		if err != nil {
			return err
		}
		if err := render(a, d, opts.JSON); err != nil {
			return err
		}
		return exitOf(d)
	}
	return every(opts, h, o)
}

// every checks every opts.Every until SIGINT or SIGTERM, one summary line
// per round; it exits with the last round's status.
func every(opts *Options, h *store.Handle, o orch.DriftOptions) error {
	a := opts.App
	unlock, err := lockSelection(h, o.Selection)
	if err != nil {
		return err
	}
	defer unlock()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var last error
	for {
		d, err := orch.Drift(ctx, h, o)
		if ctx.Err() != nil {
			return last
		}
		if err != nil {
			fmt.Fprintf(a.IO.Err, "%s drift: %v\n", a.Now().Format("15:04:05"), err)
			last = err
		} else {
			fmt.Fprintf(a.IO.Out, "%s %s\n", a.Now().Format("15:04:05"), summary(d))
			last = exitOf(d)
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(opts.Every):
		}
	}
}

// lockSelection takes, on a store whose claims are leases (PostgreSQL),
// the claim that one drift --every of this selection runs.
func lockSelection(h *store.Handle, selection string) (func(), error) {
	locks, err := h.OpenLocks(store.LockOptions{})
	if err != nil {
		return nil, err
	}
	name := "drift " + selection
	release, ok, err := locks.TryClaim(name)
	if err != nil {
		_ = locks.Close()
		return nil, err
	}
	if !ok {
		who := ""
		if hd, held, err := locks.ClaimHolder(name); err == nil && held {
			who = fmt.Sprintf(" (pid %d on %s)", hd.PID, hd.Host)
		}
		_ = locks.Close()
		return nil, app.Usagef("another solar drift --every checks %s already%s; stop it first", selection, who)
	}
	return func() {
		_ = release()
		_ = locks.Close()
	}, nil
}

// exitOf is a drift run's exit: 1 if a check failed, 6 if a resource
// drifted, else 0.
func exitOf(d *orch.DriftRun) error {
	if n := d.Count(orch.DriftError); n > 0 {
		return fmt.Errorf("%s failed (solar drift show %s)", app.Count(n, "check"), d.ID)
	}
	if n := d.Count(orch.DriftDrifted); n > 0 {
		return &app.DriftedError{Msg: app.Count(n, "resource") + " drifted"}
	}
	return nil
}

// summary is one line about d.
func summary(d *orch.DriftRun) string {
	s := fmt.Sprintf("drift %s: %s: %d in sync, %d drifted, %d cannot check, %d errors",
		d.ID, app.Count(len(d.Results), "resource"), d.Count(orch.DriftInSync), d.Count(orch.DriftDrifted), d.Count(orch.DriftCannot), d.Count(orch.DriftError))
	if len(d.Staged) > 0 {
		s += "; staged " + strings.Join(d.Staged, ", ")
	}
	return s
}
