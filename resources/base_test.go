package resources

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadBaseValid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	writeFiles(t, dir, map[string]string{
		"actions/run.sh":    "#!/bin/sh\n",
		"actions/remove.sh": "#!/bin/sh\n",
		"meta.yaml": `# a comment
version: 2.1.0
actions:
  run: actions/run.sh
  remove: actions/remove.sh
inputs:
  port:          {schema: int, value: 3306}
  ratio:         {schema: float, value: 1}
  root_password: {schema: str!, sensitive: true}
  backends:      {schema: "[str]", value: []}
  settings:      {schema: "{host: str!, port: int}"}
  flags:         {schema: "{debug: bool}", value: {debug: true}}
meta:
  retry: 2
  delay: 1s
  timeout: 60s
  sema: ["db:1", "disk:4"]
tags: [role=db, env]
`,
	})
	b := loadBase(t, dir)

	if b.Name != "db" || b.Dir != dir {
		t.Errorf("name, dir = %q, %q; want db, %q", b.Name, b.Dir, dir)
	}
	if b.Handler != "shell" {
		t.Errorf("handler = %q, want the default shell", b.Handler)
	}
	if b.Version != "2.1.0" || b.Node {
		t.Errorf("version, node = %q, %v; want 2.1.0, false", b.Version, b.Node)
	}
	if diff := cmp.Diff([]string{"remove", "run"}, b.ActionNames()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	// Declaration order, with the implicit location last.
	if diff := cmp.Diff([]string{"port", "ratio", "root_password", "backends", "settings", "flags", "location"}, b.InputNames()); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		input     string
		schema    string
		def       any
		sensitive bool
	}{
		{"port", "int", int64(3306), false},
		{"ratio", "float", float64(1), false},
		{"root_password", "str!", nil, true},
		{"backends", "[str]", []any{}, false},
		{"settings", "{host: str!, port: int}", nil, false},
		{"flags", "{debug: bool}", map[string]any{"debug": true}, false},
		{"location", "str", "", false},
	} {
		d, ok := b.Input(tt.input)
		if !ok {
			t.Errorf("input %q missing", tt.input)
			continue
		}
		if got := d.Schema.String(); got != tt.schema {
			t.Errorf("%s schema = %s, want %s", tt.input, got, tt.schema)
		}
		// Defaults come back in canonical form: int64, float64, []any.
		if diff := cmp.Diff(tt.def, d.Default); diff != "" {
			t.Errorf("%s default (-want +got):\n%s", tt.input, diff)
		}
		if d.Sensitive != tt.sensitive {
			t.Errorf("%s sensitive = %v, want %v", tt.input, d.Sensitive, tt.sensitive)
		}
	}
	if b.Meta.Retry == nil || *b.Meta.Retry != 2 {
		t.Errorf("meta retry = %v, want 2", b.Meta.Retry)
	}
	if b.Meta.Delay == nil || time.Duration(*b.Meta.Delay) != time.Second {
		t.Errorf("meta delay = %v, want 1s", b.Meta.Delay)
	}
	if b.Meta.Timeout == nil || time.Duration(*b.Meta.Timeout) != time.Minute {
		t.Errorf("meta timeout = %v, want 1m0s", b.Meta.Timeout)
	}
	if diff := cmp.Diff([]string{"db:1", "disk:4"}, b.Meta.Sema); diff != "" {
		t.Errorf("meta sema (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"role=db", "env"}, b.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if _, ok := b.Input("nope"); ok {
		t.Error(`Input("nope") found an input`)
	}
}

func TestLoadBaseVariants(t *testing.T) {
	for _, tt := range []struct {
		name    string
		meta    string
		handler string
		inputs  []string
		node    bool
	}{
		{name: "empty meta.yaml", meta: "", handler: "shell", inputs: []string{"location"}},
		{name: "noop needs no script files", meta: "handler: noop\nactions: {run: actions/run.sh, remove: \"\"}\n", handler: "noop", inputs: []string{"location"}},
		{name: "declared location keeps its place", meta: "inputs:\n  location: {schema: str, value: here}\n  ip: {schema: str}\n", handler: "shell", inputs: []string{"location", "ip"}},
		{name: "node base", meta: "handler: noop\nnode: true\ninputs: {ip: {schema: str!}}\n", handler: "noop", inputs: []string{"ip", "location", "transport", "ssh_port", "ssh_user", "ssh_key"}, node: true},
		{name: "null default is no default", meta: "inputs: {ip: {schema: str!, value: null}}\n", handler: "shell", inputs: []string{"ip", "location"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := loadBase(t, writeBase(t, "b", tt.meta))
			if b.Handler != tt.handler {
				t.Errorf("handler = %q, want %q", b.Handler, tt.handler)
			}
			if diff := cmp.Diff(tt.inputs, b.InputNames()); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
			if b.Node != tt.node {
				t.Errorf("node = %v, want %v", b.Node, tt.node)
			}
			if b.Actions == nil {
				t.Error("actions is nil; callers range over it and store it")
			}
		})
	}
}

