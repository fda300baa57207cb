package resources

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/solarops/solar/store"
)

const webMeta = `handler: noop
inputs:
  ip:       {schema: str}
  port:     {schema: int, value: 80}
  settings: {schema: "{host: str!, port: int}"}
`

// compDir makes a directory with the composition file c.yaml and a base of
// its own in bases/web, and returns the file's path and an environment in
// which ${BASES} names the real bases.
func compDir(t *testing.T, comp string) (string, func(string) string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"c.yaml": comp, "bases/web/meta.yaml": webMeta})
	bases, err := filepath.Abs(basesDir)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BASES": bases, "DATA": "/srv/data"}
	return filepath.Join(dir, "c.yaml"), func(k string) string { return env[k] }
}

const stackYAML = `resources:
  - id: node1
    from: ${BASES}/node
    input: {ip: 10.0.0.1}
  - id: node2
    from: ${BASES}/node
    input: {ip: 10.0.0.2}
  - id: db
    from: ${BASES}/mariadb
    location: node1
    tags: [env1, role=primary]
    meta: {retry: 3, sema: "db:2"}
    input: {dir: "${DATA}/db", root_password: pw, ip: "node1::ip"}
  - id: lb
    from: ${BASES}/haproxy
    input: {dir: /tmp/lb, backends: ["node2::ip", "node1::ip"], ports: [80, 443]}
  - id: web
    from: bases/web
    location: node2
    input:
      settings: {host: "db::ip", port: 8080}
events:
  - on db.run changed web.run
  - this is not a rule
`

func TestCreateComposition(t *testing.T) {
	path, env := compDir(t, stackYAML)
	comp, err := LoadComposition(path, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Resources[2].From; got != filepath.Join(env("BASES"), "mariadb") {
		t.Errorf("db from = %s, want the expanded ${BASES}", got)
	}
	if got := comp.Resources[4].From; got != filepath.Join(filepath.Dir(path), "bases", "web") {
		t.Errorf("web from = %s, want it relative to the file", got)
	}
	// Rules are kept as text with their lines; the events package parses them.
	wantEvents := []CompEvent{{Text: "on db.run changed web.run", Line: 23}, {Text: "this is not a rule", Line: 24}}
	if diff := cmp.Diff(wantEvents, comp.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var lines []int
	for _, r := range comp.Resources {
		lines = append(lines, r.Line)
	}
	if diff := cmp.Diff([]int{2, 5, 8, 14, 17}, lines); diff != "" {
		t.Errorf("entry lines (-want +got):\n%s", diff)
	}

	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		res, err := cat.CreateComposition("stack", comp)
		if err != nil {
			t.Fatal(err)
		}
		var names, conns []string
		for _, r := range res.Resources {
			names = append(names, r.Name)
		}
		for _, c := range res.Connections {
			var ms []string
			for _, m := range c.Mappings {
				ms = append(ms, m.String())
			}
			conns = append(conns, c.Emitter+">"+c.Receiver+" "+strings.Join(ms, ","))
		}
		if diff := cmp.Diff([]string{"node1", "node2", "db", "lb", "web"}, names); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		wantConns := []string{
			"node1>db ip->ip,location->location",
			"node2>lb ip->backends",
			"node1>lb ip->backends",
			"db>web ip->settings:host",
			"node2>web location->location",
		}
		if diff := cmp.Diff(wantConns, conns); diff != "" {
			t.Errorf("connections (-want +got):\n%s", diff)
		}
	})

	view(t, db, func(cat *Catalog) {
		for _, tt := range []struct {
			name string
			want map[string]any
			tags string
		}{
			{"node1", map[string]any{"ip": "10.0.0.1", "location": "node1"}, "composition=stack,resource=node1,role=node"},
			{"db", map[string]any{"ip": "10.0.0.1", "location": "node1", "dir": "/srv/data/db", "port": int64(3306)}, "composition=stack,env1,resource=db,role=primary"},
			{"lb", map[string]any{"backends": []any{"10.0.0.2", "10.0.0.1"}, "ports": []any{int64(80), int64(443)}, "location": ""}, "composition=stack,resource=lb,role=lb"},
			// db's ip is itself node1's: references are followed transitively.
			{"web", map[string]any{"settings": map[string]any{"host": "10.0.0.1", "port": int64(8080)}, "location": "node2"}, "composition=stack,resource=web"},
		} {
			eff, err := cat.Effective(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			checkInputs(t, eff, tt.want)
			r, _ := cat.Get(tt.name)
			if got := r.Tags.String(); got != tt.tags {
				t.Errorf("%s tags = %s, want %s", tt.name, got, tt.tags)
			}
		}
		r, _ := cat.Get("db")
		m := r.EffectiveMeta()
		if *m.Retry != 3 || strings.Join(m.Sema, " ") != "db:2" {
			t.Errorf("db meta retry, sema = %d, %v; want 3, [db:2]", *m.Retry, m.Sema)
		}
	})
}

// TestCompositionInputYAML: an entry's inputs are decoded one by one (for
// speed), with the meaning yaml.v3 gives them: typed values, aliases, merge
// keys, and a missing or null input.
func TestCompositionInputYAML(t *testing.T) {
	path, env := compDir(t, `resources:
  - id: a
    from: ${BASES}/haproxy
    input:
      dir: /a
      ports: &ports [1, 2]
      backends: [x, "y"]
  - id: b
    from: ${BASES}/haproxy
    input: {dir: /b, ports: *ports}
  - id: c
    from: ${BASES}/haproxy
    input:
      <<: {dir: /c, ports: [3]}
      backends: [z]
  - id: d
    from: ${BASES}/noop
    input: ~
  - id: e
    from: ${BASES}/noop
`)
	comp, err := LoadComposition(path, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"dir": "/a", "ports": []any{1, 2}, "backends": []any{"x", "y"}},
		{"dir": "/b", "ports": []any{1, 2}},
		{"dir": "/c", "ports": []any{3}, "backends": []any{"z"}},
		nil,
		nil,
	}
	for i, r := range comp.Resources {
		if diff := cmp.Diff(want[i], r.Input); diff != "" {
			t.Errorf("%s input (-want +got):\n%s", r.ID, diff)
		}
	}
}

