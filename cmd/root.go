package cmd

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/cmd/ch"
	"github.com/solarops/solar/cmd/connection"
	"github.com/solarops/solar/cmd/events"
	orchcmd "github.com/solarops/solar/cmd/orch"
	"github.com/solarops/solar/cmd/resource"
)

// Version is set at build time with -ldflags "-X github.com/solarops/solar/cmd.Version=...".
var Version = "dev"

// Main runs solar with args and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	a := app.New(stdin, stdout, stderr, getenv)
	root := NewRoot(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return app.ExitOK
	}
	var fe *app.FailedError
	if !errors.As(err, &fe) {
		fmt.Fprintf(stderr, "%s: %s\n", where(err), oneLine(err.Error()))
	}
	return app.ExitCode(err)
}

// where names what an error is about: the command a usage error belongs
// to, else solar itself.
func where(err error) string {
	var ue *app.UsageError
	if errors.As(err, &ue) && ue.Cmd != "" {
		return ue.Cmd
	}
	return "solar"
}

// NewRoot builds the command tree.
func NewRoot(a *app.App) *cobra.Command {
	root := &cobra.Command{
		Use:   "solar",
		Short: "Stage changes to resources, plan them into an action graph, run it",
		Long: `solar orchestrates distributed systems. Create resources from bases, connect
them so data flows between them, and write event rules between their actions.
Every change is staged; "solar ch process" turns a chosen set of staged changes
into an action graph and "solar orch run-once" runs it in parallel, safely.

The store is one file: --db, else $SOLAR_DB, else $XDG_STATE_HOME/solar/solar.db
(~/.local/state/solar/solar.db).` + "\n" + app.ExitHelp,
		Example: `  solar resource create node1 testdata/resources/node ip=10.0.0.1 --tags env1
  solar resource create db testdata/resources/mariadb dir=/tmp/solar root_password=s3cret --tags env1
  solar connect node1 db
  solar ch stage -d
  solar ch process -t env1 && solar orch run-once last && solar orch report last`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.DBFlag, "db", "", "path of the store file (default $SOLAR_DB or ~/.local/state/solar/solar.db)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &app.UsageError{Err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(
		resource.NewCmd(a),
		events.NewCmd(a),
		ch.NewCmd(a),
		orchcmd.NewCmd(a),
		connection.NewCmdConnect(a, nil),
		connection.NewCmdDisconnect(a, nil),
		connection.NewCmdConnections(a),
		newCmdVersion(a),
		newCmdCompletion(a),
	)
	for _, c := range root.Commands() {
		markArgsUsage(c)
	}
	return root
}

// markArgsUsage makes argument-count errors from cobra usage errors (exit 2).
func markArgsUsage(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &app.UsageError{Err: fmt.Errorf("%s: %w (usage: %s)", cmd.CommandPath(), err, cmd.UseLine())}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markArgsUsage(sub)
	}
}

func newCmdVersion(a *app.App) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print solar's version",
		Args:    cobra.NoArgs,
		Example: "  solar version",
		RunE: func(c *cobra.Command, _ []string) error {
			v := Version
			if v == "dev" {
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					v = bi.Main.Version
				}
			}
			_, err := fmt.Fprintf(a.IO.Out, "solar %s\n", v)
			return err
		},
	}
}

func newCmdCompletion(a *app.App) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print a completion script for your shell.

  bash: source <(solar completion bash)
  zsh:  solar completion zsh > "${fpath[1]}/_solar"
  fish: solar completion fish > ~/.config/fish/completions/solar.fish`,
		Example:   "  source <(solar completion bash)",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.IO.Out, true)
			case "zsh":
				return root.GenZshCompletion(a.IO.Out)
			case "fish":
				return root.GenFishCompletion(a.IO.Out, true)
			}
			return app.Usagef("unknown shell %q (want bash, zsh or fish)", args[0])
		},
	}
}
