package resources

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
)

// Mapping sends one emitter input to one receiver input, or to one key of a
// receiver's object input when Key is set. When the receiver's input is a
// list of objects, Key is a field of one element: the element tagged Tag,
// or the emitter's name when Tag is "" (see ElementTag).
type Mapping struct {
	From string `json:"from"`
	To   string `json:"to"`
	Key  string `json:"key,omitempty"`
	Tag  string `json:"tag,omitempty"`
}

// String renders the mapping as "from->to", "from->to:key" or
// "from->to:key|tag".
func (m Mapping) String() string {
	s := m.From + "->" + m.To
	if m.Key != "" {
		s += ":" + m.Key
	}
	if m.Tag != "" {
		s += "|" + m.Tag
	}
	return s
}

// ElementTag is the tag of the list element mapping m from emitter feeds
// (meaningful for a mapping into a list of objects): its own Tag, or else
// the emitter's name, so that each emitter gets an element of its own.
func (m Mapping) ElementTag(emitter string) string {
	if m.Tag != "" {
		return m.Tag
	}
	return emitter
}

// Connection makes the receiver's mapped inputs follow the emitter's
// effective values. Seq orders connections (list inputs and "last wins").
type Connection struct {
	Emitter string `json:"emitter"`
	// Receiver and Seq are set in every stored connection; a committed
	// snapshot keeps connections without them (see staging).
	Receiver string    `json:"receiver,omitempty"`
	Mappings []Mapping `json:"mappings"`
	Seq      uint64    `json:"seq,omitempty"`
	// Rules are the default rules this connection added (canonical text),
	// so that disconnecting removes those and never a rule the operator
	// wrote by hand.
	Rules []string `json:"rules,omitempty"`
}

// Keys in the connections bucket: one record under the receiver, one index
// entry under the emitter, so both directions are a prefix scan.
func inKey(receiver, emitter string) string  { return "in/" + receiver + "\x00" + emitter }
func outKey(emitter, receiver string) string { return "out/" + emitter + "\x00" + receiver }
func inPrefix(receiver string) string        { return "in/" + receiver + "\x00" }
func outPrefix(emitter string) string        { return "out/" + emitter + "\x00" }

// ParseMappings reads a mapping given on the command line: a JSON object
// {"e_in": "r_in"} (a value "r_in:key" targets one key) or "e_in->r_in"
// pairs, several per argument separated by commas.
func ParseMappings(args []string) ([]Mapping, error) {
	var out []Mapping
	for _, a := range args {
		a = strings.TrimSpace(a)
		if strings.HasPrefix(a, "{") {
			var m map[string]string
			if err := json.Unmarshal([]byte(a), &m); err != nil {
				return nil, invalidf("mapping %s: %s (want {\"emitter_input\": \"receiver_input\"})", quoteShort(a), jsonMessage(a, err))
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				mp, err := parseMapping(k + "->" + m[k])
				if err != nil {
					return nil, err
				}
				out = append(out, mp)
			}
			continue
		}
		for _, part := range strings.Split(a, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			mp, err := parseMapping(part)
			if err != nil {
				return nil, err
			}
			out = append(out, mp)
		}
	}
	return out, nil
}

func parseMapping(s string) (Mapping, error) {
	from, to, ok := strings.Cut(s, "->")
	from, to = strings.TrimSpace(from), strings.TrimSpace(to)
	if !ok || from == "" || to == "" {
		return Mapping{}, invalidf("mapping %q: want emitter_input->receiver_input", s)
	}
	m := Mapping{From: from, To: to}
	if t, key, ok := strings.Cut(to, ":"); ok {
		if t == "" || key == "" {
			return Mapping{}, invalidf("mapping %q: want emitter_input->receiver_input:key", s)
		}
		m.To, m.Key = t, key
		if k, tag, ok := strings.Cut(key, "|"); ok {
			if k == "" || tag == "" || strings.ContainsAny(tag, "|:") {
				return Mapping{}, invalidf("mapping %q: want emitter_input->receiver_input:key|tag", s)
			}
			m.Key, m.Tag = k, tag
		}
	} else if strings.Contains(to, "|") {
		return Mapping{}, invalidf("mapping %q: a |tag follows a key of a list of objects (emitter_input->receiver_input:key|tag)", s)
	}
	return m, nil
}

