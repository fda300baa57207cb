package resources

import (
	"errors"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
)

const elemMeta = `handler: noop
inputs:
  ip:       {schema: str, value: ""}
  port:     {schema: int}
  name:     {schema: str}
  list:     {schema: "[str]", value: []}
  settings: {schema: "{host: str}"}
  servers:  {schema: "[{ip: str, port: float}]", value: []}
`

func mkElem(name string, args ...string) step {
	return step{desc: "create " + name, run: func(t *testing.T, cat *Catalog) error {
		_, err := create(cat, name, loadBase(t, writeBase(t, "elem", elemMeta)), args...)
		return err
	}}
}

func obj(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestListOfHashes(t *testing.T) {
	base := []step{mkElem("w1", "ip=10.0.0.1", "port=80"), mkElem("w2", "ip=10.0.0.2"), mkElem("lb")}
	both := "ip->servers:ip,port->servers:port"
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{name: "one element per emitter, fields merged, int widened to float", steps: []step{
			conn("w1", "lb", both), conn("w2", "lb", both),
			want("lb", "servers", []any{obj("ip", "10.0.0.1", "port", 80.0), obj("ip", "10.0.0.2")}),
		}},
		{name: "an emitter's change reaches its element only", steps: []step{
			conn("w1", "lb", both), conn("w2", "lb", both), set("w2", "port=8080"),
			want("lb", "servers", []any{obj("ip", "10.0.0.1", "port", 80.0), obj("ip", "10.0.0.2", "port", 8080.0)}),
			set("w1", "port="),
			want("lb", "servers", []any{obj("ip", "10.0.0.1"), obj("ip", "10.0.0.2", "port", 8080.0)}),
		}},
		{name: "disconnecting removes that emitter's element only", steps: []step{
			conn("w1", "lb", both), conn("w2", "lb", both), disc("w1", "lb"),
			want("lb", "servers", []any{obj("ip", "10.0.0.2")}),
			disc("w2", "lb"), want("lb", "servers", []any{}),
		}},
		{name: "a tag gathers two emitters into one element", steps: []step{
			conn("w1", "lb", "port->servers:port|web"), conn("w2", "lb", "ip->servers:ip|web"),
			want("lb", "servers", []any{obj("ip", "10.0.0.2", "port", 80.0)}),
			disc("w1", "lb"), want("lb", "servers", []any{obj("ip", "10.0.0.2")}),
		}},
		{name: "one emitter, two tags, two elements", steps: []step{
			conn("w1", "lb", "ip->servers:ip|a,ip->servers:ip|b"),
			want("lb", "servers", []any{obj("ip", "10.0.0.1"), obj("ip", "10.0.0.1")}),
		}},
		{name: "an emitter with no value still has its element, in order", steps: []step{
			conn("w2", "lb", "port->servers:port"), conn("w1", "lb", both),
			want("lb", "servers", []any{obj(), obj("ip", "10.0.0.1", "port", 80.0)}),
		}},
		{name: "connecting again replaces the field's mapping", steps: []step{
			conn("w1", "lb", "ip->servers:ip"), conn("w1", "lb", "name->servers:ip"),
			want("lb", "servers", []any{obj()}),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, append(append([]step(nil), base...), tt.steps...))
		})
	}
}

