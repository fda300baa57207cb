package node

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/nodes"
	sshx "github.com/solarops/solar/orch/handler/ssh"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// CheckOptions are the inputs of "solar node check".
type CheckOptions struct {
	App   *app.App
	Nodes []string
	JSON  bool
}

// NewCmdCheck builds "solar node check".
func NewCmdCheck(a *app.App, runF func(*CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{App: a}
	c := &cobra.Command{
		Use:   "check [NODE...]",
		Short: "Log in to nodes, run a trivial command and print the round trip",
		Long: `Check that nodes (all of them without arguments) can run actions: an SSH node
is reached with its trusted host key and its login, and runs a trivial command;
a local node runs it on this machine. Prints each node's status and the time
the command took: "connect" the first time (dial, login, first session) and
"rtt" again on the open connection, which is what each action pays. Nodes are checked in parallel.
Exit status 1 when some node failed the check.` + "\n" + app.ExitHelp,
		Example: "  solar node check web1 web2\n  solar node check --json",
		RunE: func(c *cobra.Command, args []string) error {
			opts.Nodes = args
			if runF != nil {
				return runF(opts)
			}
			return checkRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type checkView struct {
	Name          string  `json:"name"`
	Transport     string  `json:"transport"`
	Address       string  `json:"address"`
	OK            bool    `json:"ok"`
	ConnectMillis float64 `json:"connect_ms"`
	RTTMillis     float64 `json:"rtt_ms"`
	Error         string  `json:"error"`
}

type checksView struct {
	FormatVersion int         `json:"format_version"`
	Nodes         []checkView `json:"nodes"`
}

// errCheckFailed is a check in which some node failed (exit 1).
var errCheckFailed = errors.New("node check failed")

func checkRun(opts *CheckOptions) error {
	a := opts.App
	cfg, err := a.SSHConfig()
	if err != nil {
		return err
	}
	var list []*nodes.Node
	err = a.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if len(opts.Nodes) == 0 {
			var err error
			list, err = nodes.ListCommitted(cat)
			return err
		}
		for _, name := range opts.Nodes {
			n, err := nodes.GetCommitted(cat, name)
			if err != nil {
				return err
			}
			list = append(list, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(a.IO.Err, "no nodes (a node is a resource whose base has node: true)")
	}
	remote := map[string]*sshx.Node{}
	for _, n := range list {
		if n.SSH() {
			remote[n.Name] = sshx.NodeOf(n.Target())
		}
	}
	tr := sshx.New(remote, nil, cfg)
	defer tr.Close()
	views := make([]checkView, len(list))
	var wg sync.WaitGroup
	for i, n := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i] = check(tr, n, remote[n.Name])
		}()
	}
	wg.Wait()
	var failed []string
	for _, v := range views {
		if !v.OK {
			failed = append(failed, v.Name)
		}
	}
	if opts.JSON {
		if err := app.JSON(a.IO.Out, checksView{FormatVersion: app.FormatVersion, Nodes: views}); err != nil {
			return err
		}
	} else {
		rows := make([][]string, 0, len(views))
		for _, v := range views {
			status, connect, rtt := "ok", fmt.Sprintf("%.1fms", v.ConnectMillis), fmt.Sprintf("%.1fms", v.RTTMillis)
			switch {
			case !v.OK:
				status, connect, rtt = "FAILED", "-", "-"
			case v.Transport != resources.TransportSSH:
				connect = "-"
			}
			rows = append(rows, []string{v.Name, v.Transport, v.Address, status, connect, rtt, v.Error})
		}
		if err := app.Table(a.IO.Out, []string{"node", "transport", "address", "status", "connect", "rtt", "error"}, rows); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s of %d: %s", errCheckFailed, app.Count(len(failed), "node"), len(list), strings.Join(failed, ", "))
	}
	return nil
}

func check(tr *sshx.Transport, n *nodes.Node, sn *sshx.Node) checkView {
	v := checkView{Name: n.Name, Transport: n.Transport, Address: "-"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var connect, rtt time.Duration
	var err error
	if sn == nil {
		start := time.Now()
		err = exec.CommandContext(ctx, "/bin/sh", "-c", "true").Run()
		rtt = time.Since(start)
	} else {
		v.Address = n.Addr()
		connect, rtt, err = tr.Check(ctx, sn)
	}
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.OK = true
	v.ConnectMillis = float64(connect.Microseconds()) / 1000
	v.RTTMillis = float64(rtt.Microseconds()) / 1000
	return v
}
