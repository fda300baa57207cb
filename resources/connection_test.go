package resources

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/store"
)

const valMeta = `handler: noop
inputs:
  x:        {schema: str, value: ""}
  y:        {schema: str, value: ""}
  n:        {schema: int, value: 0}
  f:        {schema: float, value: 0.5}
  list:     {schema: "[str]", value: []}
  nums:     {schema: "[int]", value: []}
  settings: {schema: "{host: str!, port: int}", value: {host: h0, port: 1}}
`

// step is one operation of a propagation scenario, run in its own
// transaction so that every expectation is read back from the store.
type step struct {
	desc string
	run  func(t *testing.T, cat *Catalog) error
	// wantErr, when set, is a part of the error run must return.
	wantErr string
}

func mk(name string, args ...string) step {
	return step{desc: "create " + name, run: func(t *testing.T, cat *Catalog) error {
		_, err := create(cat, name, valBaseFor(t), args...)
		return err
	}}
}

func conn(e, r string, mapping ...string) step {
	return step{desc: fmt.Sprintf("connect %s %s %s", e, r, mapping), run: func(t *testing.T, cat *Catalog) error {
		ms, err := ParseMappings(mapping)
		if err != nil {
			return err
		}
		_, err = cat.Connect(e, r, ms)
		return err
	}}
}

func disc(e, r string) step {
	return step{desc: "disconnect " + e + " " + r, run: func(t *testing.T, cat *Catalog) error {
		_, err := cat.Disconnect(e, r)
		return err
	}}
}

func set(name string, args ...string) step {
	return step{desc: fmt.Sprintf("update %s %s", name, args), run: func(t *testing.T, cat *Catalog) error {
		vals, err := ParseValues(args)
		if err != nil {
			return err
		}
		_, err = cat.Update(name, vals, Meta{})
		return err
	}}
}

func del(name string) step {
	return step{desc: "delete " + name, run: func(t *testing.T, cat *Catalog) error {
		return cat.Delete(name)
	}}
}

// want checks the effective value of name.input.
func want(name, input string, v any) step {
	return step{desc: fmt.Sprintf("want %s.%s = %v", name, input, v), run: func(t *testing.T, cat *Catalog) error {
		eff, err := cat.Effective(name)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(v, eff[input]); diff != "" {
			t.Errorf("%s.%s (-want +got):\n%s", name, input, diff)
		}
		return nil
	}}
}

// fails expects s to fail with an error mentioning part.
func fails(s step, part string) step {
	s.wantErr = part
	s.desc += " fails"
	return s
}

// valBaseFor loads the "val" base, whose inputs cover every kind of flow.
func valBaseFor(t testing.TB) *Base {
	t.Helper()
	return loadBase(t, writeBase(t, "val", valMeta))
}

func runSteps(t *testing.T, steps []step) {
	db := openStore(t)
	for i, s := range steps {
		err := db.Update(func(tx *store.Tx) error {
			return s.run(t, NewCatalog(tx))
		})
		switch {
		case s.wantErr == "" && err != nil:
			t.Fatalf("step %d (%s): %v", i+1, s.desc, err)
		case s.wantErr != "" && err == nil:
			t.Fatalf("step %d (%s): no error, want one mentioning %q", i+1, s.desc, s.wantErr)
		case s.wantErr != "" && !strings.Contains(err.Error(), s.wantErr):
			t.Fatalf("step %d (%s): error %q does not mention %q", i+1, s.desc, err, s.wantErr)
		}
	}
}

