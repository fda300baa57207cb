package connection

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// ConnectOptions are the inputs of "solar connect".
type ConnectOptions struct {
	App      *app.App
	Emitter  string
	Receiver string
	Mapping  []string
	NoEvents bool
}

// NewCmdConnect builds "solar connect".
func NewCmdConnect(a *app.App, runF func(*ConnectOptions) error) *cobra.Command {
	opts := &ConnectOptions{App: a}
	c := &cobra.Command{
		Use:   "connect EMITTER RECEIVER [MAPPING]...",
		Short: "Make a receiver's inputs follow an emitter's values",
		Long: `Connect EMITTER to RECEIVER. Each mapped receiver input then follows the
emitter's effective value, transitively, and cannot be written directly.

MAPPING is e_in->r_in pairs (comma separated or several arguments), or a JSON
object {"e_in": "r_in"}. r_in:key sets one key of an object input; into a
list of objects it sets one field of this emitter's element (one element per
emitter, fields merged), and r_in:key|tag names the element instead, so that
several emitters can fill one element. Without a
mapping every input with the same name is connected; location only flows from
node bases (node: true), so "solar connect node1 db" places db on node1.
A list input receives one element per emitter, in connection order; a simple
input follows the last connection made. Connecting the same pair again adds
mappings; a mapping into an input already mapped from that emitter replaces it.

Unless --no-events, the default rules are added:
  after EMITTER.run RECEIVER.run, after EMITTER.update RECEIVER.update,
  after RECEIVER.remove EMITTER.remove
A default rule that would close a cycle of after rules is left out, with a
warning. Disconnecting removes the rules the connection added, no others.` + "\n" + app.ExitHelp,
		Example: `  solar connect node1 mariadb
  solar connect mariadb keystone 'ip->db_host,port->db_port'
  solar connect keystone haproxy 'port->ports'
  solar connect keystone haproxy '{"admin_port": "ports"}'
  solar connect web1 lb 'ip->servers:ip,port->servers:port'
  solar connect node1 lb 'ip->servers:ip|web'
  solar connect mariadb keystone 'root_password->db_password' --no-events`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Emitter, opts.Receiver, opts.Mapping = args[0], args[1], args[2:]
			if runF != nil {
				return runF(opts)
			}
			return connectRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.NoEvents, "no-events", false, "do not add the default dependency rules")
	return c
}

func connectRun(opts *ConnectOptions) error {
	mappings, err := resources.ParseMappings(opts.Mapping)
	if err != nil {
		return err
	}
	var (
		conn    *resources.Connection
		staged  []*staging.Entry
		added   int
		skipped []string
	)
	err = opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		var err error
		if conn, err = cat.Connect(opts.Emitter, opts.Receiver, mappings); err != nil {
			return err
		}
		// A resource connected to itself needs no rule to order it.
		if !opts.NoEvents && opts.Emitter != opts.Receiver {
			owned, skip, err := events.AddDefaults(tx, cat, events.Pair{Emitter: opts.Emitter, Receiver: opts.Receiver})
			if err != nil {
				return err
			}
			skipped = skip
			if err := cat.AddConnectionRules(opts.Emitter, opts.Receiver, owned[0]); err != nil {
				return err
			}
			added = len(owned[0])
		}
		staged, err = staging.New(cat, opts.App.Now).By(opts.App.Actor()).Touch("connect "+opts.Emitter, opts.Receiver)
		return err
	})
	if err != nil {
		return err
	}
	ms := make([]string, len(conn.Mappings))
	for i, m := range conn.Mappings {
		ms[i] = m.String()
	}
	fmt.Fprintf(opts.App.IO.Out, "connected %s -> %s (%s); %s added%s\n", opts.Emitter, opts.Receiver, strings.Join(ms, ", "), app.Count(added, "rule"), note(staged))
	for _, r := range skipped {
		fmt.Fprintf(opts.App.IO.Err, "warning: left out %q: it would close a cycle of after rules\n", r)
	}
	return nil
}

func note(ents []*staging.Entry) string {
	if len(ents) == 0 {
		return ""
	}
	keys := make([]string, len(ents))
	for i, e := range ents {
		keys[i] = e.Key
	}
	return "; staged " + strings.Join(keys, ", ")
}
