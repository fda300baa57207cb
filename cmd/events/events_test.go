package events

import (
	"testing"

	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/events"
)

// TestParse: each verb's command line becomes the options its run
// function gets.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"add", apptest.Parser(NewCmdAdd), []string{"on db.run changed ks.restart", "after db.run ks.run"},
			AddOptions{Rules: []string{"on db.run changed ks.restart", "after db.run ks.run"}}},
		{"add file", apptest.Parser(NewCmdAdd), []string{"-f", "rules.txt"}, AddOptions{Rules: []string{}, File: "rules.txt"}},
		{"add both", apptest.Parser(NewCmdAdd), []string{"-f", "rules.txt", "after db.run ks.run"}, nil},
		{"add neither", apptest.Parser(NewCmdAdd), nil, nil},
		{"list", apptest.Parser(NewCmdList), []string{"ks", "--json"}, ListOptions{Resource: "ks", JSON: true}},
		{"remove", apptest.Parser(NewCmdRemove), []string{"after db.run ks.run"}, RemoveOptions{Rules: []string{"after db.run ks.run"}}},
	})
}

// TestRun: each verb's run function, given buffers; rules from stdin too.
func TestRun(t *testing.T) {
	e := apptest.New(t)
	a := e.App
	res := apptest.Resources(t)
	e.Create(t, "db", res+"/mariadb", "dir=/tmp/x", "root_password=s")
	e.Create(t, "ks", res+"/keystone", "dir=/tmp/x")
	e.Steps(t, []apptest.Step{
		{Name: "list without rules", Run: func() error { return listRun(&ListOptions{App: a}) }},
		{Name: "add", Run: func() error { return addRun(&AddOptions{App: a, Rules: []string{"on db.run changed ks.restart"}}) },
			Out: "added 1 rule (0 already present)\n"},
		{Name: "add from stdin", Run: func() error {
			e.In.WriteString("# one per line\nafter db.run ks.run\non db.run changed ks.restart\n")
			return addRun(&AddOptions{App: a, File: "-"})
		}, Out: "added 1 rule (1 already present)\n"},
		{Name: "add an unknown resource's", Run: func() error {
			return addRun(&AddOptions{App: a, Rules: []string{"on nope.run changed ks.restart"}})
		}, WantErr: events.ErrUnknownResource},
		{Name: "list", Run: func() error { return listRun(&ListOptions{App: a}) }, Out: "on db.run changed ks.restart\nafter db.run ks.run\n"},
		{Name: "list json", Run: func() error { return listRun(&ListOptions{App: a, Resource: "ks", JSON: true}) }, Out: `{
  "format_version": 2,
  "rules": [
    {
      "rule": "on db.run changed ks.restart",
      "kind": "on",
      "emitter": "db.run",
      "event": "changed",
      "subscriber": "ks.restart"
    },
    {
      "rule": "after db.run ks.run",
      "kind": "after",
      "emitter": "db.run",
      "event": "",
      "subscriber": "ks.run"
    }
  ]
}
`},
		{Name: "remove", Run: func() error {
			return removeRun(&RemoveOptions{App: a, Rules: []string{"on db.run changed ks.restart"}})
		},
			Out: "removed 1 rule\n"},
		{Name: "remove again", Run: func() error {
			return removeRun(&RemoveOptions{App: a, Rules: []string{"on db.run changed ks.restart"}})
		},
			WantErr: events.ErrNoRule},
	})
}
