package resources

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

const svcMeta = `handler: noop
actions: {run: x}
inputs:
  name:     {schema: str!}
  port:     {schema: int, value: 3306}
  ip:       {schema: str, value: 127.0.0.1}
  version:  {schema: str}
  ratio:    {schema: float}
  debug:    {schema: bool, value: false}
  backends: {schema: "[str]", value: []}
  ports:    {schema: "[int]", value: []}
  settings: {schema: "{host: str!, port: int}"}
  pin:      {schema: int, sensitive: true}
  pins:     {schema: "[int]", sensitive: true}
  secret:   {schema: str!, value: s3cr3t, sensitive: true}
meta: {retry: 1, timeout: 10s}
tags: [role=svc, tier=back]
`

// svcBase is a base with one input of every kind, used across these tests.
func svcBase(t testing.TB) *Base {
	t.Helper()
	return loadBase(t, writeBase(t, "svc", svcMeta))
}

func TestCreateReadsValuesPerSchema(t *testing.T) {
	svc := svcBase(t)
	for _, tt := range []struct {
		name string
		args []string
		want map[string]any // inputs to compare; the others keep defaults
	}{
		{name: "defaults", args: []string{"name=a"}, want: map[string]any{
			"name": "a", "port": int64(3306), "ip": "127.0.0.1", "debug": false,
			"backends": []any{}, "ports": []any{}, "location": "", "secret": "s3cr3t",
		}},
		{name: "int", args: []string{"name=a", "port=5432"}, want: map[string]any{"port": int64(5432)}},
		{name: "ip stays a string", args: []string{"name=a", "ip=10.0.0.1"}, want: map[string]any{"ip": "10.0.0.1"}},
		{name: "version stays as typed", args: []string{"name=a", "version=1.10"}, want: map[string]any{"version": "1.10"}},
		{name: "str takes yaml-looking text verbatim", args: []string{"name=[a, b]", "version=true"}, want: map[string]any{"name": "[a, b]", "version": "true"}},
		{name: "value with =", args: []string{"name=a=b"}, want: map[string]any{"name": "a=b"}},
		{name: "float", args: []string{"name=a", "ratio=1.5"}, want: map[string]any{"ratio": 1.5}},
		{name: "whole float", args: []string{"name=a", "ratio=2"}, want: map[string]any{"ratio": float64(2)}},
		{name: "bool", args: []string{"name=a", "debug=true"}, want: map[string]any{"debug": true}},
		{name: "list", args: []string{"name=a", "backends=[a, b]"}, want: map[string]any{"backends": []any{"a", "b"}}},
		{name: "list of int", args: []string{"name=a", "ports=[80, 443]"}, want: map[string]any{"ports": []any{int64(80), int64(443)}}},
		{name: "empty list", args: []string{"name=a", "backends=[]"}, want: map[string]any{"backends": []any{}}},
		{name: "object", args: []string{"name=a", "settings={host: h, port: 1}"}, want: map[string]any{"settings": map[string]any{"host": "h", "port": int64(1)}}},
		{name: "object optional key left out", args: []string{"name=a", "settings={host: h}"}, want: map[string]any{"settings": map[string]any{"host": "h"}}},
		{name: "location", args: []string{"name=a", "location=n1"}, want: map[string]any{"location": "n1"}},
		{name: "json numbers are int64", args: []string{`{"name": "a", "port": 5432, "ports": [1, 2], "settings": {"host": "h", "port": 80}}`}, want: map[string]any{
			"port": int64(5432), "ports": []any{int64(1), int64(2)}, "settings": map[string]any{"host": "h", "port": int64(80)},
		}},
		{name: "json integral float for int", args: []string{`{"name": "a", "port": 5432.0}`}, want: map[string]any{"port": int64(5432)}},
		{name: "json float", args: []string{`{"name": "a", "ratio": 0.25}`}, want: map[string]any{"ratio": 0.25}},
		{name: "json string is not re-read", args: []string{`{"name": "a", "version": "1.10"}`}, want: map[string]any{"version": "1.10"}},
		{name: "leading space json", args: []string{` {"name": "a"}`}, want: map[string]any{"name": "a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				r := mustCreate(t, cat, "svc1", svc, tt.args...)
				checkInputs(t, r.Inputs, tt.want)
			})
			// What the store gives back is the same canonical form.
			view(t, db, func(cat *Catalog) {
				r, err := cat.Get("svc1")
				if err != nil {
					t.Fatal(err)
				}
				checkInputs(t, r.Inputs, tt.want)
			})
		})
	}
}

func checkInputs(t *testing.T, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if diff := cmp.Diff(w, got[k]); diff != "" {
			t.Errorf("input %s (-want +got):\n%s", k, diff)
		}
	}
}

func TestParseValuesErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "no equals", args: []string{"port"}, want: []string{`argument "port"`, "input=value"}},
		{name: "no name", args: []string{"=3"}, want: []string{`argument "=3"`}},
		{name: "truncated json", args: []string{`{"port": 3306,`}, want: []string{"JSON value (argument 1)", "line 1 column 15", "unexpected end"}},
		{name: "json syntax", args: []string{"name=a", `{"dir": "/tmp", "port": }`}, want: []string{"JSON value (argument 2)", "line 1 column 25"}},
		{name: "text after json", args: []string{`{"port": 1} x`}, want: []string{"line 1 column 12", "text after the object"}},
		{name: "two json objects", args: []string{`{"port": 1}{"ip": "x"}`}, want: []string{"text after the object"}},
		{name: "json line", args: []string{"{\n\"port\": 3306\n\"ip\": \"x\"}"}, want: []string{"line 3 column 1"}},
		{name: "json not an object", args: []string{`{"port"}`}, want: []string{"JSON value"}},
		{name: "k=v twice", args: []string{"port=1", "port=3"}, want: []string{`input "port" is given twice`}},
		{name: "json then k=v", args: []string{`{"port": 1}`, "port=2"}, want: []string{`input "port" is given twice`}},
		{name: "k=v then json", args: []string{"port=2", `{"port": 1}`}, want: []string{`input "port" is given twice`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseValues(tt.args)
			wantErr(t, err, ErrInvalid, tt.want...)
		})
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	svc := svcBase(t)
	for _, tt := range []struct {
		name     string
		resource string
		args     []string
		kind     error
		want     []string
		secret   string // must not appear in the error
	}{
		{name: "unknown input", args: []string{"name=a", "colour=red"}, kind: ErrInvalid,
			want: []string{"svc1", `unknown input "colour"`, "base svc has: name, port, ip"}},
		{name: "wrong type", args: []string{"name=a", "port=abc"}, kind: ErrInvalid,
			want: []string{"svc1", `input "port"`, "(int)", `"abc"`}},
		{name: "wrong type in json", args: []string{`{"name": "a", "port": "3306"}`}, kind: ErrInvalid,
			want: []string{"svc1", `input "port"`, "(int)", `"3306"`}},
		{name: "fraction for int", args: []string{`{"name": "a", "port": 1.5}`}, kind: ErrInvalid,
			want: []string{`input "port"`, "1.5"}},
		{name: "number for str in json", args: []string{`{"name": 5}`}, kind: ErrInvalid,
			want: []string{`input "name"`, "(str!)", "5"}},
		{name: "list element", args: []string{"name=a", "ports=[80, http]"}, kind: ErrInvalid,
			want: []string{`input "ports"`, "[1]", `"http"`}},
		{name: "scalar for list", args: []string{"name=a", "backends=a"}, kind: ErrInvalid,
			want: []string{`input "backends"`, "([str])", `"a"`}},
		{name: "object missing required key", args: []string{"name=a", "settings={port: 1}"}, kind: ErrInvalid,
			want: []string{`input "settings"`, "settings", "host"}},
		{name: "object unknown key", args: []string{"name=a", "settings={host: h, colour: red}"}, kind: ErrInvalid,
			want: []string{`input "settings"`, `unknown key "colour"`}},
		{name: "bad yaml", args: []string{"name=a", "ports=[80"}, kind: ErrInvalid,
			want: []string{`input "ports"`, `"[80"`}},
		{name: "missing required", args: []string{"port=1"}, kind: ErrInvalid,
			want: []string{"svc1", `input "name" (str!) is required`}},
		{name: "empty required str", args: []string{"name="}, kind: ErrInvalid,
			want: []string{"svc1", `input "name" (str!)`, "required"}},
		{name: "empty required str in json", args: []string{`{"name": ""}`}, kind: ErrInvalid,
			want: []string{`input "name" (str!)`, "required"}},
		{name: "empty required default", args: []string{"name=a", "secret="}, kind: ErrInvalid,
			want: []string{`input "secret" (str!)`, "required"}},
		{name: "invalid name", resource: "Web_1", args: []string{"name=a"}, kind: ErrInvalid,
			want: []string{`resource name "Web_1"`}},
		{name: "name starting with dash", resource: "-web", args: []string{"name=a"}, kind: ErrInvalid,
			want: []string{`resource name "-web"`}},
		{name: "name with slash", resource: "a/b", args: []string{"name=a"}, kind: ErrInvalid,
			want: []string{`resource name "a/b"`}},
		{name: "empty name", resource: "-", args: []string{"name=a"}, kind: ErrInvalid,
			want: []string{`resource name`}},
		{name: "sensitive wrong type", args: []string{"name=a", "pin=hunter2"}, kind: ErrInvalid,
			want: []string{"svc1", `input "pin"`, "(int)", "hidden"}, secret: "hunter2"},
		{name: "sensitive wrong type in json", args: []string{`{"name": "a", "pin": "hunter2"}`}, kind: ErrInvalid,
			want: []string{`input "pin"`, "hidden"}, secret: "hunter2"},
		{name: "sensitive bad yaml", args: []string{"name=a", "pin=[hunter2"}, kind: ErrInvalid,
			want: []string{`input "pin"`, "hidden"}, secret: "hunter2"},
		{name: "sensitive list element", args: []string{"name=a", "pins=[1, hunter2]"}, kind: ErrInvalid,
			want: []string{`input "pins"`, "[1]", "hidden"}, secret: "hunter2"},
		{name: "sensitive value in malformed json", args: []string{`{"name": "a", "pin": "hunter2"`}, kind: ErrInvalid,
			want: []string{"JSON value", "line 1"}, secret: "hunter2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.resource
			if name == "" {
				name = "svc1"
			} else if name == "-" {
				name = ""
			}
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				_, err := create(cat, name, svc, tt.args...)
				wantErr(t, err, tt.kind, tt.want...)
				if err != nil && tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
					t.Errorf("error %q shows the sensitive value", err)
				}
			})
			// Nothing is written.
			view(t, db, func(cat *Catalog) {
				if rs, _ := cat.List(nil); len(rs) != 0 {
					t.Errorf("%d resources stored after a failed create", len(rs))
				}
			})
		})
	}
}

