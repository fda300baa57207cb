package orch

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"

	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// seedPlan stores, in e's store, a plan that ran as a user would see it:
// web.run changed something, db.run (triggered by it) failed, and
// cache.run, after db.run, was skipped. It returns the plan's uid.
func seedPlan(t *testing.T, e *apptest.Env) string {
	t.Helper()
	start := apptest.Now.Add(-time.Minute)
	nodes := []planner.Node{
		{ID: "web.run#0", Resource: "web", Action: "run", Staged: true, StagedKey: "web.run", Weight: 3},
		{ID: "db.run#0", Resource: "db", Action: "run", TriggeredBy: []string{"on web.run changed db.run"}, Weight: 2},
		{ID: "cache.run#0", Resource: "cache", Action: "run", TriggeredBy: []string{}, Weight: 1},
	}
	edges := []planner.Edge{
		{From: "web.run#0", To: "db.run#0", Kind: planner.EdgeReact, Event: events.Changed, Rule: "on web.run changed db.run"},
		{From: "db.run#0", To: "cache.run#0", Kind: planner.EdgeAfter, Rule: "after db.run cache.run"},
	}
	states := map[string]orch.State{
		"web.run#0":   {Status: orch.StatusSuccess, Attempts: 1, Changed: true, Start: start, End: start.Add(1500 * time.Millisecond)},
		"db.run#0":    {Status: orch.StatusError, Attempts: 2, Err: "exit status 1: mysqld: cannot bind port 3306", Start: start.Add(2 * time.Second), End: start.Add(4 * time.Second)},
		"cache.run#0": {Status: orch.StatusSkipped, Reason: "upstream failed: db.run#0"},
	}
	var uid string
	db, err := e.App.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *store.Tx) error {
		if uid, err = orch.NewUID(tx, apptest.Now); err != nil {
			return err
		}
		rec := &orch.Record{UID: uid, CreatedAt: apptest.Now.Add(-2 * time.Minute), Selection: []string{"role=web"},
			Plan: &planner.Plan{Nodes: nodes, Edges: edges, Warnings: []string{}}}
		if err := orch.Save(tx, rec); err != nil {
			return err
		}
		for id, st := range states {
			if err := orch.PutState(tx, uid, id, st); err != nil {
				return err
			}
		}
		return orch.SetOpen(tx, uid, false)
	}); err != nil {
		t.Fatal(err)
	}
	return uid
}

