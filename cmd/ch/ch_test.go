package ch

import (
	"testing"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/staging"
)

// TestParse: each verb's command line becomes the options its run
// function gets; misuse the command refuses itself is a usage error.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"stage list", apptest.Parser(NewCmdStage), []string{"-t", "role=db", "-d", "--json"}, StageOptions{Tags: []string{"role=db"}, Diff: true, JSON: true}},
		{"stage action", apptest.Parser(NewCmdStage), []string{"-a", "restart", "-n", "web"}, StageOptions{Action: "restart", Name: "web"}},
		{"stage action by tag", apptest.Parser(NewCmdStage), []string{"-a", "restart", "-t", "role=db"}, StageOptions{Action: "restart", Tags: []string{"role=db"}}},
		{"stage name without action", apptest.Parser(NewCmdStage), []string{"-n", "web"}, nil},
		{"stage action with name and tag", apptest.Parser(NewCmdStage), []string{"-a", "restart", "-n", "web", "-t", "role=db"}, nil},
		{"staged item", apptest.Parser(NewCmdStagedItem), []string{"web.run", "--json"}, StagedItemOptions{Key: "web.run", JSON: true}},
		{"discard", apptest.Parser(NewCmdDiscard), []string{"web.run", "db.update"}, DiscardOptions{Keys: []string{"web.run", "db.update"}}},
		{"discard all", apptest.Parser(NewCmdDiscard), []string{"--all"}, DiscardOptions{Keys: []string{}, All: true}},
		{"discard neither", apptest.Parser(NewCmdDiscard), nil, nil},
		{"history", apptest.Parser(NewCmdHistory), []string{"-n", "3", "-d", "--json"}, HistoryOptions{N: 3, Diff: true, JSON: true}},
		{"history negative", apptest.Parser(NewCmdHistory), []string{"-n", "-1"}, nil},
		{"revert", apptest.Parser(NewCmdRevert), []string{"7"}, RevertOptions{UID: "7"}},
		{"process", apptest.Parser(NewCmdProcess), []string{"-t", "env=demo", "-t", "role=lb", "--supersede"},
			ProcessOptions{Tags: []string{"env=demo", "role=lb"}, Supersede: true}},
	})
}

// TestRun: each verb's run function, given buffers, from staged creations
// to a plan (a plan's run and the history it leaves are end-to-end tests).
func TestRun(t *testing.T) {
	e := apptest.New(t)
	a := e.App
	res := apptest.Resources(t)
	e.Create(t, "web", res+"/noop", "value=a")
	e.Create(t, "api", res+"/noop", "value=b")
	e.Steps(t, []apptest.Step{
		{Name: "stage list", Run: func() error { return stageListRun(&StageOptions{App: a, Diff: true}) }, Out: `web.run  (create) [resource=web,role=noop] by tester@test
  + value: a
  + location: ""

api.run  (create) [resource=api,role=noop] by tester@test
  + value: b
  + location: ""
`},
		{Name: "stage action", Run: func() error { return stageActionRun(&StageOptions{App: a, Action: "restart", Name: "web"}) },
			Out: "staged web.restart\n"},
		{Name: "staged item", Run: func() error { return stagedItemRun(&StagedItemOptions{App: a, Key: "web.run"}) }, Out: `web.run  (create) [resource=web,role=noop] by tester@test
  + value: a
  + location: ""
`},
		{Name: "discard", Run: func() error { return discardRun(&DiscardOptions{App: a, Keys: []string{"api.run"}}) }, Out: "discarded api.run\n"},
		{Name: "discard again", Run: func() error { return discardRun(&DiscardOptions{App: a, Keys: []string{"api.run"}}) }, WantErr: staging.ErrNoEntry},
		{Name: "process", Run: func() error { return processRun(&ProcessOptions{App: a}) }, Out: "20261122-100000-0001\n",
			Err: "plan 20261122-100000-0001: 2 tasks (2 staged, 0 triggered by rules), 1 edge\n  staged:             1 run, 1 other (restart)\n"},
		{Name: "process pending entries", Run: func() error { return processRun(&ProcessOptions{App: a}) }, WantErr: orch.ErrPending},
		{Name: "history", Run: func() error { return historyRun(&HistoryOptions{App: a}) }, Out: "no history yet\n"},
		{Name: "revert unknown", Run: func() error { return revertRun(&RevertOptions{App: a, UID: "7"}) }, WantErr: staging.ErrNoHistory},
	})
	// Nothing staged for a selection: no plan, exit 4.
	e.Reset()
	err := processRun(&ProcessOptions{App: a, Tags: []string{"role=none"}})
	if code := app.ExitCode(err); code != app.ExitNothing {
		t.Errorf("process of an empty selection: %v (exit %d), want exit %d; stderr %q", err, code, app.ExitNothing, e.Err)
	}
}