func TestCreateExistingNameFails(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	update(t, db, func(cat *Catalog) { mustCreate(t, cat, "a", noop, "value=first") })
	update(t, db, func(cat *Catalog) {
		_, err := create(cat, "a", noop, "value=second")
		wantErr(t, err, ErrExists, `"a"`)
	})
	view(t, db, func(cat *Catalog) {
		r, _ := cat.Get("a")
		if r.Inputs["value"] != "first" {
			t.Errorf("value = %v, want the first resource's", r.Inputs["value"])
		}
	})
}

func TestCreateTagsAndLocation(t *testing.T) {
	svc := svcBase(t)
	node := realBase(t, "node")
	for _, tt := range []struct {
		name     string
		base     *Base
		args     []string
		tags     tags.Set
		wantTags string
		location string
	}{
		{name: "base tags and resource", base: svc, args: []string{"name=a"}, wantTags: "resource=r1,role=svc,tier=back"},
		{name: "given tags add", base: svc, args: []string{"name=a"}, tags: tags.Set{"env": "prod", "canary": ""}, wantTags: "canary,env=prod,resource=r1,role=svc,tier=back"},
		{name: "given tags override the base's", base: svc, args: []string{"name=a"}, tags: tags.Set{"role": "web"}, wantTags: "resource=r1,role=web,tier=back"},
		{name: "resource tag may repeat the name", base: svc, args: []string{"name=a"}, tags: tags.Set{"resource": "r1"}, wantTags: "resource=r1,role=svc,tier=back"},
		{name: "node is its own location", base: node, args: []string{"ip=10.0.0.1"}, wantTags: "resource=r1,role=node", location: "r1"},
		{name: "node location given", base: node, args: []string{"ip=10.0.0.1", "location=elsewhere"}, wantTags: "resource=r1,role=node", location: "elsewhere"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				vals, err := ParseValues(tt.args)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cat.Create(CreateSpec{Name: "r1", Base: tt.base, Values: vals, Tags: tt.tags}, false); err != nil {
					t.Fatal(err)
				}
			})
			view(t, db, func(cat *Catalog) {
				r, err := cat.Get("r1")
				if err != nil {
					t.Fatal(err)
				}
				if got := r.Tags.String(); got != tt.wantTags {
					t.Errorf("tags = %s, want %s", got, tt.wantTags)
				}
				if got := r.Inputs[LocationInput]; got != tt.location {
					t.Errorf("location = %q, want %q", got, tt.location)
				}
			})
		})
	}
}

func TestCreateSkipRequiredDefersTheCheck(t *testing.T) {
	db := openStore(t)
	svc := svcBase(t)
	update(t, db, func(cat *Catalog) {
		if _, err := cat.Create(CreateSpec{Name: "a", Base: svc}, true); err != nil {
			t.Fatalf("create with skipRequired: %v", err)
		}
		wantErr(t, cat.CheckRequired("a"), ErrInvalid, `a: input "name" (str!) is required`)
	})
}

