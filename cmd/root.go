package cmd

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/cmd/base"
	"github.com/solarops/solar/cmd/ch"
	"github.com/solarops/solar/cmd/connection"
	"github.com/solarops/solar/cmd/drift"
	"github.com/solarops/solar/cmd/events"
	"github.com/solarops/solar/cmd/inputs"
	"github.com/solarops/solar/cmd/node"
	orchcmd "github.com/solarops/solar/cmd/orch"
	"github.com/solarops/solar/cmd/resource"
	"github.com/solarops/solar/cmd/runner"
	"github.com/solarops/solar/cmd/storecmd"
)

// Version is set at build time with -ldflags "-X github.com/solarops/solar/cmd.Version=...".
var Version = "dev"

// Main runs solar with args and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	defer startProfile(getenv, stderr)()
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
	var (
		fe *app.FailedError
		ne *app.NothingError
	)
	if !errors.As(err, &fe) && !errors.As(err, &ne) && !errors.As(err, new(*app.InterruptedError)) {
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

// oneLine makes an error message one line that is safe on a terminal: its
// line breaks become "; ", and control characters from data it quotes
// (file names, values) are escaped.
func oneLine(s string) string {
	return app.Escape(strings.ReplaceAll(strings.TrimSpace(s), "\n", "; "))
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
(~/.local/state/solar/solar.db), or a PostgreSQL URL that a team shares
(postgres://USER@HOST/DB?schema=NAME). A write that makes a new store says
"created a new store at ..." on stderr.` + "\n" + app.ExitHelp,
		Example: `  solar resource create node1 testdata/resources/node ip=10.0.0.1 --tags env1
  solar resource create db testdata/resources/mariadb dir=/tmp/solar root_password=s3cret --tags env1
  solar connect node1 db
  solar ch stage -d
  solar ch process -t env1 && solar orch run-once last && solar orch report last`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	// --version prints what "solar version" prints.
	root.SetVersionTemplate("solar {{.Version}}\n")
	// Declared here so that cobra does not give it the shorthand -v, which
	// operators type from Ansible habit meaning "verbose": on a command
	// without --verbose, -v is refused (flagError) rather than printing
	// the version and exiting 0 without running anything.
	root.Flags().Bool("version", false, "print solar's version and exit (the same as solar version)")
	root.PersistentFlags().StringVar(&a.DBFlag, "db", "", "the store: a file path or a PostgreSQL URL postgres://... (default $SOLAR_DB or ~/.local/state/solar/solar.db)")
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(newCmdHelp())
	root.AddCommand(
		resource.NewCmd(a),
		base.NewCmd(a),
		events.NewCmd(a),
		ch.NewCmd(a),
		orchcmd.NewCmd(a),
		node.NewCmd(a),
		storecmd.NewCmd(a),
		runner.NewCmd(a, version()),
		drift.NewCmd(a),
		connection.NewCmdConnect(a, nil),
		connection.NewCmdDisconnect(a, nil),
		connection.NewCmdConnections(a),
		inputs.NewCmd(a),
		newCmdVersion(a),
		newCmdCompletion(a),
	)
	checkUsage(root)
	addCompletion(a, root)
	// Groups are runnable only to refuse unknown verbs (see checkUsage):
	// their usage shows "solar ch [command]", not also a bare "solar ch".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	return root
}

// checkUsage makes every misuse of the tree a usage error (exit 2) of one
// line. Left to cobra, a group given an unknown verb prints its help and
// exits 0, so a typo in a script goes unnoticed; and its argument-count
// errors read like an internal failure.
func checkUsage(c *cobra.Command) {
	switch {
	case c.HasSubCommands() && !c.Runnable():
		// A group runs only to refuse an unknown verb. A set Args replaces
		// cobra's own check (root only, its suggestion spread over lines),
		// and cobra calls Args only for a runnable command.
		c.Args = unknownCommand
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		c.SuggestionsMinimumDistance = 2
	case c.Args != nil:
		c.Args = countArgs(c.Args)
	}
	for _, sub := range c.Commands() {
		checkUsage(sub)
	}
}

// unknownCommand refuses any argument given to a group: it can only be a
// verb the group does not have.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if c.HasParent() {
		msg += fmt.Sprintf(" for %q", c.CommandPath())
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + quoteOr(s) + "?)"
	} else {
		msg += fmt.Sprintf(" (see %s --help)", c.CommandPath())
	}
	return &app.UsageError{Err: errors.New(msg)}
}

// quoteOr renders ["a", "b", "c"] as `"a", "b" or "c"`.
func quoteOr(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// countArgs wraps a command's argument check so that its error says what
// is wrong in words and shows the usage line.
func countArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if check(c, args) == nil {
			return nil
		}
		what := "too many arguments"
		if wantsMore(check, c, args) {
			what = "missing arguments"
		}
		return &app.UsageError{Cmd: c.CommandPath(), Err: fmt.Errorf("%s (usage: %s)", what, strings.TrimSuffix(c.UseLine(), " [flags]"))}
	}
}

// maxArgs bounds how many more arguments wantsMore tries; no solar command
// requires more than two.
const maxArgs = 4

// wantsMore reports whether check would accept args with more arguments
// added: then some were missing, else there were too many. Asking the
// check itself keeps this right for every cobra validator without parsing
// its message.
func wantsMore(check cobra.PositionalArgs, c *cobra.Command, args []string) bool {
	more := append(args[:len(args):len(args)], "")
	for range maxArgs {
		if check(c, more) == nil {
			return true
		}
		more = append(more, "")
	}
	return false
}

// flagError makes pflag's errors one line that names the command and the
// flag by both its names ("-n/--limit"), without Go parser jargon.
func flagError(c *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		err = fmt.Errorf("invalid value %q for %s: %s", ive.GetValue(), flagName(ive.GetFlag()), invalidBecause(ive.Unwrap()))
	}
	if strings.HasPrefix(err.Error(), "unknown shorthand flag: 'v'") {
		return &app.UsageError{Cmd: c.CommandPath(), Err: fmt.Errorf("unknown flag -v: -v means --verbose, which only %s take, after the command; solar's version is --version", quoteOr(verboseCommands(c.Root())))}
	}
	return &app.UsageError{Cmd: c.CommandPath(), Err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
}

// verboseCommands names the commands that take -v (--verbose), for the
// refusal of -v anywhere else.
func verboseCommands(c *cobra.Command) []string {
	var names []string
	if f := c.LocalFlags().ShorthandLookup("v"); f != nil && f.Name == "verbose" {
		names = append(names, c.CommandPath())
	}
	for _, sub := range c.Commands() {
		names = append(names, verboseCommands(sub)...)
	}
	return names
}

func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

func invalidBecause(err error) string {
	var num *strconv.NumError
	switch {
	case errors.As(err, &num) && num.Err == strconv.ErrRange:
		return "out of range"
	case errors.As(err, &num) && num.Func == "ParseBool":
		return "want true or false"
	case errors.As(err, &num):
		return "want a number"
	}
	return err.Error()
}

// newCmdHelp replaces cobra's help command, which shows solar's own help
// for a topic it does not know, and exits 0.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:     "help [COMMAND]...",
		Short:   "Help about any command",
		Long:    "Print the help of a command, the same as COMMAND --help.\n" + app.ExitHelp,
		Example: "  solar help ch process",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return err
			}
			if err := unknownCommand(target, rest); err != nil {
				return err
			}
			return target.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			target, _, _ := c.Root().Find(args)
			var names []string
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), prefix) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

func newCmdVersion(a *app.App) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print solar's version",
		Long:    "Print solar's version, the VCS revision it was built from (when the build recorded one) and the Go version.\n" + app.ExitHelp,
		Args:    cobra.NoArgs,
		Example: "  solar version",
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(a.IO.Out, "solar %s\n", version())
			return err
		},
	}
}

// version renders "v1.2.0 (go1.26.1)" for a release or a go install of a
// tagged module, and "rev 0123456789ab-dirty (go1.26.1)" for a build from a
// checkout (whose pseudo-version would only repeat the revision).
// -buildvcs=false builds (CI) carry no revision: "dev (go1.26.1)".
func version() string {
	v := Version
	goVersion := runtime.Version()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " (" + goVersion + ")"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if mv := bi.Main.Version; v == "dev" && mv != "" && mv != "(devel)" && (rev == "" || !strings.Contains(mv, rev)) {
		v = mv
	}
	if rev == "" || v != "dev" {
		return v + " (" + goVersion + ")"
	}
	// A build from a clone: the revision is the version.
	return "rev " + rev + dirty + " (" + goVersion + ")"
}

func newCmdCompletion(a *app.App) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print a completion script for your shell.

  bash: source <(solar completion bash)
  zsh:  solar completion zsh > "${fpath[1]}/_solar"
  fish: solar completion fish > ~/.config/fish/completions/solar.fish` + "\n" + app.ExitHelp,
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
