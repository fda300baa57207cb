package storecmd

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/store"
)

// TestParse: each verb's command line becomes the options its run
// function gets.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"info", apptest.Parser(NewCmdInfo), []string{"--json"}, InfoOptions{JSON: true}},
		{"export", apptest.Parser(NewCmdExport), nil, ExportOptions{}},
		{"copy", apptest.Parser(NewCmdCopy), []string{"--from", "a.db", "--to", "postgres://h/db", "--force", "--json"},
			CopyOptions{From: "a.db", To: "postgres://h/db", Force: true, JSON: true}},
	})
}

// TestRun: each verb's run function, given buffers, on a store holding
// one resource.
func TestRun(t *testing.T) {
	e := apptest.New(t)
	a := e.App
	res := apptest.Resources(t)
	e.Create(t, "web", res+"/noop")
	to := filepath.Join(t.TempDir(), "copy.db")
	paths := strings.NewReplacer(e.DB, "$DB", to, "$TO", res, "$RES")
	// The stored base's digest, files and time stored depend on the
	// bundled base and the clock (package bases tests them).
	digest := regexp.MustCompile(`[0-9a-f]{64}`)
	files := regexp.MustCompile(`"base64":"[^"]*"`)
	stored := regexp.MustCompile(`"stored_at":"[^"]*"`)
	e.Replace = func(s string) string {
		s = digest.ReplaceAllString(paths.Replace(s), "$$DIGEST")
		return stored.ReplaceAllString(files.ReplaceAllString(s, `"base64":"$$FILES"`), `"stored_at":"$$TIME"`)
	}
	e.Steps(t, []apptest.Step{
		{Name: "info", Run: func() error { return infoRun(&InfoOptions{App: a}) }, Out: `backend:        bbolt
location:       $DB
schema version: 4
keys:           6
BUCKET       KEYS
bases        2
committed    0
connections  0
effective    0
events       0
history      0
host_keys    0
meta         1
plans        0
refreshes    0
resources    1
staged       1
staged_tags  2
`},
		{Name: "info json", Run: func() error { return infoRun(&InfoOptions{App: a, JSON: true}) }, Out: `{
  "format_version": 2,
  "backend": "bbolt",
  "location": "$DB",
  "schema_version": 4,
  "keys": 6,
  "buckets": {
    "bases": 2,
    "committed": 0,
    "connections": 0,
    "effective": 0,
    "events": 0,
    "history": 0,
    "host_keys": 0,
    "meta": 1,
    "plans": 0,
    "refreshes": 0,
    "resources": 1,
    "staged": 1,
    "staged_tags": 2
  }
}
`},
		{Name: "export", Run: func() error { return exportRun(&ExportOptions{App: a}) }, Out: exported},
		{Name: "copy", Run: func() error { return copyRun(&CopyOptions{App: a, From: e.DB, To: to}) },
			Out: "copied 6 keys from $DB (bbolt) to $TO (bbolt)\n", Err: "created a new store at $TO\n"},
		{Name: "copy onto a store", Run: func() error { return copyRun(&CopyOptions{App: a, From: e.DB, To: to}) }, WantErr: store.ErrNotEmpty},
	})
}

const exported = `{"format_version":1,"schema_version":4,"buckets":{
"bases":{"sequence":0,"keys":[
{"key":"content/$DIGEST","base64":"$FILES"},
{"key":"info/$DIGEST","json":{"name":"noop","version":"1.0.0","digest":"$DIGEST","size":674,"files":6,"stored_at":"$TIME","source":"$RES/noop"}}]},
"committed":{"sequence":0,"keys":[]},
"connections":{"sequence":0,"keys":[]},
"effective":{"sequence":0,"keys":[]},
"events":{"sequence":0,"keys":[]},
"history":{"sequence":0,"keys":[]},
"host_keys":{"sequence":0,"keys":[]},
"plans":{"sequence":0,"keys":[]},
"refreshes":{"sequence":0,"keys":[]},
"resources":{"sequence":0,"keys":[
{"key":"web","json":{"name":"web","base":{"name":"noop","dir":"$RES/noop","digest":"$DIGEST","handler":"noop","version":"1.0.0","actions":{"remove":"actions/remove.sh","restart":"actions/restart.sh","run":"actions/run.sh","update":"actions/update.sh"},"inputs":[{"name":"value","schema":"str","default":""},{"name":"location","schema":"str","default":""}],"tags":["role=noop"]},"inputs":{"location":"","value":""},"tags":{"resource":"web","role":"noop"}}}]},
"staged":{"sequence":1,"keys":[
{"key":"web.run","json":{"key":"web.run","resource":"web","action":"run","seq":1,"tags":{"resource":"web","role":"noop"},"diff":[{"op":"add","key":"value","new":""},{"op":"add","key":"location","new":""}],"cause":"create","staged_at":"2026-11-22T10:00:00Z","staged_by":"tester@test"}}]},
"staged_tags":{"sequence":0,"keys":[
{"key":"resource=web\u0000web.run","text":""},
{"key":"role=noop\u0000web.run","text":""}]}
}}
`
