package base

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// PruneOptions are the inputs of "solar base prune".
type PruneOptions struct {
	App    *app.App
	DryRun bool
	JSON   bool
}

// NewCmdPrune builds "solar base prune".
func NewCmdPrune(a *app.App, runF func(*PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{App: a}
	c := &cobra.Command{
		Use:   "prune",
		Short: "Remove the stored bases nothing refers to",
		Long: `Remove every stored base that no resource is made of, no task of a plan is
pinned to and no history entry keeps (a committed removal keeps the removed
resource, which "solar ch revert" recreates with its base). Nothing else
removes a stored base: removing or upgrading resources leaves it, until a
prune. --dry-run lists what would go and changes nothing.` + "\n" + app.ExitHelp,
		Example: `  solar base prune --dry-run
  solar base prune --json | jq -r '.removed[].digest'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return pruneRun(opts)
		},
	}
	c.Flags().BoolVarP(&opts.DryRun, "dry-run", "n", false, "list what would be removed, remove nothing")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type pruneView struct {
	FormatVersion int        `json:"format_version"`
	DryRun        bool       `json:"dry_run"`
	Removed       []listItem `json:"removed"`
}

func pruneRun(opts *PruneOptions) error {
	v := pruneView{FormatVersion: app.FormatVersion, DryRun: opts.DryRun, Removed: []listItem{}}
	prune := func(tx *store.Tx) error {
		gone, err := orch.PruneBases(tx, opts.DryRun)
		for _, in := range gone {
			v.Removed = append(v.Removed, listItem{Name: in.Name, Version: in.Version, Digest: in.Digest, Size: in.Size, Files: in.Files, StoredAt: in.StoredAt})
		}
		return err
	}
	var err error
	if opts.DryRun {
		err = opts.App.View(prune)
	} else {
		err = opts.App.Update(prune)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, v)
	}
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	var total int64
	for _, b := range v.Removed {
		fmt.Fprintf(opts.App.IO.Out, "%s %s@%s (%d bytes)\n", verb, app.Escape(b.Name), bases.Short(b.Digest), b.Size)
		total += b.Size
	}
	_, err = fmt.Fprintf(opts.App.IO.Out, "%s %s, %d bytes\n", verb, app.Count(len(v.Removed), "base"), total)
	return err
}