func TestPropagation(t *testing.T) {
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{name: "chain is transitive", steps: []step{
			mk("a", "x=1"), mk("b", "x=own-b"), mk("c", "x=own-c"),
			conn("b", "c", "x->x"), conn("a", "b", "x->x"),
			want("c", "x", "1"), want("b", "x", "1"),
			set("a", "x=2"),
			want("b", "x", "2"), want("c", "x", "2"),
			disc("a", "b"),
			want("b", "x", "own-b"), want("c", "x", "own-b"),
			disc("b", "c"),
			want("c", "x", "own-c"),
		}},
		{name: "chain through different inputs", steps: []step{
			mk("a", "x=v"), mk("b"), mk("c"),
			conn("a", "b", "x->y"), conn("b", "c", "y->list"),
			want("c", "list", []any{"v"}),
			set("a", "x=w"),
			want("c", "list", []any{"w"}),
		}},
		{name: "simple to simple: last connection wins", steps: []step{
			mk("a", "x=from-a"), mk("b", "x=from-b"), mk("r", "y=own"),
			conn("a", "r", "x->y"),
			want("r", "y", "from-a"),
			conn("b", "r", "x->y"),
			want("r", "y", "from-b"),
			disc("b", "r"),
			want("r", "y", "from-a"),
			disc("a", "r"),
			want("r", "y", "own"),
		}},
		{name: "disconnecting the first keeps the last", steps: []step{
			mk("a", "x=from-a"), mk("b", "x=from-b"), mk("r", "y=own"),
			conn("a", "r", "x->y"), conn("b", "r", "x->y"),
			disc("a", "r"),
			want("r", "y", "from-b"),
		}},
		{name: "re-connecting keeps the original order", steps: []step{
			mk("a", "x=from-a"), mk("b", "x=from-b"), mk("r"),
			conn("a", "r", "x->y"), conn("b", "r", "x->y"),
			conn("a", "r", "x->y"),
			want("r", "y", "from-b"),
		}},
		{name: "simple to list: one element per emitter in order", steps: []step{
			mk("e3", "x=3"), mk("e1", "x=1"), mk("e2", "x=2"), mk("r"),
			conn("e1", "r", "x->list"), conn("e2", "r", "x->list"), conn("e3", "r", "x->list"),
			want("r", "list", []any{"1", "2", "3"}),
			set("e2", "x=two"),
			want("r", "list", []any{"1", "two", "3"}),
			disc("e2", "r"),
			want("r", "list", []any{"1", "3"}),
			conn("e2", "r", "x->list"),
			want("r", "list", []any{"1", "3", "two"}),
			conn("e1", "r", "x->list"),
			want("r", "list", []any{"1", "3", "two"}),
			disc("e1", "r"), disc("e2", "r"), disc("e3", "r"),
			want("r", "list", []any{}),
		}},
		{name: "simple to list replaces the own value", steps: []step{
			mk("e1", "x=1"), mk("r", "list=[own]"),
			conn("e1", "r", "x->list"),
			want("r", "list", []any{"1"}),
			disc("e1", "r"),
			want("r", "list", []any{"own"}),
		}},
		{name: "int to list of int", steps: []step{
			mk("e1", "n=80"), mk("e2", "n=443"), mk("r"),
			conn("e1", "r", "n->nums"), conn("e2", "r", "n->nums"),
			want("r", "nums", []any{int64(80), int64(443)}),
		}},
		{name: "list to list follows as a whole", steps: []step{
			mk("a", "list=[p, q]"), mk("b", "list=[z]"), mk("r"),
			conn("a", "r", "list->list"),
			want("r", "list", []any{"p", "q"}),
			conn("b", "r", "list->list"),
			want("r", "list", []any{"z"}),
		}},
		{name: "int to float", steps: []step{
			mk("a", "n=2"), mk("r"),
			conn("a", "r", "n->f"),
			want("r", "f", float64(2)),
		}},
		{name: "object key: sets one key and keeps the others", steps: []step{
			mk("a", "x=10.0.0.5", "n=5432"), mk("r"),
			conn("a", "r", "x->settings:host"),
			want("r", "settings", map[string]any{"host": "10.0.0.5", "port": int64(1)}),
			set("a", "x=10.0.0.6"),
			want("r", "settings", map[string]any{"host": "10.0.0.6", "port": int64(1)}),
			set("r", "settings={host: own, port: 2}").withErr("follows a.x"),
			disc("a", "r"),
			want("r", "settings", map[string]any{"host": "h0", "port": int64(1)}),
		}},
		{name: "object keys from two emitters", steps: []step{
			mk("a", "x=h-a"), mk("b", "n=99"), mk("r"),
			conn("a", "r", "x->settings:host"), conn("b", "r", "n->settings:port"),
			want("r", "settings", map[string]any{"host": "h-a", "port": int64(99)}),
			disc("a", "r"),
			want("r", "settings", map[string]any{"host": "h0", "port": int64(99)}),
		}},
		{name: "several mappings in one connection", steps: []step{
			mk("a", "x=1", "y=2", "n=3"), mk("r"),
			conn("a", "r", "x->y, y->x", `{"n": "nums"}`),
			want("r", "x", "2"), want("r", "y", "1"), want("r", "nums", []any{int64(3)}),
		}},
		{name: "default mapping: same names, no location", steps: []step{
			mk("a", "x=1", "y=2", "n=3", "location=somewhere"), mk("r", "location=mine"),
			conn("a", "r"),
			want("r", "x", "1"), want("r", "y", "2"), want("r", "n", int64(3)),
			want("r", "list", []any{}), want("r", "location", "mine"),
		}},
		{name: "re-connecting adds mappings", steps: []step{
			mk("a", "x=1", "y=2"), mk("r", "x=own-x", "y=own-y"),
			conn("a", "r", "x->x"),
			want("r", "x", "1"), want("r", "y", "own-y"),
			conn("a", "r", "y->y"),
			want("r", "x", "1"), want("r", "y", "2"),
		}},
		{name: "re-connecting into a mapped input replaces that mapping", steps: []step{
			mk("a", "x=1", "y=2"), mk("r", "x=own-x", "y=own-y"),
			conn("a", "r", "x->x"),
			conn("a", "r", "y->x"),
			want("r", "x", "2"), want("r", "y", "own-y"),
		}},
		{name: "delete restores receivers", steps: []step{
			mk("a", "x=1"), mk("b", "x=own-b"), mk("c"),
			conn("a", "b", "x->x"), conn("b", "c", "x->y"),
			want("c", "y", "1"),
			del("a"),
			want("b", "x", "own-b"), want("c", "y", "own-b"),
			del("b"),
			want("c", "y", ""),
		}},
		{name: "resources may feed each other through different inputs", steps: []step{
			mk("a", "x=ax"), mk("b", "y=by"),
			conn("a", "b", "x->x"), conn("b", "a", "y->y"),
			want("b", "x", "ax"), want("a", "y", "by"),
			set("a", "x=ax2"), set("b", "y=by2"),
			want("b", "x", "ax2"), want("a", "y", "by2"),
		}},
		{name: "an object and its key feed each other", steps: []step{
			mk("a", "x=ax"), mk("b"),
			conn("a", "b", "x->settings:host"), conn("b", "a", "settings->settings"),
			want("a", "settings", map[string]any{"host": "ax", "port": int64(1)}),
		}},
		{name: "feeding each other along a chain", steps: []step{
			mk("a", "x=ax"), mk("b"), mk("c"),
			conn("a", "b", "x->x"), conn("b", "c", "x->x"), conn("c", "a", "x->y"),
			want("a", "y", "ax"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.steps) })
	}
}

