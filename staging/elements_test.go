package staging

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
)

func TestElementDiff(t *testing.T) {
	servers := resources.InputDef{Name: "servers", Schema: schema.MustParse("[{ip: str, port: int}]")}
	r := &resources.Resource{Name: "lb", Base: resources.Base{Inputs: []resources.InputDef{servers}}}
	field := func(emitter, key, tag string) resources.Connection {
		return resources.Connection{Emitter: emitter, Mappings: []resources.Mapping{{From: key, To: "servers", Key: key, Tag: tag}}}
	}
	w1, w2, n3 := field("w1", "ip", ""), field("w2", "ip", ""), field("n3", "ip", "web")
	e := func(ip string) map[string]any { return map[string]any{"ip": ip} }
	for _, tt := range []struct {
		name           string
		old, cur       any
		oldC, curC     []resources.Connection
		want           []Change
		wantWholeInput bool
	}{
		{name: "first emitter", old: []any{}, cur: []any{e("1")}, curC: []resources.Connection{w1},
			want: []Change{{Op: OpAdd, Key: "servers[w1]", New: e("1")}}},
		{name: "from unset", cur: []any{e("1")}, curC: []resources.Connection{w1},
			want: []Change{{Op: OpAdd, Key: "servers[w1]", New: e("1")}}},
		{name: "one element changed", old: []any{e("1"), e("2")}, cur: []any{e("1"), e("9")},
			oldC: []resources.Connection{w1, w2}, curC: []resources.Connection{w1, w2},
			want: []Change{{Op: OpChange, Key: "servers[w2]", Old: e("2"), New: e("9")}}},
		{name: "one disconnected, a tag added", old: []any{e("1"), e("2")}, cur: []any{e("2"), e("3")},
			oldC: []resources.Connection{w1, w2}, curC: []resources.Connection{w2, n3},
			want: []Change{{Op: OpAdd, Key: "servers[web]", New: e("3")}, {Op: OpRemove, Key: "servers[w1]", Old: e("1")}}},
		{name: "elements moved", old: []any{e("1"), e("2")}, cur: []any{e("2"), e("1")},
			oldC: []resources.Connection{w1, w2}, curC: []resources.Connection{w2, w1}, wantWholeInput: true},
		{name: "a list of its own before", old: []any{e("own")}, cur: []any{e("1")},
			curC: []resources.Connection{w1}, wantWholeInput: true},
		{name: "not fed field by field", old: []any{e("1")}, cur: []any{e("2")}, wantWholeInput: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := elementDiff(r, servers, false, tt.old, tt.cur, tt.oldC, tt.curC)
			if ok == tt.wantWholeInput {
				t.Fatalf("elementDiff ok = %v, want %v", ok, !tt.wantWholeInput)
			}
			if d := cmp.Diff(tt.want, got); ok && d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
		})
	}
}

// An element's change names its list: the emitters feeding that list are
// among the causes of the receiver's entry.
func TestCausesOfAnElementChange(t *testing.T) {
	conns := []resources.Connection{
		{Emitter: "w1", Mappings: []resources.Mapping{{From: "ip", To: "servers", Key: "ip"}}},
		{Emitter: "w2", Mappings: []resources.Mapping{{From: "ip", To: "name"}}},
	}
	d := []Change{{Op: OpChange, Key: "servers[w1]", Old: map[string]any{"ip": "1"}, New: map[string]any{"ip": "2"}}}
	got := causes(conns, d, map[string]bool{"w1": true, "w2": true})
	if d := cmp.Diff([]string{"w1"}, got); d != "" {
		t.Errorf("causes (-want +got):\n%s", d)
	}
}
