package resource

import (
	"regexp"
	"strings"
	"testing"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/resources"
)

// TestParse: each verb's command line becomes the options its run
// function gets.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"create", apptest.Parser(NewCmdCreate), []string{"web", "./noop", "value=1", "-t", "env=prod,tier=a", "--meta", "retry=2"},
			CreateOptions{Name: "web", Base: "./noop", Values: []string{"value=1"}, Tags: []string{"env=prod,tier=a"}, Meta: []string{"retry=2"}}},
		{"list", apptest.Parser(NewCmdList), []string{"-t", "env=prod", "--tag", "role=db", "--json"},
			ListOptions{Tags: []string{"env=prod", "role=db"}, JSON: true}},
		{"remove", apptest.Parser(NewCmdRemove), []string{"web", "db"}, RemoveOptions{Names: []string{"web", "db"}}},
		{"show", apptest.Parser(NewCmdShow), []string{"web", "--json"}, ShowOptions{Name: "web", JSON: true}},
		{"tag", apptest.Parser(NewCmdTag), []string{"web", "a=1", "b", "-d"}, TagOptions{Name: "web", Tags: []string{"a=1", "b"}, Delete: true}},
		{"update", apptest.Parser(NewCmdUpdate), []string{"web", "value=2", "--meta", "timeout=5s"},
			UpdateOptions{Name: "web", Values: []string{"value=2"}, Meta: []string{"timeout=5s"}}},
	})
}

// TestRun: the life of a resource, each verb's run function given
// buffers.
func TestRun(t *testing.T) {
	e := apptest.New(t)
	res := apptest.Resources(t)
	digest := regexp.MustCompile(`[0-9a-f]{64}`) // of a bundled base, which package bases tests
	e.Replace = func(s string) string {
		return digest.ReplaceAllString(strings.NewReplacer(res, "$RES").Replace(s), "$$DIGEST")
	}
	a := e.App
	e.Steps(t, []apptest.Step{
		{Name: "create", Run: func() error {
			return createRun(&CreateOptions{App: a, Name: "web", Base: res + "/noop", Values: []string{"value=hello"}, Tags: []string{"env=prod"}})
		}, Out: "created web from noop; staged web.run\n"},
		{Name: "create node", Run: func() error {
			return createRun(&CreateOptions{App: a, Name: "n1", Base: res + "/node", Values: []string{"ip=10.0.0.1"}})
		}, Out: "created n1 from node; staged n1.run\n"},
		{Name: "create exists", Run: func() error {
			return createRun(&CreateOptions{App: a, Name: "web", Base: res + "/noop"})
		}, WantErr: resources.ErrExists},
		{Name: "list", Run: func() error { return listRun(&ListOptions{App: a}) }, Out: `NAME  BASE  LOCATION  TAGS                             STATE
n1    node  n1        resource=n1,role=node            ok
web   noop            env=prod,resource=web,role=noop  ok
`},
		{Name: "show", Run: func() error { return showRun(&ShowOptions{App: a, Name: "web"}) }, Out: `web
  base:     noop (noop, $RES/noop)
  digest:   $DIGEST
  tags:     env=prod, resource=web, role=noop
  actions:  remove, restart, run, update
  meta:     retry=0

INPUT     SCHEMA  VALUE  FROM
value     str     hello
location  str
`},
		{Name: "tag", Run: func() error { return tagRun(&TagOptions{App: a, Name: "web", Tags: []string{"tier=front"}}) },
			Out: "web tags: env=prod, resource=web, role=noop, tier=front\n"},
		{Name: "untag", Run: func() error {
			return tagRun(&TagOptions{App: a, Name: "web", Tags: []string{"tier=front"}, Delete: true})
		},
			Out: "web tags: env=prod, resource=web, role=noop\n"},
		{Name: "update", Run: func() error { return updateRun(&UpdateOptions{App: a, Name: "web", Values: []string{"value=bye"}}) },
			Out: "updated web; staged web.run\n"},
		{Name: "list json", Run: func() error { return listRun(&ListOptions{App: a, Tags: []string{"role=node"}, JSON: true}) }, Out: listJSON},
		{Name: "remove", Run: func() error { return removeRun(&RemoveOptions{App: a, Names: []string{"web"}}) },
			Out: "removed web (it was never committed)\n"},
		{Name: "remove unknown", Run: func() error { return removeRun(&RemoveOptions{App: a, Names: []string{"web"}}) },
			WantErr: resources.ErrNotFound},
	})
	if code := app.ExitCode(resources.ErrNotFound); code != app.ExitInvalid {
		t.Errorf("an unknown resource exits %d, want %d", code, app.ExitInvalid)
	}
}

const listJSON = `{
  "format_version": 2,
  "resources": [
    {
      "name": "n1",
      "base": "node",
      "base_dir": "$RES/node",
      "base_digest": "$DIGEST",
      "handler": "noop",
      "location": "n1",
      "removing": false,
      "tags": [
        "resource=n1",
        "role=node"
      ],
      "actions": [
        "remove",
        "run",
        "update"
      ],
      "inputs": [
        {
          "name": "transport",
          "schema": "str",
          "value": "local",
          "sensitive": false,
          "from": [],
          "computed": false
        },
        {
          "name": "ip",
          "schema": "str!",
          "value": "10.0.0.1",
          "sensitive": false,
          "from": [],
          "computed": false
        },
        {
          "name": "ssh_port",
          "schema": "int",
          "value": 22,
          "sensitive": false,
          "from": [],
          "computed": false
        },
        {
          "name": "ssh_user",
          "schema": "str",
          "value": "",
          "sensitive": false,
          "from": [],
          "computed": false
        },
        {
          "name": "ssh_key",
          "schema": "str",
          "value": "",
          "sensitive": false,
          "from": [],
          "computed": false
        },
        {
          "name": "location",
          "schema": "str",
          "value": "n1",
          "sensitive": false,
          "from": [],
          "computed": false
        }
      ],
      "meta": {
        "retry": 0,
        "delay": "",
        "timeout": "",
        "sema": []
      }
    }
  ]
}
`
