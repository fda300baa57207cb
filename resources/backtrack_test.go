package resources

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const btMeta = `handler: noop
inputs:
  ip:     {schema: str, value: ""}
  port:   {schema: int, value: 80}
  pass:   {schema: str, value: "", sensitive: true}
  url:    {schema: str, value: ""}
`

// trace renders an origin tree as "res.input source [key|element] (children)"
// lines, depth marked by dots, for comparing shapes.
func trace(o Origin, depth string, out *[]string) {
	s := depth + o.Resource + "." + o.Input + " " + o.Source
	if o.Key != "" {
		s += " key=" + o.Key
	}
	if o.Element != "" {
		s += " element=" + o.Element
	}
	if o.Repeated {
		s += " repeated"
	}
	*out = append(*out, s)
	for _, f := range o.From {
		trace(f, depth+".", out)
	}
}

func TestBacktrack(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		plain := loadBase(t, writeBase(t, "bt", btMeta))
		computed := loadBase(t, writeBase(t, "btc", btMeta))
		// The base of a computed input, as meta.yaml's computable: gives it.
		d, _ := computed.Input("url")
		d.Computable = `"http://" + ip + ":" + string(port) + "/" + "port"`
		mustCreate(t, cat, "n", plain, "ip=10.0.0.1", "pass=hunter2")
		mustCreate(t, cat, "a", plain)
		mustCreate(t, cat, "w", computed)
		for _, c := range []struct{ e, r, m string }{
			{"n", "a", "ip->ip,pass->pass"}, {"a", "w", "ip->ip"}, {"n", "w", "port->port"},
		} {
			ms, err := ParseMappings([]string{c.m})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cat.Connect(c.e, c.r, ms); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name   string
			res    string
			inputs []string
			want   []string
		}{
			{"a chain to the owner", "w", []string{"ip"}, []string{
				"w.ip connected", ".a.ip connected", "..n.ip own"}},
			{"a default", "n", []string{"port"}, []string{"n.port default"}},
			{"unset is told from the default", "a", []string{"url"}, []string{"a.url default"}},
			// Only the inputs the expression names outside strings are
			// traced (names after a dot: TestExprInputs).
			{"computed from its inputs, each traced", "w", []string{"url"}, []string{
				"w.url computed", ".w.ip connected", "..a.ip connected", "...n.ip own", ".w.port connected", "..n.port default"}},
			{"a diamond is traced once", "w", []string{"ip", "url"}, []string{
				"w.ip connected", ".a.ip connected", "..n.ip own",
				"w.url computed", ".w.ip connected", "..a.ip connected", "...n.ip own", ".w.port connected", "..n.port default"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := cat.Backtrack(tt.res, tt.inputs...)
				if err != nil {
					t.Fatal(err)
				}
				var lines []string
				for _, o := range got {
					trace(o, "", &lines)
				}
				if diff := cmp.Diff(tt.want, lines); diff != "" {
					t.Errorf("Backtrack(%s, %v) (-want +got):\n%s", tt.res, tt.inputs, diff)
				}
			})
		}
		t.Run("sensitive and value", func(t *testing.T) {
			got, err := cat.Backtrack("a", "pass")
			if err != nil {
				t.Fatal(err)
			}
			if o := got[0]; !o.Sensitive || !o.From[0].Sensitive || o.From[0].Value != "hunter2" {
				t.Errorf("Backtrack(a, pass) = %+v, want sensitive with the value for the caller to mask", o)
			}
		})
		t.Run("every input in the base's order", func(t *testing.T) {
			got, err := cat.Backtrack("n")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range got {
				names = append(names, o.Input)
			}
			if diff := cmp.Diff([]string{"ip", "port", "pass", "url", LocationInput}, names); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
		})
		t.Run("a repeat inside one tree", func(t *testing.T) {
			r, _ := cat.Get("w")
			cp := *r
			cp.Base.Inputs = append([]InputDef(nil), r.Base.Inputs...)
			cp.Base.reindex()
			d, _ := cp.Base.Input("url")
			d.Computable = "ip + pass"
			if err := cat.Put(&cp); err != nil {
				t.Fatal(err)
			}
			ms, _ := ParseMappings([]string{"ip->pass"})
			if _, err := cat.Connect("n", "w", ms); err != nil {
				t.Fatal(err)
			}
			got, err := cat.Backtrack("w", "url")
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			trace(got[0], "", &lines)
			want := []string{"w.url computed", ".w.ip connected", "..a.ip connected", "...n.ip own",
				".w.pass connected", "..n.ip own repeated"}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
		for _, bad := range [][]string{{"nosuch"}, {"n", "nosuch"}} {
			if _, err := cat.Backtrack(bad[0], bad[1:]...); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrInvalid) {
				t.Errorf("Backtrack(%v) = %v, want ErrNotFound or ErrInvalid", bad, err)
			}
		}
	})
}