func TestLoadBaseRealBases(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler string
		node    bool
		inputs  []string
		sema    []string
	}{
		{"node", "noop", true, []string{"transport", "ip", "ssh_port", "ssh_user", "ssh_key", "location"}, nil},
		{"noop", "noop", false, []string{"value", "location"}, nil},
		{"haproxy", "shell", false, []string{"dir", "backends", "ports", "location"}, nil},
		{"mariadb", "shell", false, []string{"dir", "ip", "port", "root_password", "location"}, []string{"db:1"}},
		{"keystone", "shell", false, []string{"dir", "port", "admin_port", "db_host", "db_port", "db_password", "location"}, nil},
		{"file", "shell", false, []string{"dir", "path", "content", "mode", "location"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := realBase(t, tt.name)
			if b.Handler != tt.handler || b.Node != tt.node {
				t.Errorf("handler, node = %q, %v; want %q, %v", b.Handler, b.Node, tt.handler, tt.node)
			}
			if diff := cmp.Diff(tt.inputs, b.InputNames()); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.sema, b.Meta.Sema); diff != "" {
				t.Errorf("sema (-want +got):\n%s", diff)
			}
			if !filepath.IsAbs(b.Dir) {
				t.Errorf("dir %q is not absolute; actions must run from any working directory", b.Dir)
			}
		})
	}
}

