package storecmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/store"
)

// CopyOptions are the inputs of "solar store copy".
type CopyOptions struct {
	App      *app.App
	From, To string
	Force    bool
	JSON     bool
}

// NewCmdCopy builds "solar store copy".
func NewCmdCopy(a *app.App, runF func(*CopyOptions) error) *cobra.Command {
	opts := &CopyOptions{App: a}
	c := &cobra.Command{
		Use:   "copy --from SRC --to DST",
		Short: "Copy a whole store to another location or backend",
		Long: `Copy every resource, connection, rule, staged entry, history entry, plan, task
log and trusted host key from SRC to DST, in one transaction of DST: all of it
or nothing. SRC and DST are each a bbolt path or a postgres:// URL, so this
moves a team onto a PostgreSQL server, or takes a backup of one into a file.
SRC is only read. A DST that holds data is refused unless --force, which
replaces it. Stop runs on SRC first: a copy taken while a plan runs holds the
states its last write left.` + "\n" + app.ExitHelp,
		Example: `  solar store copy --from ~/.local/state/solar/solar.db --to 'postgres://solar@db1/solar?schema=team_a'
  solar store copy --from 'postgres://solar@db1/solar?schema=team_a' --to backup-$(date +%F).db`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return copyRun(opts)
		},
	}
	c.Flags().StringVar(&opts.From, "from", "", "the store to copy (bbolt path or postgres:// URL)")
	c.Flags().StringVar(&opts.To, "to", "", "where to copy it (bbolt path or postgres:// URL)")
	c.Flags().BoolVar(&opts.Force, "force", false, "replace what the destination holds")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type copyView struct {
	FormatVersion int            `json:"format_version"`
	From          string         `json:"from"`
	To            string         `json:"to"`
	Keys          int            `json:"keys"`
	Buckets       map[string]int `json:"buckets"`
}

func copyRun(opts *CopyOptions) error {
	a := opts.App
	if opts.From == "" || opts.To == "" {
		return app.Usagef("store copy needs both --from and --to")
	}
	if opts.From == opts.To {
		return app.Usagef("--from and --to are the same store (%s)", store.Redact(opts.From))
	}
	src, err := a.OpenAt(opts.From, true, true)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := a.OpenAt(opts.To, false, true)
	if err != nil {
		return err
	}
	defer dst.Close()
	n, err := store.Copy(src, dst, opts.Force)
	if err != nil {
		return err
	}
	v := copyView{FormatVersion: app.FormatVersion, From: src.Location(), To: dst.Location(), Keys: n.Total(), Buckets: n}
	if opts.JSON {
		return app.JSON(a.IO.Out, v)
	}
	fmt.Fprintf(a.IO.Out, "copied %d keys from %s (%s) to %s (%s)\n", v.Keys, app.Escape(v.From), src.Kind(), app.Escape(v.To), dst.Kind())
	return nil
}