// TestParse: each verb's command line becomes the options its run
// function gets; misuse the command refuses itself is a usage error.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"list", apptest.Parser(NewCmdList), []string{"--json"}, ListOptions{JSON: true}},
		{"show", apptest.Parser(NewCmdShow), nil, ShowOptions{Ref: "last"}},
		{"show uid", apptest.Parser(NewCmdShow), []string{"20261122-100000-0001", "--json"}, ShowOptions{Ref: "20261122-100000-0001", JSON: true}},
		{"dg", apptest.Parser(NewCmdDG), []string{"last~1", "--format", "mermaid"}, DGOptions{Ref: "last~1", Format: "mermaid"}},
		{"dg bad format", apptest.Parser(NewCmdDG), []string{"--format", "svg"}, nil},
		{"report", apptest.Parser(NewCmdReport), []string{"--json"}, ReportOptions{Ref: "last", JSON: true}},
		{"logs", apptest.Parser(NewCmdLogs), []string{"last", "db.run", "--attempt", "2", "-f"},
			LogsOptions{Ref: "last", Task: "db.run", Attempt: 2, Follow: true, Poll: 250 * time.Millisecond}},
		{"logs bad attempt", apptest.Parser(NewCmdLogs), []string{"last", "db.run", "--attempt", "-1"}, nil},
		{"check", apptest.Parser(NewCmdCheck), []string{"--concurrency", "4", "--json"}, CheckOptions{Ref: "last", Concurrency: 4, PerNode: 1, JSON: true}},
		{"check bad concurrency", apptest.Parser(NewCmdCheck), []string{"--concurrency", "0"}, nil},
		{"run-once", apptest.Parser(NewCmdRunOnce), []string{"last", "--per-node", "2", "-v"},
			RunOptions{Ref: "last", Concurrency: 10, PerNode: 2, Verbose: true, Verb: "run"}},
		{"run-once bad per-node", apptest.Parser(NewCmdRunOnce), []string{"--per-node", "0"}, nil},
		{"resume", apptest.Parser(NewCmdResume), nil, RunOptions{Ref: "last", Concurrency: 10, PerNode: 1, Verb: "resume"}},
		{"retry", apptest.Parser(NewCmdRetry), []string{"--concurrency", "3"}, RunOptions{Ref: "last", Concurrency: 3, PerNode: 1, Verb: "retry"}},
		{"restart", apptest.Parser(NewCmdRestart), []string{"last~2"}, RunOptions{Ref: "last~2", Concurrency: 10, PerNode: 1, Verb: "restart"}},
		{"reset", apptest.Parser(NewCmdReset), nil, ResetOptions{Ref: "last"}},
		{"stop", apptest.Parser(NewCmdStop), []string{"last", "--kill"}, StopOptions{Ref: "last", Kill: true}},
		{"filter", apptest.Parser(NewCmdFilter), []string{"--start", "a.run,b.run", "--end", "c.run#1"},
			FilterOptions{Ref: "last", Starts: []string{"a.run,b.run"}, Ends: []string{"c.run#1"}}},
		{"filter without tasks", apptest.Parser(NewCmdFilter), nil, nil},
		{"noop", apptest.Parser(NewCmdNoop), []string{"last", "a.run", "b.run#1"}, NoopOptions{Ref: "last", Tasks: []string{"a.run", "b.run#1"}}},
		{"noop without tasks", apptest.Parser(NewCmdNoop), []string{"last"}, nil},
	})
}

// TestRunVariantsPrepare: resume, retry and restart each set back to
// PENDING the tasks their help names before running.
func TestRunVariantsPrepare(t *testing.T) {
	for _, tc := range []struct {
		verb    string
		newCmd  func(*app.App, func(*RunOptions) error) *cobra.Command
		pending string // the tasks PENDING after Prepare, by id
	}{
		{"resume", NewCmdResume, ""},
		{"retry", NewCmdRetry, "cache.run#0 db.run#0"},
		{"restart", NewCmdRestart, "cache.run#0 db.run#0 web.run#0"},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			e := apptest.New(t)
			uid := seedPlan(t, e)
			var opts *RunOptions
			if err := apptest.Execute(tc.newCmd(e.App, func(o *RunOptions) error { opts = o; return nil })); err != nil {
				t.Fatal(err)
			}
			var pending []string
			err := e.App.Update(func(tx *store.Tx) error {
				rec, err := orch.Load(tx, uid)
				if err != nil {
					return err
				}
				states, err := orch.States(tx, rec)
				if err != nil {
					return err
				}
				if err := opts.Prepare(tx, rec, states); err != nil {
					return err
				}
				if states, err = orch.States(tx, rec); err != nil {
					return err
				}
				for _, n := range orch.Ordered(rec.Plan) {
					if states[n.ID].Status == orch.StatusPending {
						pending = append(pending, n.ID)
					}
				}
				slices.Sort(pending)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(pending, " "); got != tc.pending {
				t.Errorf("PENDING after %s's Prepare: %q, want %q", tc.verb, got, tc.pending)
			}
		})
	}
}