// Incoming returns the connections into receiver, in connection order.
func (c *Catalog) Incoming(receiver string) ([]Connection, error) {
	if cs, ok := c.in[receiver]; ok {
		return cs, nil
	}
	var cs []Connection
	err := c.forEach(store.Connections, inPrefix(receiver), func(_ string, v []byte) error {
		var conn Connection
		if err := json.Unmarshal(v, &conn); err != nil {
			return fmt.Errorf("decode connection into %s: %w", receiver, err)
		}
		cs = append(cs, conn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Seq < cs[j].Seq })
	setIn(&c.in, receiver, cs)
	return cs, nil
}

// fed reports whether any connection feeds receiver, without decoding
// them; when none does, Incoming knows it from then on.
func (c *Catalog) fed(receiver string) (bool, error) {
	if cs, ok := c.in[receiver]; ok {
		return len(cs) > 0, nil
	}
	found := false
	err := c.forEach(store.Connections, inPrefix(receiver), func(string, []byte) error {
		found = true
		return store.ErrStop
	})
	if err != nil || found {
		return found, err
	}
	setIn(&c.in, receiver, nil)
	return false, nil
}

// Connection returns the connection from emitter to receiver, if any.
func (c *Catalog) Connection(emitter, receiver string) (*Connection, bool) {
	cs, err := c.Incoming(receiver)
	if err != nil {
		return nil, false
	}
	for i := range cs {
		if cs[i].Emitter == emitter {
			return &cs[i], true
		}
	}
	return nil, false
}

// Receivers returns the resources emitter is connected to, sorted by name.
func (c *Catalog) Receivers(emitter string) ([]string, error) {
	var out []string
	p := outPrefix(emitter)
	err := c.forEach(store.Connections, p, func(k string, _ []byte) error {
		out = append(out, strings.TrimPrefix(k, p))
		return nil
	})
	return out, err
}

// AllConnections returns every connection, by receiver then order.
func (c *Catalog) AllConnections() ([]Connection, error) {
	var out []Connection
	err := c.forEach(store.Connections, "in/", func(_ string, v []byte) error {
		var conn Connection
		if err := json.Unmarshal(v, &conn); err != nil {
			return fmt.Errorf("decode connection: %w", err)
		}
		out = append(out, conn)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Receiver != out[j].Receiver {
			return out[i].Receiver < out[j].Receiver
		}
		return out[i].Seq < out[j].Seq
	})
	return out, err
}

// Downstream returns every resource whose effective inputs depend on one of
// names, transitively, in breadth-first order, without names themselves.
func (c *Catalog) Downstream(names ...string) ([]string, error) {
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	queue := append([]string(nil), names...)
	var out []string
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		rcvs, err := c.Receivers(n)
		if err != nil {
			return nil, err
		}
		for _, r := range rcvs {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
				queue = append(queue, r)
			}
		}
	}
	return out, nil
}

