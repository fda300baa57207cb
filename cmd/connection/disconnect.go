package connection

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// DisconnectOptions are the inputs of "solar disconnect".
type DisconnectOptions struct {
	App      *app.App
	Emitter  string
	Receiver string
}

// NewCmdDisconnect builds "solar disconnect".
func NewCmdDisconnect(a *app.App, runF func(*DisconnectOptions) error) *cobra.Command {
	opts := &DisconnectOptions{App: a}
	return &cobra.Command{
		Use:   "disconnect EMITTER RECEIVER",
		Short: "Remove a connection; the receiver's own values come back",
		Long: `Remove the connection from EMITTER to RECEIVER and the default rules
"solar connect" added for it. The receiver's inputs go back to its own values;
if that changes them, the receiver is staged.` + "\n" + app.ExitHelp,
		Example: `  solar disconnect mariadb keystone`,
		Args:    cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Emitter, opts.Receiver = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return disconnectRun(opts)
		},
	}
}

func disconnectRun(opts *DisconnectOptions) error {
	var (
		staged  []*staging.Entry
		removed int
	)
	err := opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		conn, err := cat.Disconnect(opts.Emitter, opts.Receiver)
		if err != nil {
			return err
		}
		// Only the rules the connection added go with it.
		for _, text := range conn.Rules {
			r, err := events.Parse(text)
			if err != nil || !events.Has(tx, r) {
				continue
			}
			if err := events.Remove(tx, r); err != nil {
				return err
			}
			removed++
		}
		staged, err = staging.New(cat, opts.App.Now).By(opts.App.Actor()).Touch("disconnect "+opts.Emitter, opts.Receiver)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "disconnected %s -> %s; %s removed%s\n", opts.Emitter, opts.Receiver, app.Count(removed, "rule"), note(staged))
	return nil
}
