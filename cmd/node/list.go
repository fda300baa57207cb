package node

import (
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// ListOptions are the inputs of "solar node list".
type ListOptions struct {
	App  *app.App
	JSON bool
}

// NewCmdList builds "solar node list".
func NewCmdList(a *app.App, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:   "list",
		Short: "List the nodes: transport, address, login and trusted host key",
		Long: `List every node (resource whose base has node: true) with its transport, the
address and user an SSH login uses, and the fingerprint of its trusted host key
("untrusted" until solar node trust; "-" for a local node).` + "\n" + app.ExitHelp,
		Example: "  solar node list\n  solar node list --json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type nodeView struct {
	Name        string `json:"name"`
	Transport   string `json:"transport"`
	Address     string `json:"address"`
	User        string `json:"user"`
	Key         string `json:"key"`
	Trusted     bool   `json:"trusted"`
	Fingerprint string `json:"fingerprint"`
	// TrustedBy and TrustedAt say who trusted the key and when; "" when
	// untrusted, TrustedBy "" too for keys trusted before actors.
	TrustedBy string `json:"trusted_by"`
	TrustedAt string `json:"trusted_at"`
}

type listView struct {
	FormatVersion int        `json:"format_version"`
	Nodes         []nodeView `json:"nodes"`
}

func listRun(opts *ListOptions) error {
	a := opts.App
	out := listView{FormatVersion: app.FormatVersion, Nodes: []nodeView{}}
	cfg, err := a.SSHConfig()
	if err != nil {
		return err
	}
	err = a.View(func(tx *store.Tx) error {
		all, err := nodes.List(resources.NewCatalog(tx))
		if err != nil {
			return err
		}
		for _, n := range all {
			v := nodeView{Name: n.Name, Transport: n.Transport}
			if n.SSH() {
				v.Address, v.Key = n.Addr(), n.Key
				v.User = n.User
				if v.User == "" {
					v.User = cfg.LoginName()
				}
			}
			if n.Trusted != nil {
				v.Trusted, v.Fingerprint = true, n.Trusted.Fingerprint
				v.TrustedBy, v.TrustedAt = n.Trusted.By, n.Trusted.At.UTC().Format("2006-01-02T15:04:05Z")
			}
			out.Nodes = append(out.Nodes, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(a.IO.Out, out)
	}
	rows := make([][]string, 0, len(out.Nodes))
	for _, v := range out.Nodes {
		addr, user, fp := v.Address, v.User, v.Fingerprint
		switch {
		case v.Transport != resources.TransportSSH:
			addr, user, fp = "-", "-", "-"
		case !v.Trusted:
			fp = "untrusted"
		}
		rows = append(rows, []string{v.Name, v.Transport, addr, user, fp})
	}
	return app.Table(a.IO.Out, []string{"node", "transport", "address", "user", "fingerprint"}, rows)
}
