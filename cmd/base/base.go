package base

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// NewCmd returns "solar base" with its verbs.
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "base",
		Aliases: []string{"bases"},
		Short:   "List, show, export and prune the bases kept in the store",
		Long: `Creating a resource stores its base's files in the store, once per content
digest (sha256 over paths, modes and bytes); runs use those files, never the
directory they were read from. A base is named NAME, or NAME@DIGEST where
DIGEST is at least 6 hex digits of its digest; NAME alone is the base of that
name stored last. Stored bases go only by "solar base prune".` + "\n" + app.ExitHelp,
		Example: `  solar base list
  solar base show file
  solar base export file@3f2a9c /tmp/file-base
  solar base prune --dry-run`,
	}
	c.AddCommand(NewCmdList(a, nil), NewCmdShow(a, nil), NewCmdExport(a, nil), NewCmdPrune(a, nil))
	return c
}
