package events

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// NewCmd returns "solar events" with its verbs.
func NewCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "events",
		Aliases: []string{"event", "rules"},
		Short:   "Add, list and remove event rules between actions",
		Long: `Rules connect actions of resources:

  on <emitter>.<action> <event> <subscriber>.<action>   react: when the emitter's
      action is in a plan, add the subscriber's action after it; run it only if
      the event happened. Events: changed, ok, success, failed, any.
  after <emitter>.<action> <subscriber>.<action>        dependency: order the two
      when both are in a plan; adds no work.

Resource names may contain dots (rmq.1): the action follows the last dot.` + "\n" + app.ExitHelp,
		Example: `  solar events add 'on mariadb.run changed keystone.run'
  solar events add -f rules.txt    # one rule per line, '#' starts a comment
  solar events list keystone
  solar events remove 'on mariadb.run changed keystone.run'`,
	}
	c.AddCommand(NewCmdAdd(a, nil), NewCmdList(a, nil), NewCmdRemove(a, nil))
	return c
}

// AddOptions are the inputs of "solar events add".
type AddOptions struct {
	App   *app.App
	Rules []string
	File  string
}

// NewCmdAdd builds "solar events add".
func NewCmdAdd(a *app.App, runF func(*AddOptions) error) *cobra.Command {
	opts := &AddOptions{App: a}
	c := &cobra.Command{
		Use:   "add RULE... | -f FILE",
		Short: "Add rules (all or nothing; duplicates are a no-op)",
		Long: `Add one or more rules, each as one argument, or every rule of a file (one per
line, '#' starts a comment; "-" reads stdin). All rules are checked first: a rule
that does not parse, or names an unknown resource or an action its base does not
define, rejects the whole set.` + "\n" + app.ExitHelp,
		Example: `  solar events add 'on mariadb.run changed keystone.run' 'after keystone.run haproxy.run'
  printf '# one rule per line\non keystone.update changed keystone.restart\n' > rules.txt
  solar events add -f rules.txt`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Rules = args
			if (len(args) == 0) == (opts.File == "") {
				return app.Usagef("give rules as arguments or -f FILE, not both and not neither")
			}
			if runF != nil {
				return runF(opts)
			}
			return addRun(opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "read rules from FILE (- for stdin)")
	return c
}

func addRun(opts *AddOptions) error {
	var rules []events.Rule
	if opts.File != "" {
		var (
			raw []byte
			err error
		)
		if opts.File == "-" {
			raw, err = resources.ReadInput(opts.App.IO.In, "standard input", resources.RulesMax)
		} else {
			raw, err = resources.ReadInputFile(opts.File, resources.RulesMax)
		}
		if err != nil {
			return app.Usagef("rules file: %v", err)
		}
		if rules, err = events.ParseLines(bytes.NewReader(raw), opts.File); err != nil {
			return err
		}
	}
	for _, text := range opts.Rules {
		r, err := events.Parse(text)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	var added int
	err := opts.App.Update(func(tx *store.Tx) error {
		var err error
		added, err = events.Add(tx, resources.NewCatalog(tx), rules...)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "added %s (%d already present)\n", app.Count(added, "rule"), len(rules)-added)
	return nil
}

// ListOptions are the inputs of "solar events list".
type ListOptions struct {
	App      *app.App
	Resource string
	JSON     bool
}

// NewCmdList builds "solar events list".
func NewCmdList(a *app.App, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:   "list [RESOURCE]",
		Short: "List rules in canonical form, in the order they were added",
		Long:  "List every rule, or those naming RESOURCE as emitter or subscriber, one per line.\n" + app.ExitHelp,
		Example: `  solar events list
  solar events list keystone --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Resource = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type ruleView struct {
	Rule       string `json:"rule"`
	Kind       string `json:"kind"`
	Emitter    string `json:"emitter"`
	Event      string `json:"event"` // "" for an after rule, as on plan edges
	Subscriber string `json:"subscriber"`
}

type rulesView struct {
	FormatVersion int        `json:"format_version"`
	Rules         []ruleView `json:"rules"`
}

func listRun(opts *ListOptions) error {
	var rules []events.Rule
	err := opts.App.View(func(tx *store.Tx) error {
		var err error
		if opts.Resource == "" {
			rules, err = events.List(tx)
			return err
		}
		if _, err := resources.NewCatalog(tx).Get(opts.Resource); err != nil {
			return err
		}
		rules, err = events.ListFor(tx, opts.Resource)
		return err
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		out := rulesView{FormatVersion: app.FormatVersion, Rules: []ruleView{}}
		for _, r := range rules {
			out.Rules = append(out.Rules, ruleView{Rule: r.String(), Kind: r.Kind.String(), Emitter: r.Emitter.String(), Event: string(r.Event), Subscriber: r.Subscriber.String()})
		}
		return app.JSON(opts.App.IO.Out, out)
	}
	var b strings.Builder
	for _, r := range rules {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	_, err = fmt.Fprint(opts.App.IO.Out, b.String())
	return err
}

// RemoveOptions are the inputs of "solar events remove".
type RemoveOptions struct {
	App   *app.App
	Rules []string
}

// NewCmdRemove builds "solar events remove".
func NewCmdRemove(a *app.App, runF func(*RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{App: a}
	return &cobra.Command{
		Use:     "remove RULE...",
		Aliases: []string{"rm"},
		Short:   "Remove rules (all or nothing)",
		Long:    "Remove rules given in the same form as \"events add\". A rule that is not stored fails the command and nothing is removed.\n" + app.ExitHelp,
		Example: `  solar events remove 'on mariadb.run changed keystone.run'`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Rules = args
			if runF != nil {
				return runF(opts)
			}
			return removeRun(opts)
		},
	}
}

func removeRun(opts *RemoveOptions) error {
	rules := make([]events.Rule, 0, len(opts.Rules))
	for _, text := range opts.Rules {
		r, err := events.Parse(text)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	err := opts.App.Update(func(tx *store.Tx) error {
		for _, r := range rules {
			if err := events.Remove(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "removed %s\n", app.Count(len(rules), "rule"))
	return nil
}
