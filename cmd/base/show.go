package base

import (
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ShowOptions are the inputs of "solar base show".
type ShowOptions struct {
	App  *app.App
	Ref  string
	JSON bool
}

// NewCmdShow builds "solar base show".
func NewCmdShow(a *app.App, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{App: a}
	c := &cobra.Command{
		Use:   "show NAME[@DIGEST]",
		Short: "Show a stored base: its files, digest, and what uses it",
		Long: `Show a stored base: its full digest, size, the directory it was first read
from (nothing runs from there), its files with their modes and sizes (a link
with its target), the resources made of it, the plans whose tasks are pinned
to it and the history entries that keep a removed resource of it. NAME alone
shows the base of that name stored last, and says how many others of that
name are stored; NAME@DIGEST (at least 6 hex digits) picks one.` + "\n" + app.ExitHelp,
		Example: `  solar base show file
  solar base show file@3f2a9c --json | jq -r '.files[].path'`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if runF != nil {
				return runF(opts)
			}
			return showRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type fileView struct {
	Path string `json:"path"`
	// Type is "file", "dir" or "link".
	Type string `json:"type"`
	// Mode is the permission bits in octal ("0755").
	Mode   string `json:"mode"`
	Size   int64  `json:"size"`
	Target string `json:"target,omitempty"`
}

type showView struct {
	FormatVersion int       `json:"format_version"`
	Name          string    `json:"name"`
	Version       string    `json:"version"`
	Digest        string    `json:"digest"`
	Size          int64     `json:"size"`
	StoredAt      time.Time `json:"stored_at"`
	Source        string    `json:"source"`
	// Others is how many other bases of the same name are stored.
	Others    int        `json:"others"`
	Files     []fileView `json:"files"`
	Resources []string   `json:"resources"`
	Plans     []string   `json:"plans"`
	History   []string   `json:"history"`
}

func showRun(opts *ShowOptions) error {
	v := showView{FormatVersion: app.FormatVersion, Files: []fileView{}}
	err := opts.App.View(func(tx *store.Tx) error {
		found, err := bases.Find(tx, opts.Ref)
		if err != nil {
			return err
		}
		c, err := bases.Get(tx, found.Name, found.Digest)
		if err != nil {
			return err
		}
		use, err := orch.BaseUsers(tx)
		if err != nil {
			return err
		}
		v.Name, v.Version, v.Digest, v.Size, v.StoredAt, v.Source, v.Others =
			found.Name, found.Version, found.Digest, c.Size(), found.StoredAt, found.Source, found.Others
		for _, f := range c.Files {
			v.Files = append(v.Files, newFileView(f))
		}
		v.Resources, v.Plans, v.History = nonNil(use.Resources[found.Digest]), nonNil(use.Plans[found.Digest]), nonNil(use.History[found.Digest])
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, v)
	}
	return printShow(opts.App.IO.Out, v)
}

func newFileView(f bases.File) fileView {
	v := fileView{Path: f.Path, Type: "file", Mode: fmt.Sprintf("%04o", f.Mode.Perm()), Size: int64(len(f.Data))}
	switch {
	case f.Mode.IsDir():
		v.Type = "dir"
	case f.Mode&fs.ModeSymlink != 0:
		v.Type, v.Target = "link", string(f.Data)
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func printShow(w io.Writer, v showView) error {
	fmt.Fprintf(w, "%s@%s\n", app.Escape(v.Name), v.Digest)
	fmt.Fprintf(w, "  version:   %s\n", app.Escape(orDash(v.Version)))
	fmt.Fprintf(w, "  size:      %d bytes in %s\n", v.Size, app.Count(len(v.Files), "entry"))
	fmt.Fprintf(w, "  stored:    %s\n", v.StoredAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "  source:    %s (read there once; nothing runs from it)\n", app.Escape(orDash(v.Source)))
	fmt.Fprintf(w, "  resources: %s\n", app.Escape(orDash(strings.Join(v.Resources, ", "))))
	fmt.Fprintf(w, "  plans:     %s\n", orDash(strings.Join(v.Plans, ", ")))
	if len(v.History) > 0 {
		fmt.Fprintf(w, "  history:   %s (committed removals that revert would undo)\n", strings.Join(v.History, ", "))
	}
	if v.Others > 0 {
		fmt.Fprintf(w, "  others:    %s of this name stored (solar base list; pick one with NAME@DIGEST)\n", app.Count(v.Others, "other base"))
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(v.Files))
	for _, f := range v.Files {
		path := f.Path
		if f.Type == "link" {
			path += " -> " + f.Target
		}
		rows = append(rows, []string{f.Type, f.Mode, strconv.FormatInt(f.Size, 10), path})
	}
	return app.Table(w, []string{"type", "mode", "size", "path"}, rows)
}
