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
		if _, err := cat.Disconnect(opts.Emitter, opts.Receiver); err != nil {
			return err
		}
		for _, r := range events.DefaultRules(cat, opts.Emitter, opts.Receiver) {
			if events.Has(tx, r) {
				if err := events.Remove(tx, r); err != nil {
					return err
				}
				removed++
			}
		}
		var err error
		staged, err = staging.New(cat, opts.App.Now).Touch("disconnect "+opts.Emitter, opts.Receiver)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "disconnected %s -> %s; %d rules removed%s\n", opts.Emitter, opts.Receiver, removed, note(staged))
	return nil
}
