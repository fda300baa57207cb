package connection

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// ShowOptions are the inputs of "solar connections show".
type ShowOptions struct {
	App      *app.App
	Resource string
	JSON     bool
}

// NewCmdConnections builds "solar connections" with its "show" verb.
func NewCmdConnections(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "connections",
		Aliases: []string{"connection", "conn"},
		Short:   "Inspect connections between resources",
		Long: `A connection makes inputs of a receiver follow values of an emitter ("solar
connect"). "solar connections show" lists them, each mapping as
emitter.input -> receiver.input.` + "\n" + app.ExitHelp,
		Example: "  solar connections show\n  solar connections show keystone --json",
	}
	c.AddCommand(NewCmdShow(a, nil))
	return c
}

// NewCmdShow builds "solar connections show".
func NewCmdShow(a *app.App, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{App: a}
	c := &cobra.Command{
		Use:   "show [RESOURCE]",
		Short: "List connections (all, or those into and out of RESOURCE)",
		Long:  "List every connection as emitter.input -> receiver.input, in connection order.\n" + app.ExitHelp,
		Example: `  solar connections show
  solar connections show mariadb --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Resource = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return showRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type mappingView struct {
	From string `json:"from"`
	To   string `json:"to"`
	Key  string `json:"key,omitempty"`
	Tag  string `json:"tag,omitempty"`
}

type connView struct {
	Emitter  string        `json:"emitter"`
	Receiver string        `json:"receiver"`
	Mappings []mappingView `json:"mappings"`
}

type connsView struct {
	FormatVersion int        `json:"format_version"`
	Connections   []connView `json:"connections"`
}

func showRun(opts *ShowOptions) error {
	out := connsView{FormatVersion: app.FormatVersion, Connections: []connView{}}
	err := opts.App.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if opts.Resource != "" {
			if _, err := cat.Get(opts.Resource); err != nil {
				return err
			}
		}
		all, err := cat.AllConnections()
		if err != nil {
			return err
		}
		for _, c := range all {
			if opts.Resource != "" && c.Emitter != opts.Resource && c.Receiver != opts.Resource {
				continue
			}
			v := connView{Emitter: c.Emitter, Receiver: c.Receiver, Mappings: []mappingView{}}
			for _, m := range c.Mappings {
				v.Mappings = append(v.Mappings, mappingView{From: m.From, To: m.To, Key: m.Key, Tag: m.Tag})
			}
			out.Connections = append(out.Connections, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, out)
	}
	var rows [][]string
	for _, c := range out.Connections {
		for _, m := range c.Mappings {
			to := m.To
			if m.Key != "" {
				to += ":" + m.Key
			}
			if m.Tag != "" {
				to += "|" + m.Tag
			}
			rows = append(rows, []string{c.Emitter + "." + m.From, "->", c.Receiver + "." + to})
		}
	}
	return app.Table(opts.App.IO.Out, []string{"emitter", "", "receiver"}, rows)
}