func TestListOfHashesRefused(t *testing.T) {
	base := []step{mkElem("w1", "ip=10.0.0.1", "port=80"), mkElem("w2", "ip=10.0.0.2"), mkElem("lb")}
	for _, tt := range []struct {
		name    string
		steps   []step
		mapping string
		want    string
	}{
		{name: "into a non-list input", mapping: "ip->name:ip", want: "mapping ip->name:ip: lb.name is str, not an object or a list of objects"},
		{name: "into a list of str", mapping: "ip->list:ip", want: "mapping ip->list:ip: lb.list is [str], a list whose elements are not objects"},
		{name: "a tag into an object", mapping: "ip->settings:host|x", want: "lb.settings is {host: str}, not a list of objects; only an element of a list takes a |tag"},
		{name: "a field the element lacks", mapping: "ip->servers:host", want: `lb.servers ([{ip: str, port: float}]) has no key "host"`},
		{name: "a field of the wrong type", mapping: "ip->servers:port", want: "w1.ip is str but lb.servers:port wants float"},
		{name: "a field twice from one emitter", mapping: "ip->servers:ip,name->servers:ip", want: `field "ip" of element "w1" of lb.servers is mapped twice from w1`},
		{name: "a field another emitter feeds", steps: []step{conn("w2", "lb", "ip->servers:ip|web")}, mapping: "ip->servers:ip|web",
			want: `field "ip" of element "web" of lb.servers already follows w2`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			for _, s := range append(append([]step(nil), base...), tt.steps...) {
				if err := db.Update(func(tx *store.Tx) error { return s.run(t, NewCatalog(tx)) }); err != nil {
					t.Fatalf("%s: %v", s.desc, err)
				}
			}
			var before []Connection
			_ = db.View(func(tx *store.Tx) error {
				before, _ = NewCatalog(tx).Incoming("lb")
				return nil
			})
			err := db.Update(func(tx *store.Tx) error { return conn("w1", "lb", tt.mapping).run(t, NewCatalog(tx)) })
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("connect w1 lb %s: %v, want an input error mentioning %q", tt.mapping, err, tt.want)
			}
			_ = db.View(func(tx *store.Tx) error {
				after, _ := NewCatalog(tx).Incoming("lb")
				if len(after) != len(before) {
					t.Errorf("connections into lb: %d before, %d after a refused connect", len(before), len(after))
				}
				return nil
			})
		})
	}
}

func TestParseElementMappings(t *testing.T) {
	for _, tt := range []struct{ arg, want, err string }{
		{arg: "ip->servers:ip|web", want: "ip->servers:ip|web"},
		{arg: `{"ip": "servers:ip|web"}`, want: "ip->servers:ip|web"},
		{arg: "ip->servers|web", err: "a |tag follows a key of a list of objects"},
		{arg: "ip->servers:ip|", err: "want emitter_input->receiver_input:key|tag"},
		{arg: "ip->servers:|web", err: "want emitter_input->receiver_input:key|tag"},
		{arg: "ip->servers:ip|a|b", err: "want emitter_input->receiver_input:key|tag"},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			ms, err := ParseMappings([]string{tt.arg})
			if tt.err != "" {
				wantErr(t, err, ErrInvalid, tt.err)
				return
			}
			if err != nil || len(ms) != 1 || ms[0].String() != tt.want {
				t.Fatalf("ParseMappings(%q) = %v, %v; want %s", tt.arg, ms, err, tt.want)
			}
		})
	}
}

func TestElementTags(t *testing.T) {
	r := &Resource{Name: "lb", Base: *loadBase(t, writeBase(t, "elem", elemMeta))}
	conns := []Connection{
		{Emitter: "w1", Mappings: []Mapping{{From: "ip", To: "servers", Key: "ip"}, {From: "port", To: "servers", Key: "port"}}},
		{Emitter: "w2", Mappings: []Mapping{{From: "ip", To: "servers", Key: "ip", Tag: "web"}}},
		{Emitter: "w3", Mappings: []Mapping{{From: "port", To: "servers", Key: "port", Tag: "web"}, {From: "ip", To: "name"}}},
	}
	tags, ok := ElementTags(r, conns, "servers")
	if !ok || strings.Join(tags, ",") != "w1,web" {
		t.Errorf("ElementTags = %q, %v; want [w1 web], true", tags, ok)
	}
	if tags, ok := ElementTags(r, conns, "list"); !ok || tags != nil {
		t.Errorf("ElementTags of an input no connection feeds = %q, %v; want nil, true", tags, ok)
	}
	conns = append(conns, Connection{Emitter: "w4", Mappings: []Mapping{{From: "settings", To: "servers"}}})
	if _, ok := ElementTags(r, conns, "servers"); ok {
		t.Error("ElementTags of a list also fed whole elements: ok, want false")
	}
}