func TestUpdate(t *testing.T) {
	svc := svcBase(t)
	node := realBase(t, "node")
	three := 3
	minute := Duration(time.Minute)
	for _, tt := range []struct {
		name      string
		args      []string
		meta      Meta
		kind      error
		wantErr   []string
		want      map[string]any
		wantRetry int
		wantDelay string
	}{
		{name: "sets an input", args: []string{"port=1"}, want: map[string]any{"port": int64(1), "name": "a", "debug": true}, wantRetry: 1},
		{name: "several inputs", args: []string{`{"port": 2, "backends": ["x"]}`, "name=b"}, want: map[string]any{"port": int64(2), "backends": []any{"x"}, "name": "b"}, wantRetry: 1},
		{name: "merges meta", meta: Meta{Retry: &three}, want: map[string]any{"port": int64(3306)}, wantRetry: 3},
		{name: "adds meta", meta: Meta{Delay: &minute}, wantRetry: 1, wantDelay: "1m0s"},
		{name: "connected input", args: []string{"ip=10.9.9.9"}, kind: ErrConnected, wantErr: []string{`input "ip" follows n1.ip`, "solar disconnect n1 a"}},
		{name: "connected input among others", args: []string{"port=1", "location=x"}, kind: ErrConnected, wantErr: []string{`input "location" follows n1.location`}},
		{name: "wrong type", args: []string{"port=x"}, kind: ErrInvalid, wantErr: []string{`a: input "port" (int)`, `"x"`}},
		{name: "unknown input", args: []string{"colour=red"}, kind: ErrInvalid, wantErr: []string{`unknown input "colour"`}},
		{name: "empties a required input", args: []string{"name="}, kind: ErrInvalid, wantErr: []string{`input "name" (str!)`}},
		{name: "sensitive", args: []string{"pin=hunter2"}, kind: ErrInvalid, wantErr: []string{`input "pin"`, "hidden"}},
		{name: "bad meta", meta: Meta{Sema: []string{"db"}}, kind: ErrInvalid, wantErr: []string{"a:", `sema "db"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				mustCreate(t, cat, "a", svc, "name=a", "debug=true")
				mustCreate(t, cat, "n1", node, "ip=10.0.0.1")
				if _, err := cat.Connect("n1", "a", nil); err != nil {
					t.Fatal(err)
				}
			})
			err := db.Update(func(tx *store.Tx) error {
				vals, err := ParseValues(tt.args)
				if err != nil {
					return err
				}
				_, err = NewCatalog(tx).Update("a", vals, tt.meta)
				return err
			})
			if tt.wantErr != nil {
				wantErr(t, err, tt.kind, tt.wantErr...)
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q shows the sensitive value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			view(t, db, func(cat *Catalog) {
				r, err := cat.Get("a")
				if err != nil {
					t.Fatal(err)
				}
				checkInputs(t, r.Inputs, tt.want)
				m := r.EffectiveMeta()
				if *m.Retry != tt.wantRetry {
					t.Errorf("retry = %d, want %d", *m.Retry, tt.wantRetry)
				}
				if time.Duration(*m.Timeout) != 10*time.Second {
					t.Errorf("timeout = %v, want the base's 10s", m.Timeout)
				}
				delay := ""
				if m.Delay != nil {
					delay = m.Delay.String()
				}
				if delay != tt.wantDelay {
					t.Errorf("delay = %q, want %q", delay, tt.wantDelay)
				}
				eff, err := cat.Effective("a")
				if err != nil {
					t.Fatal(err)
				}
				if eff["ip"] != "10.0.0.1" || eff[LocationInput] != "n1" {
					t.Errorf("effective ip, location = %v, %v; want the node's", eff["ip"], eff[LocationInput])
				}
			})
		})
	}
}

func TestUpdateUnknownResource(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		_, err := cat.Update("ghost", Values{}, Meta{})
		wantErr(t, err, ErrNotFound, `"ghost"`)
	})
}

func TestDecodedResourceRoundTrip(t *testing.T) {
	db := openStore(t)
	svc := svcBase(t)
	var created *Resource
	update(t, db, func(cat *Catalog) {
		created = mustCreate(t, cat, "a", svc, "name=a", "ratio=2", "ports=[1]", "settings={host: h, port: 8}")
	})
	view(t, db, func(cat *Catalog) {
		got, err := cat.Get("a")
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(created)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Errorf("stored resource differs:\n%s\n%s", a, b)
		}
		if diff := cmp.Diff(created.Inputs, got.Inputs); diff != "" {
			t.Errorf("inputs after the store (-want +got):\n%s", diff)
		}
	})
}
