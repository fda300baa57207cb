package base

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/store"
)

// ExportOptions are the inputs of "solar base export".
type ExportOptions struct {
	App *app.App
	Ref string
	Dir string
}

// NewCmdExport builds "solar base export".
func NewCmdExport(a *app.App, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{App: a}
	c := &cobra.Command{
		Use:   "export NAME[@DIGEST] DIR",
		Short: "Write a stored base's files into a directory",
		Long: `Write the files of a stored base into DIR, byte for byte, with the modes they
were stored with; links stay links. DIR must not exist or be empty. The files
are verified against the digest first: a damaged record writes nothing. NAME
alone is the base of that name stored last.` + "\n" + app.ExitHelp,
		Example: `  solar base export file /tmp/file-base
  solar base export file@3f2a9c ./file && solar resource upgrade f1 ./file`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref, opts.Dir = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return exportRun(opts)
		},
	}
	return c
}

func exportRun(opts *ExportOptions) error {
	if err := emptyDir(opts.Dir); err != nil {
		return err
	}
	var c *bases.Content
	var found *bases.Found
	err := opts.App.View(func(tx *store.Tx) error {
		var err error
		if found, err = bases.Find(tx, opts.Ref); err != nil {
			return err
		}
		c, err = bases.Get(tx, found.Name, found.Digest)
		return err
	})
	if err != nil {
		return err
	}
	if err := bases.Export(c, opts.Dir); err != nil {
		return fmt.Errorf("export base %s into %s: %w", found.Name, opts.Dir, err)
	}
	_, err = fmt.Fprintf(opts.App.IO.Out, "exported %s@%s (%s) into %s\n", app.Escape(found.Name), bases.Short(found.Digest), app.Count(len(c.Files), "entry"), app.Escape(opts.Dir))
	return err
}

// emptyDir refuses a DIR that exists and is not an empty directory: an
// export never mixes a base with other files, nor overwrites any.
func emptyDir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return app.Usagef("export directory %s: %v", dir, errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return app.Usagef("export directory %s is not a directory; give a new or empty one", dir)
	}
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		return app.Usagef("export directory %s is not empty; give a new or empty one", dir)
	}
	return nil
}
