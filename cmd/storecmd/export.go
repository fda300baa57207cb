package storecmd

import (
	"bufio"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/store"
)

// ExportOptions are the inputs of "solar store export".
type ExportOptions struct {
	App *app.App
}

// NewCmdExport builds "solar store export".
func NewCmdExport(a *app.App, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{App: a}
	c := &cobra.Command{
		Use:   "export",
		Short: "Print the whole store as JSON",
		Long: `Print every bucket of the store, with its sequence and its keys in order, as
one JSON document: a value that is JSON as "json", other text as "text",
anything else as "base64". Two stores with the same content print the same
bytes, whatever their backends, so diffing two exports compares two stores.
The export holds what the store holds, secrets included: keep it as private
as the store.` + "\n" + app.ExitHelp,
		Example: "  solar store export > solar.json\n  diff <(solar store export) <(solar --db postgres://solar@db1/solar store export)",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return exportRun(opts)
		},
	}
	return c
}

func exportRun(opts *ExportOptions) error {
	a := opts.App
	w := bufio.NewWriterSize(a.IO.Out, 1<<16)
	if err := a.View(func(tx *store.Tx) error { return store.Export(tx, w) }); err != nil {
		return err
	}
	return w.Flush()
}