// Connect connects emitter to receiver with the given mappings (none: every
// input the two share by name; location only flows from node bases). A
// second Connect between the same pair replaces the mappings and keeps the
// original order.
func (c *Catalog) Connect(emitter, receiver string, mappings []Mapping) (*Connection, error) {
	if emitter == receiver {
		// One input of a resource may follow another of its own inputs
		// (self_name->name); only an input following itself is a cycle.
		if len(mappings) == 0 {
			return nil, invalidf("connecting %s to itself needs a mapping between two of its inputs, such as self_name->name", emitter)
		}
		for _, m := range mappings {
			if m.From == m.To && m.Key == "" {
				return nil, fmt.Errorf("%w: %s.%s cannot follow itself", ErrCycle, emitter, m.From)
			}
		}
	}
	e, err := c.Get(emitter)
	if err != nil {
		return nil, err
	}
	r, err := c.Get(receiver)
	if err != nil {
		return nil, err
	}
	for _, x := range []*Resource{e, r} {
		if x.Removing {
			return nil, invalidf("%s is staged for removal; discard that first (solar ch discard %s.remove)", x.Name, x.Name)
		}
	}
	if len(mappings) == 0 {
		mappings = defaultMappings(e, r)
		if len(mappings) == 0 {
			return nil, invalidf("%s and %s share no input names; give a mapping such as ip->host", emitter, receiver)
		}
	}
	for _, m := range mappings {
		if err := checkMapping(e, r, m); err != nil {
			return nil, err
		}
	}
	ins, err := c.Incoming(receiver)
	if err != nil {
		return nil, err
	}
	if err := checkElements(r, emitter, mappings, ins); err != nil {
		return nil, err
	}
	conn := Connection{Emitter: emitter, Receiver: receiver, Mappings: mappings}
	if old, ok := c.Connection(emitter, receiver); ok {
		// Connecting a pair again adds mappings; one into an input (or key)
		// already mapped from this emitter replaces that one.
		conn.Mappings = mergeMappings(old.Mappings, mappings)
		conn.Seq, conn.Rules = old.Seq, old.Rules
	} else {
		seq, err := c.tx.NextSequence(store.Connections)
		if err != nil {
			return nil, err
		}
		conn.Seq = seq
	}
	if err := c.checkCycle(conn); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(conn)
	if err != nil {
		return nil, err
	}
	if err := c.put(store.Connections, inKey(receiver, emitter), raw); err != nil {
		return nil, err
	}
	if err := c.put(store.Connections, outKey(emitter, receiver), nil); err != nil {
		return nil, err
	}
	if err := c.forget(receiver); err != nil {
		return nil, err
	}
	// Known without reading them back (and decoding them again).
	setIn(&c.in, receiver, withConn(ins, conn))
	// The receiver's effective values must still satisfy its schemas.
	if _, err := c.Effective(receiver); err != nil {
		return nil, err
	}
	// Kept now, while the emitter's is at hand, so that a chain built link
	// by link is one lookup per link (see SensitiveInputs).
	if _, err := c.SensitiveInputs(receiver); err != nil {
		return nil, err
	}
	return &conn, nil
}

func defaultMappings(e, r *Resource) []Mapping {
	var out []Mapping
	for _, d := range e.Base.Inputs {
		if d.Name == LocationInput && !e.Base.Node {
			continue
		}
		if to, ok := r.Base.Input(d.Name); ok && to.Computable == "" {
			out = append(out, Mapping{From: d.Name, To: d.Name})
		}
	}
	return out
}

// checkMapping verifies that both inputs exist and their schemas fit.
func checkMapping(e, r *Resource, m Mapping) error {
	from, ok := e.Base.Input(m.From)
	if !ok {
		return invalidf("mapping %s: %s has no input %q (inputs: %s)", m, e.Name, m.From, strings.Join(e.Base.InputNames(), ", "))
	}
	to, ok := r.Base.Input(m.To)
	if !ok {
		return invalidf("mapping %s: %s has no input %q (inputs: %s)", m, r.Name, m.To, strings.Join(r.Base.InputNames(), ", "))
	}
	if to.Computable != "" {
		return invalidf("mapping %s: %s.%s is computed by its base (computable: %s) and cannot follow a connection; connect an input it reads instead", m, r.Name, m.To, to.Computable)
	}
	target := to.Schema
	switch {
	case m.Key != "":
		obj, err := keyed(r, to, m)
		if err != nil {
			return err
		}
		target = nil
		for _, f := range obj.Fields {
			if f.Name == m.Key {
				target = f.Schema
			}
		}
		if target == nil {
			return invalidf("mapping %s: %s.%s (%s) has no key %q", m, r.Name, m.To, to.Schema, m.Key)
		}
	case target.Kind == schema.List && from.Schema.Kind != schema.List:
		target = target.Elem
	}
	if !fits(from.Schema, target) {
		return invalidf("mapping %s: %s.%s is %s but %s.%s%s wants %s", m, e.Name, m.From, from.Schema, r.Name, m.To, keySuffix(m), target)
	}
	return nil
}

