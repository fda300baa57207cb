package resources

import (
	"fmt"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
)

const computedWebMeta = `
inputs:
  ip:       {schema: str!}
  port:     {schema: int, value: 80}
  endpoint: {schema: str, computable: 'ip + ":" + string(port)'}
  url:      {schema: str, computable: '"http://" + endpoint + "/"'}
`

func TestComputableBaseErrors(t *testing.T) {
	big := "1" + strings.Repeat(" + 1", MaxComputeNodes)
	for _, c := range []struct {
		name, inputs string
		parts        []string
	}{
		{"syntax", `{ip: {schema: str}, e: {schema: str, computable: 'ip + ) ":"'}}`,
			[]string{`input "e": computable: line 1, column 6: unexpected token`}},
		{"second line", "{ip: {schema: str}, e: {schema: str, computable: \"ip +\\n  )\"}}",
			[]string{`input "e": computable: line 2, column 3:`}},
		{"types", `{n: {schema: int}, s: {schema: str}, e: {schema: str, computable: 's + n'}}`,
			[]string{`input "e": computable: line 1, column 3: invalid operation: + (mismatched types string and int64)`}},
		{"unknown name", `{e: {schema: str, computable: 'nope'}}`,
			[]string{`input "e": computable: line 1, column 1: unknown name nope`}},
		{"reads itself", `{e: {schema: str, computable: 'e'}}`,
			[]string{`input "e": computable:`, "unknown name e"}},
		{"reads a later computable", `{a: {schema: str, computable: 'b'}, b: {schema: str, computable: '"x"'}}`,
			[]string{`input "a": computable:`, "unknown name b"}},
		{"now is disabled", `{e: {schema: str, computable: 'string(now())'}}`,
			[]string{`input "e": computable:`, "now"}},
		{"too big", `{e: {schema: int, computable: '` + big + `'}}`,
			[]string{`input "e": computable:`, "exceeds maximum allowed nodes"}},
		{"value too", `{e: {schema: str, value: x, computable: '"y"'}}`,
			[]string{`input "e": a computable input has no value`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadBase(writeBase(t, "b", "inputs: "+c.inputs+"\n"))
			wantErr(t, err, ErrBase, c.parts...)
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestComputableCompiledOncePerBase(t *testing.T) {
	dir := writeBase(t, "web", computedWebMeta)
	a, b := loadBase(t, dir), loadBase(t, dir)
	pa, err := a.program(2)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.program(2)
	if err != nil {
		t.Fatal(err)
	}
	if pa != pb {
		t.Error("the same base compiled its expression twice")
	}
	if strings.Join(pa.reads, ",") != "ip,port" {
		t.Errorf("reads = %v, want [ip port]", pa.reads)
	}
}

func TestComputableEvaluatesWithEffectiveValues(t *testing.T) {
	db := openStore(t)
	web := loadBase(t, writeBase(t, "web", computedWebMeta))
	node := realBase(t, "node")
	want := func(name, input, val string) {
		t.Helper()
		view(t, db, func(cat *Catalog) {
			eff, err := cat.Effective(name)
			if err != nil {
				t.Fatal(err)
			}
			if eff[input] != val {
				t.Errorf("%s.%s = %v, want %s", name, input, eff[input], val)
			}
		})
	}
	update(t, db, func(cat *Catalog) { mustCreate(t, cat, "w", web, "ip=10.0.0.1") })
	want("w", "endpoint", "10.0.0.1:80")
	want("w", "url", "http://10.0.0.1:80/") // an earlier computable is seen
	update(t, db, func(cat *Catalog) {
		if _, err := cat.Update("w", mustValues(t, "port=8080"), Meta{}); err != nil {
			t.Fatal(err)
		}
	})
	want("w", "endpoint", "10.0.0.1:8080")
	// What a write computed is kept, so that a run reads it back rather
	// than evaluating again.
	if err := db.View(func(tx *store.Tx) error {
		if _, err := tx.Get(store.Effective, "w"); err != nil {
			t.Errorf("computed values of w not kept: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "n", node, "ip=192.0.2.7")
		if _, err := cat.Connect("n", "w", nil); err != nil {
			t.Fatal(err)
		}
	})
	want("w", "endpoint", "192.0.2.7:8080")
	update(t, db, func(cat *Catalog) {
		if _, err := cat.Update("n", mustValues(t, "ip=192.0.2.8"), Meta{}); err != nil {
			t.Fatal(err)
		}
	})
	want("w", "url", "http://192.0.2.8:8080/")
	update(t, db, func(cat *Catalog) {
		if _, err := cat.Disconnect("n", "w"); err != nil {
			t.Fatal(err)
		}
	})
	want("w", "endpoint", "10.0.0.1:8080")
}

func mustValues(t *testing.T, args ...string) Values {
	t.Helper()
	v, err := ParseValues(args)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestComputableRefusals(t *testing.T) {
	db := openStore(t)
	web := loadBase(t, writeBase(t, "web", computedWebMeta))
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "w", web, "ip=10.0.0.1")
		mustCreate(t, cat, "v", web, "ip=10.0.0.2")
	})
	err := db.Update(func(tx *store.Tx) error {
		cat := NewCatalog(tx)
		_, err := create(cat, "x", web, "ip=1", "endpoint=a")
		wantErr(t, err, ErrInvalid, `x: input "endpoint" is computed by base web`, "cannot be set")
		_, err = cat.Update("w", mustValues(t, "url=b"), Meta{})
		wantErr(t, err, ErrInvalid, `w: input "url" is computed`)
		_, err = cat.Connect("v", "w", []Mapping{{From: "endpoint", To: "endpoint"}})
		wantErr(t, err, ErrInvalid, "w.endpoint is computed by its base", "cannot follow a connection")
		// Same-named inputs connect without the computed ones.
		conn, err := cat.Connect("v", "w", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range conn.Mappings {
			if m.To == "endpoint" || m.To == "url" {
				t.Errorf("default mapping %s into a computed input", m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestComputableEvaluationErrors(t *testing.T) {
	for _, c := range []struct {
		name, inputs string
		args         []string
		parts        []string
	}{
		{"schema mismatch", `{s: {schema: str, value: x}, n: {schema: int, computable: 's + "!"'}}`, nil,
			[]string{`r: input "n" (int): computed value: want int, got "x!" (string)`}},
		{"runtime error", `{a: {schema: int, value: 1}, b: {schema: int, value: 0}, q: {schema: int, computable: 'a % b'}}`, nil,
			[]string{`r: input "q": computable: line 1, column 3:`, "integer divide by zero"}},
		{"memory budget", `{n: {schema: int}, q: {schema: int, computable: 'len(map(1..n, # * 2))'}}`, []string{"n=100000000"},
			[]string{`r: input "q": computable:`, "memory budget exceeded"}},
		{"nested predicates", `{l: {schema: "[int]"}, q: {schema: int, computable: 'sum(map(l, sum(map(l, sum(map(l, #))))))'}}`,
			[]string{"l=[" + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + "]"},
			[]string{`r: input "q": computable:`, "cost limit exceeded: more than 100000 predicate runs"}},
		{"predicates within the limit", `{l: {schema: "[int]"}, q: {schema: int, computable: 'string(sum(map(l, sum(map(l, #)))))'}}`,
			[]string{"l=[" + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + "]"},
			[]string{`r: input "q" (int): computed value: want int, got "10000"`}},
		{"secret in the message", `{p: {schema: str, sensitive: true, value: hunter2}, q: {schema: int, computable: 'int(p)'}}`, nil,
			[]string{`r: input "q": computable: evaluation failed (message hidden`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openStore(t)
			b := loadBase(t, writeBase(t, "b", "inputs: "+c.inputs+"\n"))
			err := db.Update(func(tx *store.Tx) error {
				_, err := create(NewCatalog(tx), "r", b, c.args...)
				return err
			})
			wantErr(t, err, ErrInvalid, c.parts...)
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the secret: %q", err)
			}
			view(t, db, func(cat *Catalog) {
				if cat.Exists("r") {
					t.Error("refused resource stored")
				}
			})
		})
	}
}

func TestComputableSensitivity(t *testing.T) {
	db := openStore(t)
	b := loadBase(t, writeBase(t, "b", `inputs:
  p:   {schema: str, sensitive: true}
  dsn: {schema: str, computable: '"db://u:" + p + "@h"'}
  n:   {schema: int, value: 1}
  m:   {schema: int, computable: 'n + 1'}
`))
	update(t, db, func(cat *Catalog) { mustCreate(t, cat, "r", b, "p=s3") })
	view(t, db, func(cat *Catalog) {
		sens, err := cat.SensitiveInputs("r")
		if err != nil {
			t.Fatal(err)
		}
		if !sens["dsn"] || sens["m"] {
			t.Errorf("sensitive = %v, want dsn (reads p) and not m", sens)
		}
	})
}

func TestComputeForAPlan(t *testing.T) {
	web := loadBase(t, writeBase(t, "web", computedWebMeta))
	r := &Resource{Name: "w", Base: *web}
	vals := map[string]any{"ip": "10.0.0.1", "port": int64(81)}
	if err := Compute(r, vals, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if vals["url"] != "http://10.0.0.1:81/" {
		t.Errorf("url = %v", vals["url"])
	}
	// An emitter's value the plan does not know yet gives no value, not
	// a refused plan.
	vals = map[string]any{"ip": nil, "port": int64(81)}
	if err := Compute(r, vals, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if vals["endpoint"] != nil || vals["url"] != nil {
		t.Errorf("endpoint, url = %v, %v; want nil", vals["endpoint"], vals["url"])
	}
}

// TestComputableDocExamples: the examples of docs/bases.md compute what
// they say.
func TestComputableDocExamples(t *testing.T) {
	db := openStore(t)
	b := loadBase(t, writeBase(t, "b", `inputs:
  ip:       {schema: str!}
  port:     {schema: int, value: 443}
  backends: {schema: "[str]", value: ["a:1", "b:2"]}
  endpoint: {schema: str, computable: 'ip + ":" + string(port)'}
  url:      {schema: str,   computable: '"http://" + endpoint + "/"'}
  port2:    {schema: int,   computable: 'port + 1'}
  hosts:    {schema: "[str]", computable: 'map(backends, split(#, ":")[0])'}
  primary:  {schema: str,   computable: 'len(backends) > 0 ? backends[0] : "none"'}
  tls:      {schema: bool,  computable: 'port == 443 || hasPrefix(url, "https:")'}
  conf:     {schema: "{host: str, port: int}", computable: '{host: ip, port: port}'}
`))
	update(t, db, func(cat *Catalog) { mustCreate(t, cat, "r", b, "ip=h") })
	view(t, db, func(cat *Catalog) {
		eff, err := cat.Effective("r")
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintln(eff["url"], eff["port2"], eff["hosts"], eff["primary"], eff["tls"], eff["conf"])
		if want := "http://h:443/ 444 [a b] a:1 true map[host:h port:443]\n"; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
}
