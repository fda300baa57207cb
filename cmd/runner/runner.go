// Package runner holds "solar runner": a process that runs the tasks of
// plans submitted to a PostgreSQL store's fleet, and "solar runner list".
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/internal/actor"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/tags"
)

// Options are solar runner's flags.
type Options struct {
	App         *app.App
	Name        string
	Concurrency int
	Nodes       string
	NoLocal     bool
	Lease       time.Duration
	Verbose     bool
	Version     string
}

// NewCmd returns "solar runner" with its "list".
func NewCmd(a *app.App, version string) *cobra.Command {
	opts := &Options{App: a, Version: version}
	c := &cobra.Command{
		Use:   "runner",
		Short: "Run the tasks of plans submitted to the team store, beside other runners",
		Long: `Run, until stopped, the tasks of plans submitted with solar orch submit (or
run by orch run-once) on a PostgreSQL store, together with runners on other
machines. A runner claims ready tasks, heaviest first, within its own
--concurrency and within each plan's limits (--concurrency, --per-node of
orch submit), which hold across all runners, as the bases' sema semaphores do.
Each claim is a lease on the database's clock, renewed every few seconds: a
runner that dies, freezes or loses the database for longer than --lease loses
its tasks, and another runner runs them again (each such loss uses one of the
task's retries). A runner that cannot renew in time kills its own tasks first.

--nodes takes a tag expression over node resources: the runner claims only
tasks that run on a matching node (and, unless --no-local, tasks that run on
the runner's own machine). Scripts see SOLAR_FENCE and SOLAR_ATTEMPT.

SIGTERM or Ctrl-C drains: nothing new is claimed, running tasks finish, exit
0. A second one kills the running tasks; they are ready again for another
runner, and the exit status is 5. A bbolt store has one runner per plan
(orch run-once): runner refuses it with exit 2.` + "\n" + app.ExitHelp,
		Example: `  solar runner --db postgres://solar@db/solar --concurrency 8
  solar runner --name dc2-runner --nodes 'dc=2' --no-local
  solar runner list`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Concurrency < 1 {
				return app.Usagef("--concurrency must be at least 1")
			}
			if opts.Lease < orch.MinLeaseTTL() {
				return app.Usagef("--lease %s is too short: at least %s", opts.Lease, orch.MinLeaseTTL())
			}
			if opts.Nodes != "" {
				if _, err := tags.ParseExpr(opts.Nodes); err != nil {
					return app.Usagef("--nodes %q: %v", opts.Nodes, err)
				}
			}
			return run(opts)
		},
	}
	c.Flags().StringVar(&opts.Name, "name", "", "the runner's name in the fleet (default HOST-PID)")
	c.Flags().IntVar(&opts.Concurrency, "concurrency", 4, "at most N tasks at once on this runner")
	c.Flags().StringVar(&opts.Nodes, "nodes", "", "claim only tasks on nodes matching this tag expression")
	c.Flags().BoolVar(&opts.NoLocal, "no-local", false, "claim no task that runs on this machine (only tasks with a node)")
	c.Flags().DurationVar(&opts.Lease, "lease", orch.DefaultFleetLease, "how long claims outlive the runner's last heartbeat, at least "+orch.MinLeaseTTL().String())
	c.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "print every line the tasks print")
	c.AddCommand(newCmdList(a))
	return c
}

// run runs the runner until it is drained or killed.
func run(opts *Options) error {
	a := opts.App
	if opts.Name == "" {
		opts.Name = actor.Host() + "-" + strconv.Itoa(os.Getpid())
	}
	sshCfg, err := a.SSHConfig()
	if err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	if !store.IsURL(path) {
		return orch.ErrNoFleet
	}
	log := &logger{w: a.IO.Err, name: opts.Name}
	f := &orch.FleetRunner{Store: store.NewHandle(path), Name: opts.Name, Version: opts.Version, Concurrency: opts.Concurrency,
		Nodes: opts.Nodes, NoLocal: opts.NoLocal, Lease: opts.Lease,
		Settings: orch.Runner{SSH: sshCfg, AnsiblePlaybook: a.Getenv("SOLAR_ANSIBLE_PLAYBOOK"), CacheDir: bases.CacheDir(a.Getenv),
			Now: a.Now, Actor: a.Actor(), Host: actor.Host(), Note: log.note, Progress: log.task},
		Claimed: func(c kv.Claim) {
			log.printf("claimed %s of plan %s (fence %d, attempt %d)", c.Task, c.UID, c.Fence, c.Attempts+1)
		},
	}
	if opts.Verbose {
		f.Settings.Output = log.output
	}
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	drain := make(chan struct{})
	var killed atomic.Bool
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		log.printf("draining: no new claims; running tasks finish (signal again to kill them)")
		close(drain)
		<-sigs
		log.printf("killing running tasks; they are ready again for other runners")
		killed.Store(true)
		kill()
	}()
	log.printf("runner %s started (concurrency %d, lease %s) on %s", opts.Name, opts.Concurrency, opts.Lease, store.Redact(path))
	err = f.Run(ctx, drain)
	if errors.Is(err, context.Canceled) || killed.Load() {
		return &app.StoppedError{}
	}
	if err == nil {
		log.printf("drained; exiting")
	}
	return err
}

// logger prints the runner's lines on stderr, each prefixed with the time.
type logger struct {
	mu   sync.Mutex
	w    interface{ Write([]byte) (int, error) }
	name string
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s %s\n", time.Now().Format("15:04:05.000"), app.Escape(fmt.Sprintf(format, args...)))
}

func (l *logger) note(msg string) { l.printf("%s", msg) }

func (l *logger) task(id string, st orch.State) {
	switch {
	case st.Status == orch.StatusError:
		l.printf("%s ERROR: %s", id, st.Err)
	case st.Status.Finished():
		l.printf("%s %s", id, st.Status)
	}
}

func (l *logger) output(task string, line handler.Line) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s | %s\n", task, app.Escape(line.Text))
}