// keyed returns the object schema whose key mapping m sets: r's input to
// itself, or the elements of a list of objects. A |tag names an element,
// so it needs a list.
func keyed(r *Resource, to *InputDef, m Mapping) (*schema.Schema, error) {
	s := to.Schema
	switch {
	case s.Kind == schema.List && (s.Elem == nil || s.Elem.Kind != schema.Object):
		return nil, invalidf("mapping %s: %s.%s is %s, a list whose elements are not objects", m, r.Name, m.To, s)
	case s.Kind == schema.List:
		return s.Elem, nil
	case m.Tag != "":
		return nil, invalidf("mapping %s: %s.%s is %s, not a list of objects; only an element of a list takes a |tag", m, r.Name, m.To, s)
	case s.Kind != schema.Object:
		return nil, invalidf("mapping %s: %s.%s is %s, not an object or a list of objects", m, r.Name, m.To, s)
	}
	return s, nil
}

// elementMapping reports whether m sets a field of one element of r's
// list of objects m.To.
func elementMapping(r *Resource, m Mapping) bool {
	if m.Key == "" {
		return false
	}
	to, ok := r.Base.Input(m.To)
	return ok && to.Schema != nil && to.Schema.Kind == schema.List
}

// checkElements refuses mappings into lists of objects that would set one
// field of one element twice: twice in add (from emitter), or once in add
// and once by another emitter's connection among ins. Which value won
// would depend on the order of the mappings, not on the operator's intent.
func checkElements(r *Resource, emitter string, add []Mapping, ins []Connection) error {
	type field struct{ to, key, tag string }
	owner := map[field]string{}
	for _, c := range ins {
		if c.Emitter == emitter {
			continue // replaced or merged by this connect (mergeMappings)
		}
		for _, m := range c.Mappings {
			if elementMapping(r, m) {
				owner[field{m.To, m.Key, m.ElementTag(c.Emitter)}] = c.Emitter
			}
		}
	}
	mine := map[field]bool{}
	for _, m := range add {
		if !elementMapping(r, m) {
			continue
		}
		f := field{m.To, m.Key, m.ElementTag(emitter)}
		if mine[f] {
			return invalidf("mapping %s: field %q of element %q of %s.%s is mapped twice from %s", m, m.Key, f.tag, r.Name, m.To, emitter)
		}
		mine[f] = true
		if o, ok := owner[f]; ok {
			return invalidf("mapping %s: field %q of element %q of %s.%s already follows %s; disconnect it or give another |tag", m, m.Key, f.tag, r.Name, m.To, o)
		}
	}
	return nil
}

func keySuffix(m Mapping) string {
	if m.Key != "" {
		return ":" + m.Key
	}
	return ""
}

// fits reports whether values of schema a are acceptable where b is wanted.
func fits(a, b *schema.Schema) bool {
	if a.Kind == schema.Int && b.Kind == schema.Float {
		return true
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case schema.List:
		return fits(a.Elem, b.Elem)
	case schema.Object:
		for _, bf := range b.Fields {
			found := false
			for _, af := range a.Fields {
				if af.Name == bf.Name {
					found = fits(af.Schema, bf.Schema)
				}
			}
			if !found && bf.Schema.Required {
				return false
			}
		}
	}
	return true
}

// checkCycle refuses a connection that would let an input's value depend on
// itself. Data flows between (resource, input) pairs, so two resources may
// feed each other through different inputs. The search sees conn in place
// of any connection it replaces: its mappings may close a cycle together,
// and the replaced ones no longer count.
func (c *Catalog) checkCycle(conn Connection) error {
	for _, m := range conn.Mappings {
		start := conn.Receiver + "." + m.To
		goal := conn.Emitter + "." + m.From
		path, err := c.findFlow(conn, conn.Receiver, m.To, goal, map[string]bool{start: true})
		if err != nil {
			return err
		}
		if path != nil {
			cycle := append([]string{goal, start}, path...)
			return fmt.Errorf("%w: connecting %s to %s would close %s", ErrCycle, conn.Emitter, conn.Receiver, strings.Join(cycle, " -> "))
		}
	}
	return nil
}