func TestCompositionReferencesExistingResources(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) { mustCreate(t, cat, "pw", realBase(t, "noop"), "value=s3cret") })
	path, env := compDir(t, `resources:
  - id: db
    from: ${BASES}/mariadb
    input: {dir: /d, root_password: "pw::value"}
`)
	comp, err := LoadComposition(path, env)
	if err != nil {
		t.Fatal(err)
	}
	// root_password is required and only the reference satisfies it.
	update(t, db, func(cat *Catalog) {
		if _, err := cat.CreateComposition("c", comp); err != nil {
			t.Fatal(err)
		}
	})
	view(t, db, func(cat *Catalog) {
		eff, err := cat.Effective("db")
		if err != nil {
			t.Fatal(err)
		}
		if eff["root_password"] != "s3cret" {
			t.Errorf("root_password = %v, want pw's value", eff["root_password"])
		}
	})
}

func TestCompositionErrors(t *testing.T) {
	const node = "  - id: n1\n    from: ${BASES}/node\n    input: {ip: 10.0.0.1}\n"
	for _, tt := range []struct {
		name     string
		comp     string
		compName string
		existing bool // a resource n1 exists before
		kind     error
		want     []string
	}{
		{name: "unset variable in from", comp: "resources:\n  - id: a\n    from: ${NOPE}/node\n",
			kind: ErrInvalid, want: []string{"c.yaml:2", "resource a uses ${NOPE}", "not set"}},
		{name: "unset variable in input", comp: "resources:\n" + node + "  - id: a\n    from: ${BASES}/noop\n    input: {value: \"x-${UNSET_TOO}\"}\n",
			kind: ErrInvalid, want: []string{"c.yaml:5", "${UNSET_TOO}"}},
		{name: "unset variable in a list", comp: "resources:\n  - id: a\n    from: ${BASES}/haproxy\n    input: {dir: /d, backends: [\"${GONE}\"]}\n",
			kind: ErrInvalid, want: []string{"${GONE}"}},
		{name: "duplicate id", comp: "resources:\n" + node + node,
			kind: ErrExists, want: []string{"c.yaml:5", `id "n1" already used at line 2`}},
		{name: "id of an existing resource", comp: "resources:\n" + node, existing: true,
			kind: ErrExists, want: []string{"c.yaml:2", `"n1"`}},
		{name: "invalid entry in the middle", comp: "resources:\n" + node + "  - id: y\n    from: ${BASES}/mariadb\n    input: {dir: /d, root_password: pw, port: abc}\n  - id: z\n    from: ${BASES}/noop\n",
			kind: ErrInvalid, want: []string{`c.yaml:5: y: input "port" (int): want int, got "abc"`}},
		{name: "invalid id", comp: "resources:\n  - id: Node1\n    from: ${BASES}/node\n    input: {ip: x}\n",
			kind: ErrInvalid, want: []string{"c.yaml:2", `resource name "Node1"`}},
		{name: "missing from", comp: "resources:\n" + node + "  - id: x\n",
			kind: ErrInvalid, want: []string{"c.yaml:5", "needs id and from"}},
		{name: "missing id", comp: "resources:\n  - from: ${BASES}/noop\n",
			kind: ErrInvalid, want: []string{"c.yaml:2", "needs id and from"}},
		{name: "unknown base", comp: "resources:\n" + node + "  - id: x\n    from: nowhere/base\n",
			kind: ErrBase, want: []string{"c.yaml:5", "nowhere", "does not exist"}},
		{name: "malformed yaml", comp: "resources:\n  - id: [\n",
			kind: ErrInvalid, want: []string{"c.yaml: line "}},
		{name: "unknown field", comp: "resource:\n  - id: a\n",
			kind: ErrInvalid, want: []string{"c.yaml", "line 1", "resource"}},
		{name: "unknown entry field", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    inputs: {value: x}\n",
			kind: ErrInvalid, want: []string{"c.yaml:4", `unknown field "inputs"`}},
		{name: "entry not a mapping", comp: "resources:\n  - just text\n",
			kind: ErrInvalid, want: []string{"c.yaml:2"}},
		{name: "event not text", comp: "resources: []\nevents:\n  - {on: x}\n",
			kind: ErrInvalid, want: []string{"c.yaml:3", "one rule as text"}},
		{name: "reference to an unknown resource", comp: "resources:\n" + node + "  - id: a\n    from: ${BASES}/noop\n    input: {value: \"ghost::ip\"}\n",
			kind: ErrNotFound, want: []string{"c.yaml:5", `"ghost"`}},
		{name: "reference to an unknown input", comp: "resources:\n" + node + "  - id: a\n    from: ${BASES}/noop\n    input: {value: \"n1::port\"}\n",
			kind: ErrInvalid, want: []string{"c.yaml:5", `n1 has no input "port"`}},
		{name: "reference of the wrong type", comp: "resources:\n  - id: h\n    from: ${BASES}/haproxy\n    input: {dir: /d}\n  - id: a\n    from: ${BASES}/noop\n    input: {value: \"h::ports\"}\n",
			kind: ErrInvalid, want: []string{"c.yaml:5", "h.ports is [int] but a.value wants str"}},
		{name: "unknown location", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    location: n9\n",
			kind: ErrNotFound, want: []string{"c.yaml:2", `"n9"`}},
		{name: "required input unset", comp: "resources:\n  - id: db\n    from: ${BASES}/mariadb\n    input: {dir: /d}\n",
			kind: ErrInvalid, want: []string{`db: input "root_password" (str!) is required`}},
		{name: "required input from an empty reference", comp: "resources:\n  - id: e\n    from: ${BASES}/noop\n  - id: db\n    from: ${BASES}/mariadb\n    input: {dir: /d, root_password: \"e::value\"}\n",
			kind: ErrInvalid, want: []string{`db: input "root_password" (str!) is required`}},
		{name: "a cycle", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    input: {value: \"b::value\"}\n  - id: b\n    from: ${BASES}/noop\n    input: {value: \"a::value\"}\n",
			kind: ErrCycle, want: []string{"c.yaml:5", "would close a.value -> b.value -> a.value"}},
		{name: "object with references checks its other keys", comp: "resources:\n  - id: w0\n    from: bases/web\n  - id: w\n    from: bases/web\n    input: {settings: {host: \"\", port: \"w0::port\"}}\n",
			kind: ErrInvalid, want: []string{`c.yaml:4: w: input "settings" ({host: str!, port: int}): host: required, got ""`}},
		{name: "object with references and an unknown key", comp: "resources:\n  - id: w0\n    from: bases/web\n  - id: w\n    from: bases/web\n    input: {settings: {host: \"w0::ip\", colour: red}}\n",
			kind: ErrInvalid, want: []string{"c.yaml:4", `unknown key "colour"`}},
		{name: "bad tag", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    tags: [\"=x\"]\n",
			kind: ErrInvalid, want: []string{"c.yaml:2"}},
		{name: "input given twice", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    input:\n      value: x\n      value: y\n",
			kind: ErrInvalid, want: []string{`c.yaml:6: input "value" is given twice (first at line 5)`}},
		{name: "input not a mapping", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    input: [value]\n",
			kind: ErrInvalid, want: []string{"c.yaml:4", "input must be a mapping"}},
		{name: "input name not text", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    input: {[value]: x}\n",
			kind: ErrInvalid, want: []string{"c.yaml:4", "input name must be plain text"}},
		{name: "tag with a line break", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    tags: [\"k=a\\nb\"]\n",
			kind: ErrInvalid, want: []string{"c.yaml:2", `invalid tag "k=a\nb"`, "control character"}},
		{name: "tag ending in a tab", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    tags: [\"k=a\\t\"]\n",
			kind: ErrInvalid, want: []string{"c.yaml:2", `invalid tag "k=a\t"`, "control character"}},
		{name: "bad meta", comp: "resources:\n  - id: a\n    from: ${BASES}/noop\n    meta: {retry: lots}\n",
			kind: ErrInvalid, want: []string{"c.yaml:2", `retry="lots"`}},
		{name: "bad composition name", compName: "My Stack", comp: "resources:\n" + node,
			kind: ErrInvalid, want: []string{`resource name "My Stack"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, env := compDir(t, tt.comp)
			db := openStore(t)
			if tt.existing {
				update(t, db, func(cat *Catalog) { mustCreate(t, cat, "n1", realBase(t, "noop")) })
			}
			name := tt.compName
			if name == "" {
				name = "stack"
			}
			err := db.Update(func(tx *store.Tx) error {
				comp, err := LoadComposition(path, env)
				if err != nil {
					return err
				}
				_, err = NewCatalog(tx).CreateComposition(name, comp)
				return err
			})
			wantErr(t, err, tt.kind, tt.want...)
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
			// The caller's transaction rolled back: nothing of it is stored.
			view(t, db, func(cat *Catalog) {
				rs, _ := cat.List(nil)
				if want := map[bool]int{true: 1, false: 0}[tt.existing]; len(rs) != want {
					t.Errorf("%d resources stored, want %d", len(rs), want)
				}
				if cs, _ := cat.AllConnections(); len(cs) != 0 {
					t.Errorf("%d connections stored, want none", len(cs))
				}
			})
		})
	}
}

func TestLoadCompositionMissingFile(t *testing.T) {
	_, err := LoadComposition(filepath.Join(t.TempDir(), "none.yaml"), func(string) string { return "" })
	wantErr(t, err, ErrBase, "none.yaml")
	if errors.Is(err, ErrInvalid) {
		t.Error("a missing file is not a value error")
	}
}

// TestDecodeEntryAsYAML: an entry read from its node directly (plain text
// fields) decodes as yaml.v3 decodes it, and any other entry is left to
// yaml.v3, errors included.
func TestDecodeEntryAsYAML(t *testing.T) {
	tests := []struct {
		name  string
		entry string
		plain bool // read from the node, without yaml.v3's decoding
	}{
		{"plain", `{id: r1, from: ./b, input: {value: "r0::value"}}`, true},
		{"every field", "id: 'r1'\nfrom: \"b\"\nlocation: n1\ntags: [a=1, b]\nmeta: {retry: \"2\"}\ninput:\n  x: 1\n  y: \"1\"\n  z: !!str 1\n  w: [a]\n  v: |\n    text\n", true},
		{"block and tagged text", "id: !!str 12\nfrom: |\n  b\n", true},
		{"empty lists", `{id: r1, from: b, tags: [], meta: {}}`, true},
		{"number id", `{id: 12, from: b}`, false},
		{"number in meta", `{id: r1, from: b, meta: {retry: 2}}`, false},
		{"null location", `{id: r1, from: b, location: ~}`, false},
		{"alias", "{id: &x r1, from: *x}", false},
		{"field twice", `{id: r1, id: r2, from: b}`, false},
		{"meta key twice", `{id: r1, from: b, meta: {retry: "1", retry: "2"}}`, false},
		{"list as id", `{id: [r1], from: b}`, false},
		{"unknown field", `{id: r1, from: b, other: 1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.entry), &doc); err != nil {
				t.Fatal(err)
			}
			n := doc.Content[0]
			var got, want compEntry
			if plainEntry(n, &got) != tt.plain {
				t.Fatalf("plainEntry = %v, want %v", !tt.plain, tt.plain)
			}
			got = compEntry{}
			gotErr, wantErr := decodeEntry(n, &got), n.Decode(&want)
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("error %v, yaml.v3's %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decoded (-yaml.v3 +decodeEntry):\n%s", diff)
			}
			if gotErr != nil || got.InputNode.Kind == 0 {
				return
			}
			in, err := decodeInput("c.yaml", &got.InputNode)
			var wantIn map[string]any
			if err != nil || want.InputNode.Decode(&wantIn) != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantIn, in); diff != "" {
				t.Errorf("input (-yaml.v3 +decodeInput):\n%s", diff)
			}
		})
	}
}
