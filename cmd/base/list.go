package base

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ListOptions are the inputs of "solar base list".
type ListOptions struct {
	App  *app.App
	JSON bool
}

// NewCmdList builds "solar base list".
func NewCmdList(a *app.App, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the bases kept in the store",
		Long: `List every stored base, by name then time stored: its version, the first 12
digits of its digest, its size in bytes, its number of entries (files,
directories, links), how many resources use it and when it was stored.` + "\n" + app.ExitHelp,
		Example: `  solar base list
  solar base list --json | jq -r '.bases[] | select(.resources == 0) | .digest'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type listItem struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	Files     int       `json:"files"`
	Resources int       `json:"resources"`
	StoredAt  time.Time `json:"stored_at"`
}

type listView struct {
	FormatVersion int        `json:"format_version"`
	Bases         []listItem `json:"bases"`
}

func listRun(opts *ListOptions) error {
	out := listView{FormatVersion: app.FormatVersion, Bases: []listItem{}}
	err := opts.App.View(func(tx *store.Tx) error {
		all, err := bases.List(tx)
		if err != nil {
			return err
		}
		use, err := orch.BaseUsers(tx)
		if err != nil {
			return err
		}
		for _, in := range all {
			out.Bases = append(out.Bases, listItem{Name: in.Name, Version: in.Version, Digest: in.Digest, Size: in.Size,
				Files: in.Files, Resources: len(use.Resources[in.Digest]), StoredAt: in.StoredAt})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, out)
	}
	rows := make([][]string, 0, len(out.Bases))
	for _, b := range out.Bases {
		rows = append(rows, []string{b.Name, orDash(b.Version), bases.Short(b.Digest), strconv.FormatInt(b.Size, 10),
			strconv.Itoa(b.Files), strconv.Itoa(b.Resources), b.StoredAt.Local().Format(time.DateTime)})
	}
	return app.Table(opts.App.IO.Out, []string{"name", "version", "digest", "size", "files", "resources", "stored"}, rows)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
