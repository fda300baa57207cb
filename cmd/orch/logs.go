package orch

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// LogsOptions are the inputs of "solar orch logs".
type LogsOptions struct {
	App     *app.App
	Ref     string
	Task    string
	Attempt int
	Follow  bool
	JSON    bool
	// Poll is how often --follow looks for new lines (tests shorten it).
	Poll time.Duration
}

// NewCmdLogs builds "solar orch logs".
func NewCmdLogs(a *app.App, runF func(*LogsOptions) error) *cobra.Command {
	opts := &LogsOptions{App: a, Poll: 250 * time.Millisecond}
	c := &cobra.Command{
		Use:   "logs UID|last TASK [--attempt N] [--follow]",
		Short: "Print what a task's script printed: stdout and stderr, with times",
		Long: `Print the log of one attempt of a task (the latest unless --attempt):
stdout and stderr interleaved in the order they were read, one line each, with
the time and the stream ("out", "err"). Secrets are masked. An attempt keeps
the first and the last 512 KiB of what it printed and says how much it dropped
between. Logs live with the plan in the store. Attempts are numbered over the
plan's whole life: a retry, resume or restart goes on counting, so attempt 3
may be the first of solar orch retry after two failed ones. --json lists every
attempt of the task with who ran it (actor and host).

--follow streams a running task's lines, from another terminal, until the
attempt ends. TASK is a task id (keystone.run#0) or an action (keystone.run,
its first instance).` + "\n" + app.ExitHelp,
		Example: `  solar orch logs last keystone.run#0
  solar orch logs last haproxy.run --attempt 1
  solar orch logs last mariadb.run --follow`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref, opts.Task = args[0], args[1]
			if opts.Attempt < 0 {
				return app.Usagef("--attempt must be at least 1")
			}
			if runF != nil {
				return runF(opts)
			}
			return logsRun(opts)
		},
	}
	c.Flags().IntVar(&opts.Attempt, "attempt", 0, "attempt number, 1 for the task's first in the plan (default: the latest)")
	c.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "stream new lines until the attempt ends")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type logLineView struct {
	At     string `json:"at"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

func streamName(s byte) string {
	switch s {
	case 'o':
		return "out"
	case 'e':
		return "err"
	}
	return "solar"
}

// logsReader reads the log "orch logs" shows, one transaction a read.
type logsReader struct {
	opts      *LogsOptions
	uid, task string // resolved at the first read
}

func (r *logsReader) read(skip int) (*orch.AttemptLog, error) {
	var out *orch.AttemptLog
	err := r.opts.App.View(func(tx *store.Tx) error {
		var err error
		if r.uid == "" {
			if r.uid, r.task, err = orch.ResolveTask(tx, r.opts.Ref, r.opts.Task); err != nil {
				return err
			}
		}
		out, err = orch.Logs(tx, r.uid, r.task, r.opts.Attempt, skip)
		return err
	})
	return out, err
}

func logsRun(opts *LogsOptions) error {
	r := &logsReader{opts: opts}
	al, err := r.read(0)
	if err != nil {
		return err
	}
	if opts.Follow {
		return logsFollow(r, al)
	}
	a, uid, task, lg := opts.App, r.uid, r.task, al.Log
	w := a.IO.Out
	if lg == nil {
		if opts.Attempt > 0 {
			return fmt.Errorf("%w: task %s of plan %s has no attempt %d", orch.ErrNoLog, task, uid, opts.Attempt)
		}
		fmt.Fprintf(a.IO.Err, "task %s of plan %s printed nothing (or has not run)\n", task, uid)
		if opts.JSON {
			return app.JSON(w, logsJSON(uid, task, nil, al.Attempts))
		}
		return nil
	}
	if opts.JSON {
		return app.JSON(w, logsJSON(uid, task, lg, al.Attempts))
	}
	printLines(w, lg.Lines)
	if len(lg.Lines) == 0 {
		fmt.Fprintf(a.IO.Err, "attempt %d of task %s printed nothing\n", lg.Attempt, task)
	}
	return nil
}

// logsFollow prints what al holds, then polls for more until the attempt
// ends (or the task finished without printing anything, or nobody runs
// the plan any more).
func logsFollow(r *logsReader, al *orch.AttemptLog) error {
	a := r.opts.App
	w := a.IO.Out
	seen, printed := 0, 0
	for {
		lg := al.Log
		if lg != nil {
			if lg.Ended {
				// The final log replaced the streamed chunks; it holds
				// the same lines (masked with the outputs too).
				final, err := r.read(0)
				if err != nil {
					return err
				}
				if final.Log != nil && printed < len(final.Log.Lines) {
					lines := final.Log.Lines
					printLines(w, lines[printed:])
				}
				return nil
			}
			printLines(w, lg.Lines)
			printed += len(lg.Lines)
			seen = lg.Chunks
		}
		if al.Finished && lg == nil {
			return nil
		}
		if !al.Running {
			// Nobody runs the plan: no line will come.
			if lg == nil {
				fmt.Fprintf(a.IO.Err, "task %s has not run and plan %s is not running; nothing to follow\n", r.task, r.uid)
			} else {
				fmt.Fprintf(a.IO.Err, "plan %s is not running any more; the log of attempt %d ends here\n", r.uid, lg.Attempt)
			}
			return nil
		}
		time.Sleep(r.opts.Poll)
		var err error
		if al, err = r.read(seen); err != nil {
			return err
		}
	}
}

func printLines(w io.Writer, lines []handler.Line) {
	for _, l := range lines {
		fmt.Fprintf(w, "%s %-3s %s\n", l.At.Local().Format("15:04:05.000"), streamName(l.Stream), app.Escape(l.Text))
	}
}

// attemptView is one attempt of a task in --json: its number over the
// plan's life and who ran it.
type attemptView struct {
	Number int    `json:"number"`
	Actor  string `json:"actor"`
	Host   string `json:"host"`
	Run    string `json:"run"`
	// Runner is the fleet's runner (solar runner --name, or run-once's
	// host-pid) that ran it; "" for an attempt outside the fleet.
	Runner string `json:"runner"`
	Start  string `json:"start"`
	End    string `json:"end"`
	// Batch names the batch the attempt ran in and BatchMembers its
	// members' resources; "" and [] for an attempt that ran alone.
	Batch        string   `json:"batch"`
	BatchMembers []string `json:"batch_members"`
}

func attemptViews(recs []orch.AttemptRecord) []attemptView {
	out := make([]attemptView, 0, len(recs))
	for _, r := range recs {
		out = append(out, attemptView{Number: r.Number, Actor: r.Actor, Host: r.Host, Run: r.Run, Runner: r.Runner, Start: stamp(r.Start), End: stamp(r.End),
			Batch: r.Batch, BatchMembers: nonNil(r.BatchMembers)})
	}
	return out
}

// logsJSON is the --json view of lg, the log shown (nil when the task
// has none), and of every ended attempt of the task.
func logsJSON(uid, task string, lg *orch.TaskLog, attempts []orch.AttemptRecord) any {
	out := struct {
		FormatVersion int    `json:"format_version"`
		UID           string `json:"uid"`
		Task          string `json:"task"`
		// Attempt is the number of the attempt whose lines follow, 0
		// when none; Actor and Host ran it ("" until it ended).
		Attempt  int           `json:"attempt"`
		Actor    string        `json:"actor"`
		Host     string        `json:"host"`
		Lines    []logLineView `json:"lines"`
		Attempts []attemptView `json:"attempts"`
	}{FormatVersion: app.FormatVersion, UID: uid, Task: task, Lines: []logLineView{}, Attempts: attemptViews(attempts)}
	if lg != nil {
		out.Attempt, out.Actor, out.Host = lg.Attempt, lg.Record.Actor, lg.Record.Host
		for _, l := range lg.Lines {
			out.Lines = append(out.Lines, logLineView{At: l.At.UTC().Format(time.RFC3339Nano), Stream: streamName(l.Stream), Text: l.Text})
		}
	}
	return out
}