// findFlow searches, depth first, for a data path from res.input to goal
// and returns the nodes after the start, ending with goal. pending is the
// connection being made, seen as if it were stored.
func (c *Catalog) findFlow(pending Connection, res, input, goal string, seen map[string]bool) ([]string, error) {
	rcvs, err := c.Receivers(res)
	if err != nil {
		return nil, err
	}
	if res == pending.Emitter && !slices.Contains(rcvs, pending.Receiver) {
		rcvs = append(rcvs, pending.Receiver)
	}
	for _, rcv := range rcvs {
		mappings := pending.Mappings
		if res != pending.Emitter || rcv != pending.Receiver {
			conn, ok := c.Connection(res, rcv)
			if !ok {
				continue
			}
			mappings = conn.Mappings
		}
		for _, m := range mappings {
			if m.From != input {
				continue
			}
			node := rcv + "." + m.To
			if node == goal {
				return []string{node}, nil
			}
			if seen[node] {
				continue
			}
			seen[node] = true
			rest, err := c.findFlow(pending, rcv, m.To, goal, seen)
			if err != nil {
				return nil, err
			}
			if rest != nil {
				return append([]string{node}, rest...), nil
			}
		}
	}
	return nil, nil
}

func mergeMappings(old, add []Mapping) []Mapping {
	type target struct{ to, key, tag string }
	taken := map[target]bool{}
	for _, m := range add {
		taken[target{m.To, m.Key, m.Tag}] = true
	}
	var out []Mapping
	for _, m := range old {
		if !taken[target{m.To, m.Key, m.Tag}] {
			out = append(out, m)
		}
	}
	return append(out, add...)
}

// AddConnectionRules records rules (canonical text) added on behalf of the
// connection from emitter to receiver.
func (c *Catalog) AddConnectionRules(emitter, receiver string, rules []string) error {
	conn, ok := c.Connection(emitter, receiver)
	if !ok {
		return invalidf("%s is not connected to %s", emitter, receiver)
	}
	cp := *conn
	cp.Rules = append(append([]string(nil), conn.Rules...), rules...)
	raw, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if err := c.put(store.Connections, inKey(receiver, emitter), raw); err != nil {
		return err
	}
	setIn(&c.in, receiver, withConn(c.in[receiver], cp))
	return nil
}

// withConn returns a copy of ins (a receiver's incoming connections, in
// order) with conn in place of the one from the same emitter, or appended:
// a new connection has the greatest Seq.
func withConn(ins []Connection, conn Connection) []Connection {
	out := make([]Connection, 0, len(ins)+1)
	replaced := false
	for _, x := range ins {
		if x.Emitter == conn.Emitter {
			x, replaced = conn, true
		}
		out = append(out, x)
	}
	if !replaced {
		out = append(out, conn)
	}
	return out
}

// Disconnect removes the connection from emitter to receiver; the receiver's
// inputs go back to their own values.
func (c *Catalog) Disconnect(emitter, receiver string) (*Connection, error) {
	if _, err := c.Get(emitter); err != nil {
		return nil, err
	}
	if _, err := c.Get(receiver); err != nil {
		return nil, err
	}
	conn, ok := c.Connection(emitter, receiver)
	if !ok {
		return nil, invalidf("%s is not connected to %s (see solar connections show)", emitter, receiver)
	}
	cp := *conn
	return &cp, c.deleteConn(emitter, receiver)
}

func (c *Catalog) deleteConn(emitter, receiver string) error {
	if err := c.del(store.Connections, inKey(receiver, emitter)); err != nil {
		return err
	}
	if err := c.del(store.Connections, outKey(emitter, receiver)); err != nil {
		return err
	}
	return c.forget(receiver)
}

// Effective returns the resource's effective input values: its own values
// with every connected input replaced by what its emitters give, computed
// transitively. The map is shared with the catalog's cache; do not modify it.
func (c *Catalog) Effective(name string) (map[string]any, error) {
	return c.effective(name, 0)
}

// maxDepth bounds the recursion: checkCycle keeps cycles out, so only a
// store written by something else can reach it.
const maxDepth = 10000