// TestRun: each verb's run function, given buffers, prints what a user
// reads, to the stream it belongs on.
func TestRun(t *testing.T) {
	const uid = "20261122-100000-0001" // seedPlan's, at apptest.Now
	for _, tc := range []struct {
		name     string
		run      func(e *apptest.Env) error
		out, err string
		wantErr  error
	}{
		{name: "report", run: func(e *apptest.Env) error { return reportRun(&ReportOptions{App: e.App, Ref: "last"}) }, out: `plan ` + uid + `, processed by -
TASK         STATUS   DURATION  ATTEMPTS  ERROR OR REASON
web.run#0    SUCCESS  1.5s      1
db.run#0     ERROR    2s        2         exit status 1: mysqld: cannot bind port 3306
cache.run#0  SKIPPED                      upstream failed: db.run#0

3 tasks: 1 success, 1 skipped, 1 error; wall time 4s; plan ` + uid + ` finished
`},
		{name: "report json", run: func(e *apptest.Env) error { return reportRun(&ReportOptions{App: e.App, Ref: uid, JSON: true}) }, out: reportJSON},
		{name: "show", run: func(e *apptest.Env) error { return showRun(&ShowOptions{App: e.App, Ref: "last"}) }, out: `plan ` + uid + ` (created 2026-11-22T09:58:00Z, selection: -t role=web)

TASK         STATUS   WEIGHT  WHY
web.run#0    SUCCESS  3       staged web.run
db.run#0     ERROR    2       triggered by on web.run changed db.run
cache.run#0  SKIPPED  1       triggered by

FROM       TO              ON
web.run#0  -> db.run#0     changed
db.run#0   -> cache.run#0  after
`},
		{name: "dg", run: func(e *apptest.Env) error { return dgRun(&DGOptions{App: e.App, Ref: "last", Format: "mermaid"}) }, out: `flowchart TD
	classDef pending fill:#ffffff,stroke:#333333
	classDef inprogress fill:#fff2a8,stroke:#333333
	classDef success fill:#a8e6a1,stroke:#333333
	classDef noop fill:#d6ecd2,stroke:#333333
	classDef skipped fill:#d9d9d9,stroke:#333333
	classDef error fill:#f4a6a6,stroke:#333333
	n0["web.run#35;0"]:::success
	n1["db.run#35;0"]:::error
	n2["cache.run#35;0"]:::skipped
	n0 -->|changed| n1
	n1 -.-> n2
`},
		{name: "list", run: func(e *apptest.Env) error { return listRun(&ListOptions{App: e.App}) }, out: `UID                   TASKS  STATE     COUNTS                       PROCESSED BY  SELECTION
` + uid + `  3      finished  success=1 skipped=1 error=1  -             -t role=web
`},
		{name: "logs of a task that printed nothing", run: func(e *apptest.Env) error { return logsRun(&LogsOptions{App: e.App, Ref: "last", Task: "db.run"}) },
			err: "task db.run#0 of plan " + uid + " printed nothing (or has not run)\n"},
		{name: "logs of a missing attempt", run: func(e *apptest.Env) error {
			return logsRun(&LogsOptions{App: e.App, Ref: "last", Task: "db.run", Attempt: 1})
		}, wantErr: orch.ErrNoLog},
		{name: "logs of an unknown task", run: func(e *apptest.Env) error { return logsRun(&LogsOptions{App: e.App, Ref: "last", Task: "nope.run"}) },
			wantErr: orch.ErrUnknownTask},
		{name: "logs follow of a plan nobody runs", run: func(e *apptest.Env) error {
			if err := resetRun(&ResetOptions{App: e.App, Ref: "last"}); err != nil {
				return err
			}
			e.Reset()
			return logsRun(&LogsOptions{App: e.App, Ref: "last", Task: "cache.run#0", Follow: true, Poll: time.Millisecond})
		}, err: "task cache.run#0 has not run and plan " + uid + " is not running; nothing to follow\n"},
		{name: "stop", run: func(e *apptest.Env) error { return stopRun(&StopOptions{App: e.App, Ref: "last", Kill: true}) },
			out: "plan " + uid + " is not running; it is finished with 1 ERROR (solar orch retry " + uid + " runs them again)\n"},
		{name: "reset", run: func(e *apptest.Env) error { return resetRun(&ResetOptions{App: e.App, Ref: "last"}) },
			out: "plan " + uid + " reset: every task is PENDING\n"},
		{name: "filter", run: func(e *apptest.Env) error {
			if err := resetRun(&ResetOptions{App: e.App, Ref: "last"}); err != nil {
				return err
			}
			e.Reset()
			return filterRun(&FilterOptions{App: e.App, Ref: "last", Ends: []string{"db.run"}})
		}, out: "plan " + uid + ": 1 task skipped as filtered\n"},
		{name: "run-once of a finished plan", run: func(e *apptest.Env) error {
			return runRun(&RunOptions{App: e.App, Ref: "last", Concurrency: 1, PerNode: 1, Verb: "run"})
		}, err: "plan " + uid + " is already finished; nothing to run (solar orch restart " + uid + " runs it again)\n"},
		{name: "check", run: func(e *apptest.Env) error {
			return checkRun(&CheckOptions{App: e.App, Ref: "last", Concurrency: 1, PerNode: 1})
		},
			out: `TASK         PREDICTION     WHY
web.run#0    check failed   resource web no longer exists
db.run#0     would not run  upstream failed: web.run#0
cache.run#0  would not run  upstream failed: web.run#0

plan ` + uid + `: 2 would not run, 1 check failed; nothing was changed
`, err: "check plan " + uid + " (nothing will be changed)\n", wantErr: &app.FailedError{}},
		{name: "report without plans", run: func(e *apptest.Env) error {
			return reportRun(&ReportOptions{App: apptest.New(t).App, Ref: "last"})
		}, wantErr: orch.ErrNoPlans},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			seedPlan(t, e)
			err := tc.run(e)
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
			case *app.FailedError:
				if !errors.As(err, &want) {
					t.Fatalf("error %v, want a failed run", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %v", err, want)
				}
			}
			if got := e.Out.String(); got != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tc.out)
			}
			if got := e.Err.String(); got != tc.err {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tc.err)
			}
		})
	}
}

