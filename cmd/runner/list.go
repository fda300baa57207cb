package runner

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ListOptions are solar runner list's flags.
type ListOptions struct {
	App  *app.App
	JSON bool
}

func newCmdList(a *app.App) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:   "list",
		Short: "List the live runners of the team store",
		Long: `List the runners whose heartbeat the store saw in the last minute: their
name, machine and pid, how long since their last heartbeat (on the database's
clock), the tasks they hold now, their own concurrency, the nodes they claim
for, and their version. A runner silent for longer than its lease has lost its
tasks to the others. Exit 2 on a bbolt store, which has no fleet.` + "\n" + app.ExitHelp,
		Example: `  solar runner list
  solar runner list --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return list(opts) },
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

// runnerJSON is one runner in runner list --json.
type runnerJSON struct {
	Name          string  `json:"name"`
	Host          string  `json:"host"`
	PID           int     `json:"pid"`
	Version       string  `json:"version"`
	Concurrency   int     `json:"concurrency"`
	Nodes         string  `json:"nodes"`
	Started       string  `json:"started"`
	HeartbeatAgeS float64 `json:"heartbeat_age_s"`
	Held          int     `json:"held"`
}

type listJSON struct {
	FormatVersion int          `json:"format_version"`
	Runners       []runnerJSON `json:"runners"`
}

func list(opts *ListOptions) error {
	a := opts.App
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	if !store.IsURL(path) {
		return orch.ErrNoFleet
	}
	db, err := a.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	fleet, ok := db.Fleet()
	if !ok {
		return orch.ErrNoFleet
	}
	runners, err := fleet.Runners(context.Background())
	if err != nil {
		return err
	}
	if opts.JSON {
		out := listJSON{FormatVersion: app.FormatVersion, Runners: []runnerJSON{}}
		for _, r := range runners {
			out.Runners = append(out.Runners, runnerJSON{Name: r.Name, Host: r.Host, PID: r.PID, Version: r.Version, Concurrency: r.Concurrency,
				Nodes: r.Nodes, Started: r.Started.UTC().Format(time.RFC3339), HeartbeatAgeS: r.Silent.Seconds(), Held: r.Held})
		}
		return app.JSON(a.IO.Out, out)
	}
	if len(runners) == 0 {
		_, err := a.IO.Err.Write([]byte("no live runners (start one with solar runner)\n"))
		return err
	}
	rows := make([][]string, 0, len(runners))
	for _, r := range runners {
		nodes := r.Nodes
		if nodes == "" {
			nodes = "any"
		}
		rows = append(rows, []string{r.Name, r.Host, strconv.Itoa(r.PID), r.Silent.Round(100 * time.Millisecond).String(),
			strconv.Itoa(r.Held), strconv.Itoa(r.Concurrency), nodes, r.Version})
	}
	return app.Table(a.IO.Out, []string{"NAME", "HOST", "PID", "HEARTBEAT", "TASKS", "CONCURRENCY", "NODES", "VERSION"}, rows)
}