func (c *Catalog) effective(name string, depth int) (map[string]any, error) {
	if v, ok := c.eff[name]; ok {
		return v, nil
	}
	if v, ok, err := c.storedEffective(name); err != nil || ok {
		return v, err
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: connections around %s are too deep or circular", ErrCycle, name)
	}
	r, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	conns, err := c.Incoming(name)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(r.Inputs)+1)
	for k, v := range r.Inputs {
		out[k] = v
	}
	if len(conns) > 0 {
		setIn(&c.busy, name, true)
		defer delete(c.busy, name)
	}
	var pieces Pieces
	for _, conn := range conns {
		e, err := c.Get(conn.Emitter)
		if err != nil {
			return nil, err
		}
		for _, m := range conn.Mappings {
			val, err := c.emitted(conn.Emitter, m.From, depth+1)
			if err != nil {
				return nil, err
			}
			apply(out, r, e, m, val, &pieces)
		}
	}
	computes := r.Base.computes()
	if computes {
		if err := r.compute(out, c.hiddenFor(r, conns, depth), false); err != nil {
			return nil, err
		}
	}
	setIn(&c.eff, name, out)
	if c.tx.Writable() && (len(conns) > 0 || computes) {
		// Kept in the store so that the next command reads a long chain's
		// tail in one step instead of walking it; forget drops it.
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		if err := c.put(store.Effective, name, raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// storedEffective reads the effective inputs a write transaction kept.
// Only what connections feed is kept (effective): a resource fed by none
// is spared a read that could find nothing.
func (c *Catalog) storedEffective(name string) (map[string]any, bool, error) {
	fed, err := c.fed(name)
	if err != nil {
		return nil, false, err
	}
	if !fed {
		// A computable input is kept too, so that a run reads what the
		// last write computed instead of evaluating it again.
		if r, err := c.Get(name); err != nil || !r.Base.computes() {
			return nil, false, nil
		}
	}
	raw, err := c.get(store.Effective, name)
	if err != nil {
		return nil, false, nil
	}
	r, err := c.Get(name)
	if err != nil {
		return nil, false, err
	}
	out, err := decodeValues(raw)
	if err != nil {
		return nil, false, fmt.Errorf("decode effective inputs of %s: %w", name, err)
	}
	for k, v := range out {
		if d, ok := r.Base.Input(k); ok && v != nil {
			if cv, err := d.Schema.Check(v); err == nil {
				out[k] = cv
			} else if cv, err := optional(d.Schema).Check(v); err == nil {
				out[k] = cv
			}
		}
	}
	setIn(&c.eff, name, out)
	return out, true, nil
}

// emitted returns the effective value of one input of emitter. Two
// resources may feed each other through different inputs; when emitter is
// already being computed further up, only the one input is computed, which
// cannot loop because checkCycle refuses cycles between inputs.
func (c *Catalog) emitted(emitter, input string, depth int) (any, error) {
	if !c.busy[emitter] {
		src, err := c.effective(emitter, depth)
		if err != nil {
			return nil, err
		}
		return src[input], nil
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: connections around %s are too deep or circular", ErrCycle, emitter)
	}
	r, err := c.Get(emitter)
	if err != nil {
		return nil, err
	}
	conns, err := c.Incoming(emitter)
	if err != nil {
		return nil, err
	}
	if r.Computed(input) {
		return nil, fmt.Errorf("%w: %s.%s is computed from inputs of %s that are being computed: connections and the expression make data flow in a circle", ErrCycle, emitter, input, emitter)
	}
	out := map[string]any{input: r.Inputs[input]}
	var pieces Pieces
	for _, conn := range conns {
		for _, m := range conn.Mappings {
			if m.To != input {
				continue
			}
			e, err := c.Get(conn.Emitter)
			if err != nil {
				return nil, err
			}
			val, err := c.emitted(conn.Emitter, m.From, depth+1)
			if err != nil {
				return nil, err
			}
			apply(out, r, e, m, val, &pieces)
		}
	}
	return out[input], nil
}

// Pieces is what apply remembers between the mappings into one receiver,
// applied in connection order: the lists begun (the first piece replaces
// the receiver's own list) and where each tagged element of a list of
// objects sits. The zero value is ready to use.
type Pieces struct {
	started map[string]bool
	slots   map[string]int // input + "\x00" + tag: index in the list
}

// list returns a copy of the list out[input] as the pieces before have made
// it (empty for the first piece), and marks it begun.
func (p *Pieces) list(out map[string]any, input string) []any {
	if p.started == nil {
		p.started = map[string]bool{}
	}
	var list []any
	if p.started[input] {
		list = append(list, out[input].([]any)...)
	}
	p.started[input] = true
	return list
}

// applyElement sets field m.Key of the element tagged m.ElementTag(e) of
// r's list of objects to: the first mapping of a tag adds its element at
// the end, even with no value yet, so that a list's elements keep the
// order of their tags (ElementTags) whatever the emitters hold.
func applyElement(out map[string]any, to, from *InputDef, e *Resource, m Mapping, val any, p *Pieces) {
	list := p.list(out, m.To)
	if p.slots == nil {
		p.slots = map[string]int{}
	}
	slot := m.To + "\x00" + m.ElementTag(e.Name)
	i, ok := p.slots[slot]
	if !ok {
		i = len(list)
		p.slots[slot] = i
		list = append(list, map[string]any{})
	}
	cur, _ := list[i].(map[string]any)
	elem := make(map[string]any, len(cur)+1)
	for k, v := range cur {
		elem[k] = v
	}
	if val == nil {
		delete(elem, m.Key)
	} else {
		for _, f := range to.Schema.Elem.Fields {
			if f.Name == m.Key {
				val = widen(val, from.Schema, f.Schema)
			}
		}
		elem[m.Key] = val
	}
	list[i] = elem
	out[m.To] = list
}

// ElementTags returns the tags of the elements of r's list of objects
// input as conns make it, in order, and whether every mapping into input
// is into one element (a field of a tagged element): only then is each
// element known by its tag. No mapping into input gives nil and true.
func ElementTags(r *Resource, conns []Connection, input string) ([]string, bool) {
	var out []string
	for _, c := range conns {
		for _, m := range c.Mappings {
			if m.To != input {
				continue
			}
			if !elementMapping(r, m) {
				return nil, false
			}
			if t := m.ElementTag(c.Emitter); !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out, true
}

// apply sets what mapping m from e makes of r's input m.To in out, given
// val, e's effective value of m.From: one field of one element of a list
// of objects, one key of an object, one element of a list per emitter (the
// first replaces r's own list), or else the whole value, the last
// connection winning. p records the lists begun and their elements.
func apply(out map[string]any, r, e *Resource, m Mapping, val any, p *Pieces) {
	to, ok := r.Base.Input(m.To)
	if !ok {
		return
	}
	from, ok := e.Base.Input(m.From)
	if !ok {
		return
	}
	switch {
	case m.Key != "" && to.Schema.Kind == schema.List:
		applyElement(out, to, from, e, m, val, p)
	case m.Key != "":
		obj := map[string]any{}
		if cur, ok := out[m.To].(map[string]any); ok {
			for k, v := range cur {
				obj[k] = v
			}
		}
		if val == nil {
			delete(obj, m.Key)
		} else {
			for _, f := range to.Schema.Fields {
				if f.Name == m.Key {
					val = widen(val, from.Schema, f.Schema)
				}
			}
			obj[m.Key] = val
		}
		out[m.To] = obj
	case to.Schema.Kind == schema.List && from.Schema.Kind != schema.List:
		list := p.list(out, m.To)
		if val != nil {
			list = append(list, widen(val, from.Schema, to.Schema.Elem))
		}
		if list == nil {
			list = []any{}
		}
		out[m.To] = list
	default:
		out[m.To] = widen(val, from.Schema, to.Schema)
	}
}

// widen gives val, a value of schema from, the form schema to wants. fits
// lets an int flow where a float is wanted, at any depth; the value must
// then become a float64 like every float the store gives back.
func widen(val any, from, to *schema.Schema) any {
	if val == nil || sameKinds(from, to) {
		return val
	}
	if cv, err := to.Check(val); err == nil {
		return cv
	}
	return val
}

// sameKinds reports whether a and b have the same kinds all the way down,
// so that a's values need no conversion for b.
func sameKinds(a, b *schema.Schema) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case schema.List:
		return sameKinds(a.Elem, b.Elem)
	case schema.Object:
		for _, bf := range b.Fields {
			for _, af := range a.Fields {
				if af.Name == bf.Name && !sameKinds(af.Schema, bf.Schema) {
					return false
				}
			}
		}
	}
	return true
}

// Apply sets what mapping m from emitter e makes of receiver r's input
// m.To in out, given val, the emitter's value of m.From, as the effective
// values do (see apply). A plan computes the values a task will see with
// it, from values other than the store's current ones.
func Apply(out map[string]any, r, e *Resource, m Mapping, val any, p *Pieces) {
	apply(out, r, e, m, val, p)
}