func TestBacktrackElements(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		src := loadBase(t, writeBase(t, "src", "handler: noop\ninputs:\n  url: {schema: str, value: u}\n"))
		dst := loadBase(t, writeBase(t, "dst", "handler: noop\ninputs:\n  list: {schema: \"[str]\", value: []}\n  obj: {schema: \"{host: str}\", value: {host: h}}\n"))
		mustCreate(t, cat, "s1", src)
		mustCreate(t, cat, "s2", src)
		mustCreate(t, cat, "d", dst)
		for _, c := range []struct{ e, m string }{{"s1", "url->list,url->obj:host"}, {"s2", "url->list"}} {
			ms, err := ParseMappings([]string{c.m})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cat.Connect(c.e, "d", ms); err != nil {
				t.Fatal(err)
			}
		}
		got, err := cat.Backtrack("d")
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, o := range got {
			trace(o, "", &lines)
		}
		want := []string{"d.list connected", ".s1.url default element=s1", ".s2.url default element=s2",
			"d.obj connected", ".s1.url default key=host", "d.location default"}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestExprInputs(t *testing.T) {
	inputs := []string{"ip", "port", "name", "e"}
	tests := []struct {
		expr string
		want []string
	}{
		{`ip + ":" + string(port)`, []string{"ip", "port"}},
		{`"ip" + 'port' + ` + "`name`", []string{}},
		{`"a\"ip" + port`, []string{"port"}},
		{`x.ip + x . port + name`, []string{"name"}},
		{`1e3 + 0x1e + e`, []string{"e"}},
		{`port + port + ip`, []string{"port", "ip"}},
		{`ipv4 + "unclosed ip`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ExprInputs(tt.expr, inputs)); diff != "" {
				t.Errorf("ExprInputs(%q) (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

// A field of an element of a list of objects (in:key|tag) is traced to
// its emitter, naming the element's tag and the field.
func TestBacktrackTaggedElements(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		src := loadBase(t, writeBase(t, "web", "handler: noop\ninputs:\n  ip: {schema: str, value: 10.0.0.1}\n  port: {schema: int, value: 80}\n"))
		dst := loadBase(t, writeBase(t, "lb", "handler: noop\ninputs:\n  servers: {schema: \"[{ip: str, port: int}]\", value: []}\n"))
		mustCreate(t, cat, "w1", src)
		mustCreate(t, cat, "w2", src)
		mustCreate(t, cat, "lb", dst)
		for _, c := range []struct{ e, m string }{{"w1", "ip->servers:ip,port->servers:port"}, {"w2", "ip->servers:ip|front"}} {
			ms, err := ParseMappings([]string{c.m})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cat.Connect(c.e, "lb", ms); err != nil {
				t.Fatal(err)
			}
		}
		got, err := cat.Backtrack("lb", "servers")
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, o := range got {
			trace(o, "", &lines)
		}
		want := []string{"lb.servers connected", ".w1.ip default key=ip element=w1", ".w1.port default key=port element=w1", ".w2.ip default key=ip element=front"}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}