const reportJSON = `{
  "format_version": 2,
  "uid": "20261122-100000-0001",
  "finished": true,
  "running": false,
  "wall_ms": 4000,
  "totals": {
    "ERROR": 1,
    "INPROGRESS": 0,
    "NOOP": 0,
    "PENDING": 0,
    "SKIPPED": 1,
    "SUCCESS": 1
  },
  "tasks": [
    {
      "id": "web.run#0",
      "status": "SUCCESS",
      "duration_ms": 1500,
      "attempts": 1,
      "changed": true,
      "error": "",
      "reason": "",
      "start": "2026-11-22T09:59:00Z",
      "end": "2026-11-22T09:59:01.5Z",
      "predicted": "",
      "attempt_numbers": [],
      "attempt_records": [],
      "corrective": false,
      "waiting": ""
    },
    {
      "id": "db.run#0",
      "status": "ERROR",
      "duration_ms": 2000,
      "attempts": 2,
      "changed": false,
      "error": "exit status 1: mysqld: cannot bind port 3306",
      "reason": "",
      "start": "2026-11-22T09:59:02Z",
      "end": "2026-11-22T09:59:04Z",
      "predicted": "",
      "attempt_numbers": [],
      "attempt_records": [],
      "corrective": false,
      "waiting": ""
    },
    {
      "id": "cache.run#0",
      "status": "SKIPPED",
      "duration_ms": 0,
      "attempts": 0,
      "changed": false,
      "error": "",
      "reason": "upstream failed: db.run#0",
      "start": "",
      "end": "",
      "predicted": "",
      "attempt_numbers": [],
      "attempt_records": [],
      "corrective": false,
      "waiting": ""
    }
  ],
  "stale": [],
  "processed_by": ""
}
`