// withErr expects the step to fail with an error mentioning part.
func (s step) withErr(part string) step { return fails(s, part) }

func TestConnectErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		steps   []step
		connect step
		want    string
	}{
		{name: "an input to itself", connect: conn("a", "a", "x->x"), want: "a.x cannot follow itself"},
		{name: "unknown emitter", connect: conn("ghost", "b", "x->x"), want: `no such resource "ghost"`},
		{name: "unknown receiver", connect: conn("a", "ghost", "x->x"), want: `no such resource "ghost"`},
		{name: "unknown emitter input", connect: conn("a", "b", "nope->x"), want: `mapping nope->x: a has no input "nope" (inputs: x, y, n`},
		{name: "unknown receiver input", connect: conn("a", "b", "x->nope"), want: `mapping x->nope: b has no input "nope"`},
		{name: "str to int", connect: conn("a", "b", "x->n"), want: "mapping x->n: a.x is str but b.n wants int"},
		{name: "float to int", connect: conn("a", "b", "f->n"), want: "a.f is float but b.n wants int"},
		{name: "list to str", connect: conn("a", "b", "list->x"), want: "a.list is [str] but b.x wants str"},
		{name: "str to list of int", connect: conn("a", "b", "x->nums"), want: "a.x is str but b.nums wants int"},
		{name: "object to str", connect: conn("a", "b", "settings->x"), want: "wants str"},
		{name: "key on a non-object", connect: conn("a", "b", "x->y:host"), want: "mapping x->y:host: b.y is str, not an object"},
		{name: "unknown key", connect: conn("a", "b", "x->settings:hostname"), want: `b.settings ({host: str!, port: int}) has no key "hostname"`},
		{name: "key of the wrong type", connect: conn("a", "b", "x->settings:port"), want: "a.x is str but b.settings:port wants int"},
		{name: "no shared inputs", steps: []step{{desc: "create noop", run: func(t *testing.T, cat *Catalog) error {
			_, err := create(cat, "nd", realBase(t, "node"), "ip=10.0.0.1")
			if err != nil {
				return err
			}
			_, err = create(cat, "np", realBase(t, "noop"))
			return err
		}}}, connect: conn("np", "nd"), want: "np and nd share no input names"},
		{name: "malformed mapping", connect: conn("a", "b", "x=>y"), want: `mapping "x=>y"`},
		{name: "mapping with empty key", connect: conn("a", "b", "x->settings:"), want: "receiver_input:key"},
		{name: "malformed json mapping", connect: conn("a", "b", `{"x": }`), want: "line 1 column"},
		{name: "data cycle of two", steps: []step{conn("a", "b", "x->y")}, connect: conn("b", "a", "y->x"),
			want: "data cycle: connecting b to a would close b.y -> a.x -> b.y"},
		{name: "data cycle of three", steps: []step{mk("c"), conn("a", "b", "x->x"), conn("b", "c", "x->x")}, connect: conn("c", "a", "x->x"),
			want: "would close c.x -> a.x -> b.x -> c.x"},
		{name: "data cycle of objects", steps: []step{conn("a", "b", "settings->settings")}, connect: conn("b", "a", "settings->settings"),
			want: "would close b.settings -> a.settings -> b.settings"},
		{name: "data cycle by default mapping", steps: []step{conn("a", "b", "x->x")}, connect: conn("b", "a"),
			want: "would close b.x -> a.x -> b.x"},
		{name: "data cycle closed by two mappings of one connection",
			steps:   []step{conn("b", "a", "y->y, x->x")},
			connect: conn("a", "b", "x->y, y->x"),
			want:    "data cycle: connecting a to b would close a.x -> b.y -> a.y -> b.x -> a.x"},
		{name: "disconnect what is not connected", connect: disc("a", "b"), want: "a is not connected to b"},
		{name: "disconnect unknown", connect: disc("a", "ghost"), want: `no such resource "ghost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			steps := append([]step{mk("a"), mk("b")}, tt.steps...)
			db := openStore(t)
			for i, s := range steps {
				if err := db.Update(func(tx *store.Tx) error { return s.run(t, NewCatalog(tx)) }); err != nil {
					t.Fatalf("setup step %d (%s): %v", i+1, s.desc, err)
				}
			}
			var before []Connection
			view(t, db, func(cat *Catalog) { before, _ = cat.AllConnections() })
			err := db.Update(func(tx *store.Tx) error { return tt.connect.run(t, NewCatalog(tx)) })
			if err == nil {
				t.Fatalf("%s: no error, want one mentioning %q", tt.connect.desc, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			view(t, db, func(cat *Catalog) {
				after, _ := cat.AllConnections()
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("connections changed (-before +after):\n%s", diff)
				}
			})
		})
	}
}

func TestConnectErrorKinds(t *testing.T) {
	for _, tt := range []struct {
		name    string
		e, r    string
		mapping string
		kind    error
	}{
		{"itself", "a", "a", "x->x", ErrCycle},
		{"unknown", "a", "ghost", "x->x", ErrNotFound},
		{"type", "a", "b", "x->n", ErrInvalid},
		{"cycle", "b", "a", "y->x", ErrCycle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				mustCreate(t, cat, "a", valBaseFor(t))
				mustCreate(t, cat, "b", valBaseFor(t))
				if _, err := cat.Connect("a", "b", []Mapping{{From: "x", To: "y"}}); err != nil {
					t.Fatal(err)
				}
				ms, err := ParseMappings([]string{tt.mapping})
				if err != nil {
					t.Fatal(err)
				}
				_, err = cat.Connect(tt.e, tt.r, ms)
				wantErr(t, err, tt.kind)
			})
		})
	}
}

// Re-connecting a pair replaces its mappings, so the cycle check must judge
// the new mappings, not the ones being replaced.
func TestReconnectIsCheckedWithTheNewMappings(t *testing.T) {
	runSteps(t, []step{
		mk("a", "x=ax", "y=ay"), mk("b", "x=bx", "y=by"),
		// b.x -> a.x -> b.y -> a.y: no cycle.
		conn("b", "a", "x->x, y->y"), conn("a", "b", "x->y"),
		// With a->b still x->y, y->x would close a.y -> b.x -> a.x -> b.y -> a.y.
		fails(conn("a", "b", "x->y, y->x"), "data cycle"),
		// Mappings add up: y->x next to x->y closes the same cycle.
		fails(conn("a", "b", "y->x"), "data cycle"),
		// Without x->y, y->x alone ends at a.x: a.y -> b.x -> a.x.
		disc("a", "b"), conn("a", "b", "y->x"),
		want("b", "x", "by"), want("a", "x", "by"), want("b", "y", "by"),
	})
}

func TestParseMappings(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // mappings joined by spaces
		err  string
	}{
		{args: nil, want: ""},
		{args: []string{"ip->host"}, want: "ip->host"},
		{args: []string{" ip -> host "}, want: "ip->host"},
		{args: []string{"ip->host,port->db_port"}, want: "ip->host port->db_port"},
		{args: []string{"ip->host,", "port->db_port"}, want: "ip->host port->db_port"},
		{args: []string{"ip->settings:host"}, want: "ip->settings:host"},
		{args: []string{`{"port": "db_port", "ip": "settings:host"}`}, want: "ip->settings:host port->db_port"},
		{args: []string{"ip"}, err: `mapping "ip"`},
		{args: []string{"->host"}, err: `mapping "->host"`},
		{args: []string{"ip->"}, err: `mapping "ip->"`},
		{args: []string{"ip->:host"}, err: `mapping "ip->:host"`},
		{args: []string{`{"ip": 3}`}, err: "mapping"},
		{args: []string{`{"ip": "host"`}, err: "line 1 column"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ms, err := ParseMappings(tt.args)
			if tt.err != "" {
				wantErr(t, err, ErrInvalid, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.String())
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("ParseMappings = %q, want %q", got, tt.want)
			}
		})
	}
}

// graph builds a -> b, a -> c, b -> d, c -> d, d -> e, connecting c -> d
// before b -> d.
func graph(t *testing.T) *store.DB {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		for _, n := range []string{"e", "d", "c", "b", "a"} {
			mustCreate(t, cat, n, valBaseFor(t), "x="+n)
		}
		for _, p := range [][3]string{{"a", "c", "x->x"}, {"a", "b", "x->x"}, {"c", "d", "x->list"}, {"b", "d", "x->list"}, {"d", "e", "list->list"}} {
			ms, _ := ParseMappings([]string{p[2]})
			if _, err := cat.Connect(p[0], p[1], ms); err != nil {
				t.Fatal(err)
			}
		}
	})
	return db
}

func TestDownstreamAndReceivers(t *testing.T) {
	db := graph(t)
	view(t, db, func(cat *Catalog) {
		for _, tt := range []struct {
			from []string
			want []string
		}{
			{[]string{"a"}, []string{"b", "c", "d", "e"}},
			{[]string{"b"}, []string{"d", "e"}},
			{[]string{"b", "c"}, []string{"d", "e"}},
			{[]string{"d", "a"}, []string{"e", "b", "c"}},
			{[]string{"e"}, nil},
			{[]string{"ghost"}, nil},
		} {
			got, err := cat.Downstream(tt.from...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Downstream(%v) (-want +got):\n%s", tt.from, diff)
			}
		}
		for name, want := range map[string][]string{"a": {"b", "c"}, "b": {"d"}, "d": {"e"}, "e": nil} {
			got, err := cat.Receivers(name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Receivers(%s) (-want +got):\n%s", name, diff)
			}
		}
		eff, err := cat.Effective("e")
		if err != nil {
			t.Fatal(err)
		}
		// d's list holds c then b: the order the connections were made.
		if diff := cmp.Diff([]any{"a", "a"}, eff["list"]); diff != "" {
			t.Errorf("e.list (-want +got):\n%s", diff)
		}
	})
}

func TestAllConnectionsAndIncomingOrder(t *testing.T) {
	db := graph(t)
	view(t, db, func(cat *Catalog) {
		all, err := cat.AllConnections()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range all {
			got = append(got, c.Emitter+">"+c.Receiver)
		}
		// By receiver, then in connection order.
		if diff := cmp.Diff([]string{"a>b", "a>c", "c>d", "b>d", "d>e"}, got); diff != "" {
			t.Errorf("AllConnections (-want +got):\n%s", diff)
		}
		in, err := cat.Incoming("d")
		if err != nil {
			t.Fatal(err)
		}
		if len(in) != 2 || in[0].Emitter != "c" || in[1].Emitter != "b" || in[0].Seq >= in[1].Seq {
			t.Errorf("Incoming(d) = %+v, want c then b", in)
		}
		c, ok := cat.Connection("d", "e")
		if !ok || len(c.Mappings) != 1 || c.Mappings[0].String() != "list->list" {
			t.Errorf("Connection(d, e) = %+v, %v", c, ok)
		}
		if _, ok := cat.Connection("e", "d"); ok {
			t.Error("Connection(e, d) found a connection in the wrong direction")
		}
	})
}

func TestDefaultMappingWithRealBases(t *testing.T) {
	for _, tt := range []struct {
		emitterBase, receiverBase string
		emitterArgs, receiverArgs []string
		want                      string
		wantInputs                map[string]any
	}{
		// A node gives its location (its own name) along with shared names.
		{"node", "mariadb", []string{"ip=10.0.0.1"}, []string{"dir=/r", "root_password=pw"}, "ip->ip location->location",
			map[string]any{"ip": "10.0.0.1", "location": "e", "dir": "/r"}},
		// Any other base keeps its location to itself.
		{"mariadb", "keystone", []string{"dir=/e", "port=3307", "root_password=pw", "location=n9"}, []string{"dir=/r"}, "dir->dir port->port",
			map[string]any{"dir": "/e", "port": int64(3307), "location": "", "db_port": int64(3306)}},
	} {
		t.Run(tt.emitterBase+"->"+tt.receiverBase, func(t *testing.T) {
			db := openStore(t)
			update(t, db, func(cat *Catalog) {
				mustCreate(t, cat, "e", realBase(t, tt.emitterBase), tt.emitterArgs...)
				mustCreate(t, cat, "r", realBase(t, tt.receiverBase), tt.receiverArgs...)
				c, err := cat.Connect("e", "r", nil)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, m := range c.Mappings {
					got = append(got, m.String())
				}
				if strings.Join(got, " ") != tt.want {
					t.Errorf("mappings = %q, want %q", got, tt.want)
				}
			})
			view(t, db, func(cat *Catalog) {
				eff, err := cat.Effective("r")
				if err != nil {
					t.Fatal(err)
				}
				checkInputs(t, eff, tt.wantInputs)
			})
		})
	}
}

// One input of a resource may follow another of its own inputs; the value
// flows, and disconnecting restores the receiver's own.
func TestConnectInputsOfOneResource(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "a", valBaseFor(t))
		r, err := cat.Get("a")
		if err != nil {
			t.Fatal(err)
		}
		r.Inputs["x"] = "from-x"
		if err := cat.Put(r); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Connect("a", "a", []Mapping{{From: "x", To: "y"}}); err != nil {
			t.Fatal(err)
		}
		eff, err := cat.Effective("a")
		if err != nil {
			t.Fatal(err)
		}
		if eff["y"] != "from-x" {
			t.Fatalf("y = %v, want the value of x", eff["y"])
		}
		if _, err := cat.Connect("a", "a", []Mapping{{From: "y", To: "x"}}); !errors.Is(err, ErrCycle) {
			t.Fatalf("x->y then y->x: err = %v, want a cycle", err)
		}
	})
}
