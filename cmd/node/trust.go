package node

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	gossh "golang.org/x/crypto/ssh"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/nodes"
	sshx "github.com/solarops/solar/orch/handler/ssh"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// TrustOptions are the inputs of "solar node trust".
type TrustOptions struct {
	App         *app.App
	Node        string
	Fingerprint string
	Yes         bool
}

// NewCmdTrust builds "solar node trust".
func NewCmdTrust(a *app.App, runF func(*TrustOptions) error) *cobra.Command {
	opts := &TrustOptions{App: a}
	c := &cobra.Command{
		Use:   "trust NODE",
		Short: "Store the SSH host key of a node, after checking its fingerprint",
		Long: `Connect to the node, print the SHA256 fingerprint of its host key and store the
key in the store, where every run (and everyone sharing the store) checks it.

With --fingerprint, the key is stored only if its fingerprint is the one given,
which you got out of band (on the node: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub).
Without it, solar asks on a terminal; elsewhere it refuses unless --yes says to
accept whatever key the node offers (only on a network you trust).
Trusting again replaces the stored key, for example after a reinstall.` + "\n" + app.ExitHelp,
		Example: `  solar node trust web1
  solar node trust web1 --fingerprint SHA256:3fZ0xkq9yVw6Y2b1T0yP6Sd7d1X8mJt0m3qfJ2mS4Ck
  solar node trust web1 --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Node = args[0]
			if opts.Fingerprint != "" && opts.Yes {
				return app.Usagef("--fingerprint and --yes cannot be used together")
			}
			if runF != nil {
				return runF(opts)
			}
			return trustRun(opts)
		},
	}
	c.Flags().StringVar(&opts.Fingerprint, "fingerprint", "", "store the key only if its fingerprint is this SHA256:...")
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "accept the offered key without asking")
	return c
}

func trustRun(opts *TrustOptions) error {
	a := opts.App
	var n *nodes.Node
	err := a.View(func(tx *store.Tx) error {
		var err error
		n, err = sshNode(resources.NewCatalog(tx), opts.Node)
		return err
	})
	if err != nil {
		return err
	}
	cfg, err := a.SSHConfig()
	if err != nil {
		return err
	}
	// The network is reached outside any store transaction: other solar
	// commands need not wait for a slow node.
	var key gossh.PublicKey
	if opts.Fingerprint != "" {
		// The operator's fingerprint may be of any of the node's keys.
		keys, err := sshx.ScanHostKeys(context.Background(), n.Name, n.Addr(), cfg.DialTimeout)
		if err != nil {
			return err
		}
		want := opts.Fingerprint
		if !strings.HasPrefix(want, "SHA256:") {
			want = "SHA256:" + want
		}
		var offered []string
		for _, k := range keys {
			if sshx.FingerprintOf(k) == want {
				key = k
				break
			}
			offered = append(offered, k.Type()+" "+sshx.FingerprintOf(k))
		}
		if key == nil {
			return nodes.Errorf(nodes.ErrFingerprint, "node %s (%s) offers %s, not %s; nothing was stored", n.Name, n.Addr(), strings.Join(offered, ", "), want)
		}
	} else {
		var err error
		if key, err = sshx.ScanHostKey(context.Background(), n.Name, n.Addr(), cfg.DialTimeout); err != nil {
			return err
		}
	}
	fp := sshx.FingerprintOf(key)
	fmt.Fprintf(a.IO.Err, "node %s (%s) offers %s key %s\n", n.Name, app.Escape(n.Addr()), key.Type(), fp)
	switch {
	case opts.Fingerprint != "":
	case opts.Yes:
	default:
		if !a.IO.InTTY {
			return app.Usagef("refusing to trust node %s without confirmation (stdin is not a terminal): check %s out of band and run solar node trust %s --fingerprint %s, or pass --yes", n.Name, fp, n.Name, fp)
		}
		fmt.Fprintf(a.IO.Err, "Trust this key for node %s? [y/N] ", n.Name)
		line, _ := bufio.NewReader(a.IO.In).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return app.Usagef("node %s not trusted: the key was not accepted", n.Name)
		}
	}
	var old *nodes.Trusted
	err = a.Update(func(tx *store.Tx) error {
		var err error
		if old, err = nodes.GetTrusted(tx, n.Name); err != nil {
			return err
		}
		return nodes.Trust(tx, n.Name, nodes.Trusted{Key: sshx.KeyText(key), Fingerprint: fp, Address: n.Addr(), At: a.Now().UTC(), By: a.Actor()})
	})
	if err != nil {
		return err
	}
	switch {
	case old == nil:
		fmt.Fprintf(a.IO.Out, "trusted node %s (%s): %s\n", n.Name, app.Escape(n.Addr()), fp)
	case old.Fingerprint == fp:
		fmt.Fprintf(a.IO.Out, "node %s (%s) was already trusted with %s\n", n.Name, app.Escape(n.Addr()), fp)
	default:
		fmt.Fprintf(a.IO.Out, "trusted node %s (%s): %s (replaces %s)\n", n.Name, app.Escape(n.Addr()), fp, old.Fingerprint)
	}
	return nil
}

// sshNode reads a node that must use transport ssh.
func sshNode(cat *resources.Catalog, name string) (*nodes.Node, error) {
	n, err := nodes.Get(cat, name)
	if err != nil {
		return nil, err
	}
	if !n.SSH() {
		return nil, nodes.Errorf(nodes.ErrLocal, "node %s uses transport local: its actions run on this machine; set transport=ssh (solar resource update %s transport=ssh) to reach it over SSH", name, name)
	}
	return n, nil
}