func TestLoadBaseErrors(t *testing.T) {
	root := t.TempDir()
	notDir := filepath.Join(root, "file.txt")
	writeFiles(t, root, map[string]string{"file.txt": "x", "empty/.keep": ""})
	for _, tt := range []struct {
		name string
		dir  string // used as is when meta is empty
		meta string
		want []string
	}{
		{name: "missing dir", dir: filepath.Join(root, "nope"), want: []string{"nope", "does not exist"}},
		{name: "not a dir", dir: notDir, want: []string{"file.txt", "is not a directory"}},
		{name: "no meta.yaml", dir: filepath.Join(root, "empty"), want: []string{"empty has no meta.yaml"}},
		{name: "malformed yaml", meta: "handler: shell\ninputs:\n  port: {schema: int\n", want: []string{"meta.yaml: line "}},
		{name: "tab indentation", meta: "inputs:\n\tport: {schema: int}\n", want: []string{"meta.yaml: line 2"}},
		{name: "unknown field", meta: "handeler: shell\n", want: []string{"meta.yaml", "line 1", "handeler"}},
		{name: "unknown meta field", meta: "meta:\n  retries: 2\n", want: []string{"line 2", "retries"}},
		{name: "unknown input field", meta: "inputs:\n  port: {schema: int, vaule: 3}\n", want: []string{"meta.yaml:2", `unknown field "vaule"`}},
		{name: "unknown handler", meta: "handler: chef\n", want: []string{`unknown handler "chef" (want shell, ansible or noop)`}},
		{name: "action without script", meta: "actions: {run: \"\"}\n", want: []string{`action "run" has no script`}},
		{name: "script file missing", meta: "actions: {run: actions/run.sh}\n", want: []string{`action "run"`, "actions/run.sh does not exist"}},
		{name: "bad action name", meta: "handler: noop\nactions: {Run: x}\n", want: []string{`invalid action name "Run"`}},
		{name: "inputs not a mapping", meta: "inputs: [port]\n", want: []string{"meta.yaml:1", "inputs must be a mapping"}},
		{name: "input not a mapping", meta: "inputs:\n  port: int\n", want: []string{"meta.yaml:2", `input "port"`}},
		{name: "bad input name", meta: "inputs:\n  ip: {schema: str}\n  Port: {schema: int}\n", want: []string{"meta.yaml:3", `invalid input name "Port"`}},
		{name: "input name with dash", meta: "inputs:\n  db-host: {schema: str}\n", want: []string{`invalid input name "db-host"`}},
		{name: "input without schema", meta: "inputs:\n  port: {value: 1}\n", want: []string{`input "port" has no schema`}},
		{name: "schema does not parse", meta: "inputs:\n  port: {schema: \"[int\"}\n", want: []string{"meta.yaml:2", `input "port"`, "[int"}},
		{name: "unknown schema type", meta: "inputs:\n  port: {schema: integer}\n", want: []string{`input "port"`, "integer"}},
		{name: "default does not match", meta: "inputs:\n  port: {schema: int, value: abc}\n", want: []string{`input "port"`, "default value", `"abc"`}},
		{name: "empty default for str!", meta: "inputs:\n  ip: {schema: str!, value: \"\"}\n", want: []string{`input "ip"`, "default value", "required"}},
		{name: "default list element", meta: "inputs:\n  ports: {schema: \"[int]\", value: [1, x]}\n", want: []string{`input "ports"`, "[1]"}},
		{name: "duplicate input", meta: "inputs:\n  port: {schema: int}\n  port: {schema: str}\n", want: []string{"meta.yaml:3", `input "port" declared twice`}},
		{name: "bad delay", meta: "meta: {delay: soon}\n", want: []string{`meta delay "soon"`}},
		{name: "negative timeout", meta: "meta: {timeout: -1s}\n", want: []string{`meta timeout "-1s"`}},
		{name: "negative retry", meta: "meta: {retry: -1}\n", want: []string{"retry=-1"}},
		{name: "retry not a number", meta: "meta: {retry: many}\n", want: []string{"line 1", "many"}},
		{name: "sema without count", meta: "meta: {sema: [db]}\n", want: []string{`sema "db"`}},
		{name: "sema with zero count", meta: "meta: {sema: [\"db:0\"]}\n", want: []string{`sema "db:0"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = writeBase(t, "bad", tt.meta)
			}
			b, err := LoadBase(dir)
			if b != nil {
				t.Errorf("got a base along with the error")
			}
			wantErr(t, err, ErrBase, tt.want...)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines; the CLI prints one line", err)
			}
		})
	}
}

// A resource keeps a snapshot of its base in the store; it must come back
// exactly, with defaults in canonical form.
func TestBaseJSONRoundTrip(t *testing.T) {
	b := realBase(t, "mariadb")
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var got Base
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	// The input index is derived, rebuilt on load: not part of the record.
	if diff := cmp.Diff(b, &got, cmp.Comparer(func(a, b Duration) bool { return a == b }), cmpopts.IgnoreUnexported(Base{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	port, _ := got.Input("port")
	if _, ok := port.Default.(int64); !ok {
		t.Errorf("port default after JSON = %T, want int64", port.Default)
	}
}

func TestMetaSetMetaAndOver(t *testing.T) {
	for _, tt := range []struct {
		key, value string
		want       string // JSON of the resulting Meta, or "" for an error
		errPart    string
	}{
		{key: "retry", value: "3", want: `{"retry":3}`},
		{key: "retry", value: "-1", errPart: `retry="-1"`},
		{key: "retry", value: "3x", errPart: `retry="3x"`},
		{key: "delay", value: "2s", want: `{"delay":"2s"}`},
		{key: "timeout", value: "1m30s", want: `{"timeout":"1m30s"}`},
		{key: "timeout", value: "forever", errPart: `timeout="forever"`},
		{key: "sema", value: "db:1, disk:2", want: `{"sema":["db:1","disk:2"]}`},
		{key: "sema", value: "db", errPart: `sema "db"`},
		{key: "retries", value: "1", errPart: `unknown metaparameter "retries"`},
	} {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			var m Meta
			err := m.SetMeta(tt.key, tt.value)
			if tt.errPart != "" {
				wantErr(t, err, ErrInvalid, tt.errPart)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(m)
			if string(raw) != tt.want {
				t.Errorf("meta = %s, want %s", raw, tt.want)
			}
		})
	}

	// A list key appends when given again; a scalar key is set once.
	var m Meta
	for _, kv := range [][2]string{{"sema", "db:1"}, {"sema", "web:2"}, {"retry", "1"}} {
		if err := m.SetMeta(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if raw, _ := json.Marshal(m); string(raw) != `{"retry":1,"sema":["db:1","web:2"]}` {
		t.Errorf("sema twice = %s, want both items", raw)
	}
	for _, key := range []string{"retry", "delay", "timeout"} {
		m := Meta{}
		val := map[string]string{"retry": "1", "delay": "1s", "timeout": "2s"}[key]
		if err := m.SetMeta(key, val); err != nil {
			t.Fatal(err)
		}
		wantErr(t, m.SetMeta(key, val), ErrInvalid, "meta "+key+" given twice")
	}

	two, five := 2, 5
	sec := Duration(time.Second)
	base := Meta{Retry: &two, Delay: &sec, Sema: []string{"db:1"}}
	got := base.Over(Meta{Retry: &five})
	if *got.Retry != 5 || got.Delay != &sec || len(got.Sema) != 1 {
		t.Errorf("Over kept %+v, want retry 5 and the base's delay and sema", got)
	}
	if *base.Retry != 2 {
		t.Error("Over changed its receiver")
	}
}

func TestIsComposition(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"c.yaml": "", "c.yml": "", "c.txt": "", "d.yaml/meta.yaml": ""})
	for name, want := range map[string]bool{"c.yaml": true, "c.yml": true, "c.txt": false, "d.yaml": false, "missing.yaml": false} {
		if got := IsComposition(filepath.Join(root, name)); got != want {
			t.Errorf("IsComposition(%s) = %v, want %v", name, got, want)
		}
	}
}
