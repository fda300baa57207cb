package resources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/internal/jsonfast"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Resource is a stored resource: an instance of a base with its own input
// values. Inputs that follow a connection keep their own value underneath;
// disconnecting restores it.
type Resource struct {
	Name   string         `json:"name"`
	Base   Base           `json:"base"`
	Inputs map[string]any `json:"inputs"`
	Tags   tags.Set       `json:"tags"`
	Meta   Meta           `json:"meta,omitzero"`
	// Removing is set by "resource remove": the resource stays until its
	// remove action is committed, or until the removal is discarded.
	Removing bool `json:"removing,omitempty"`
	// Masked lists own inputs whose value a sensitive input gave through a
	// connection that is gone (staging keeps a committed value as the
	// resource's own when its emitter is removed): they are masked as if
	// the base declared them sensitive, until written again.
	Masked []string `json:"masked,omitempty"`
}

// EffectiveMeta is the base's metaparameters overridden by the resource's.
func (r *Resource) EffectiveMeta() Meta { return r.Base.Meta.Over(r.Meta) }

// HasAction reports whether the resource's base defines action.
func (r *Resource) HasAction(action string) bool {
	_, ok := r.Base.Actions[action]
	return ok
}

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// ValidName checks a resource name against [a-z0-9][a-z0-9_.-]*.
func ValidName(name string) error {
	if !nameRe.MatchString(name) || len(name) > 200 {
		return invalidf("resource name %q: want lower-case letters, digits, '_', '.', '-', starting with a letter or digit", name)
	}
	return nil
}

func decodeResource(raw []byte) (*Resource, error) {
	var r Resource
	if rest, b, ok := decodedBases.cut(raw); ok {
		// A base decoded before: the rest of the record alone is decoded,
		// and the base's bytes are not even scanned.
		if !decodeRest(rest, &r) {
			r = Resource{}
			if err := json.Unmarshal(rest, &r); err != nil {
				return nil, store.Damagedf("resource record does not decode: %v", err)
			}
		}
		r.Base = b
	} else {
		// The record's base is decoded through sharedBase, which shadows
		// Resource.Base (the shallower field wins in encoding/json).
		rec := struct {
			*Resource
			Base sharedBase `json:"base"`
		}{Resource: &r}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, store.Damagedf("resource record does not decode: %v", err)
		}
		r.Base = rec.Base.b
	}
	// JSON turns every number into float64; put values back into the
	// canonical form their schema gives (int64 for int, ...).
	for name, v := range r.Inputs {
		if d, ok := r.Base.Input(name); ok && v != nil {
			if cv, err := d.Schema.Check(v); err == nil {
				r.Inputs[name] = cv
			} else if cv, err := optional(d.Schema).Check(v); err == nil {
				// An object whose required keys come from connections
				// (compositions store the other keys alone).
				r.Inputs[name] = cv
			}
		}
	}
	if r.Tags == nil {
		r.Tags = tags.Set{}
	}
	return &r, nil
}

// decodeRest decodes a resource record without its base, as
// encoding/json would, without reflection (a run reads one record per
// task, twice): its fields but the metaparameters, which go to
// encoding/json with every other record it finds unusual (false).
func decodeRest(raw []byte, res *Resource) bool {
	r := jsonfast.NewReader(raw)
	var seen uint32
	r.Object(func(k []byte) {
		switch string(k) {
		case "name":
			r.Seen(&seen, 1<<0)
			res.Name = r.String()
		case "inputs":
			r.Seen(&seen, 1<<1)
			switch v := r.Value().(type) {
			case map[string]any:
				res.Inputs = v
			case nil:
			default:
				r.Fail()
			}
		case "tags":
			r.Seen(&seen, 1<<2)
			res.Tags = r.StringMap()
		case "removing":
			r.Seen(&seen, 1<<3)
			res.Removing = r.Bool()
		case "masked":
			r.Seen(&seen, 1<<4)
			res.Masked = r.Strings()
		default:
			r.Fail()
		}
	})
	return r.End() == nil
}

// decodeValues decodes an object of input values as encoding/json would
// into a map, without reflection where it can.
func decodeValues(raw []byte) (map[string]any, error) {
	r := jsonfast.NewReader(raw)
	switch v := r.Value().(type) {
	case map[string]any:
		if r.End() == nil {
			return v, nil
		}
	case nil:
		if r.End() == nil {
			return nil, nil
		}
	}
	var out map[string]any
	err := json.Unmarshal(raw, &out)
	return out, err
}

// sharedBase decodes the base a resource record carries, sharing the result
// between every record that carries the same encoding: each record holds a
// copy of its base (actions, inputs and their schemas), a run decodes
// thousands of records made from a handful of bases, and decoding the
// base was most of the cost of decoding a record. A decoded base is
// read-only (see Base.index), so copies of it may share its maps, slices
// and schemas.
type sharedBase struct{ b Base }

func (s *sharedBase) UnmarshalJSON(raw []byte) error {
	if b, ok := decodedBases.get(raw); ok {
		s.b = b
		return nil
	}
	var b Base
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	b.reindex()
	decodedBases.put(raw, b)
	s.b = b
	return nil
}

// maxDecodedBases bounds the cache of decoded bases: a store made from more
// distinct bases than this decodes some of them again, rather than keep
// them all.
const maxDecodedBases = 256

// decodedBases holds decoded bases by their encoding, for every catalog of
// the process.
var decodedBases = &baseCache{m: map[string]Base{}}

type baseCache struct {
	mu sync.Mutex
	m  map[string]Base
	// last is the encoding cut matched last, tried first.
	last string
}

// cut finds, in the resource record raw, a base decoded before, where
// records are encoded with it (Put, putNew): right after the
// resource's name. It returns the record without its base, and the base.
// The name is plain text (ValidName); a record that does not have that
// form is not cut, and decodes in full.
func (c *baseCache) cut(raw []byte) (rest []byte, b Base, ok bool) {
	const head, key = `{"name":"`, `,"base":`
	if !bytes.HasPrefix(raw, []byte(head)) {
		return nil, Base{}, false
	}
	end := bytes.IndexByte(raw[len(head):], '"')
	if end < 0 || bytes.IndexByte(raw[len(head):len(head)+end], '\\') >= 0 {
		return nil, Base{}, false
	}
	at := len(head) + end + 1
	if !bytes.HasPrefix(raw[at:], []byte(key)) {
		return nil, Base{}, false
	}
	val := raw[at+len(key):]
	c.mu.Lock()
	defer c.mu.Unlock()
	enc, found := c.last, c.last != "" && hasPrefix(val, c.last)
	if !found {
		for e := range c.m {
			if hasPrefix(val, e) {
				enc, found = e, true
				c.last = e
				break
			}
		}
	}
	if !found {
		return nil, Base{}, false
	}
	// A JSON object ends where its last brace is: val goes on with the
	// record's next member or its end.
	rest = make([]byte, 0, len(raw)-len(key)-len(enc))
	rest = append(append(rest, raw[:at]...), val[len(enc):]...)
	return rest, c.m[enc], true
}

func (c *baseCache) get(raw []byte) (Base, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[string(raw)]
	return b, ok
}

func (c *baseCache) put(raw []byte, b Base) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxDecodedBases {
		clear(c.m)
		c.last = ""
	}
	c.m[string(raw)] = b
}

// hasPrefix is bytes.HasPrefix for a string prefix, without a copy of it.
func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// optional returns a copy of s in which nothing is required, at any depth.
func optional(s *schema.Schema) *schema.Schema {
	cp := *s
	cp.Required = false
	if s.Elem != nil {
		cp.Elem = optional(s.Elem)
	}
	if s.Fields != nil {
		cp.Fields = make([]schema.Field, len(s.Fields))
		for i, f := range s.Fields {
			cp.Fields[i] = schema.Field{Name: f.Name, Schema: optional(f.Schema)}
		}
	}
	return &cp
}

// Catalog is the resources and connections seen through one transaction.
// It caches what it reads; all writes go through it so the caches stay true.
type Catalog struct {
	tx  *store.Tx
	res map[string]*Resource
	eff map[string]map[string]any
	// busy holds the resources whose effective values are being computed,
	// to tell resources feeding each other from a cycle.
	busy map[string]bool
	in   map[string][]Connection
	// sens caches effective sensitivity (SensitiveInputs) by resource,
	// sensIn by resource and input (for resources feeding each other), and
	// sensBusy is to sensitivity what busy is to effective values. forget
	// drops them with eff.
	sens     map[string]map[string]bool
	sensIn   map[string]map[string]bool
	sensBusy map[string]bool
	// bulk keeps the writes of a composition until it ends (see bulk.go);
	// nil otherwise.
	bulk *bulk
	// acts caches Actions by resource, baseJSON the encoding of the bases
	// resources were created from (see putNew).
	acts     map[string][]string
	baseJSON map[*Base][]byte
}

// NewCatalog returns a catalog over tx. Its caches are made by their first
// entry (setIn): the runner's commit makes a catalog per task and uses a
// few of them.
func NewCatalog(tx *store.Tx) *Catalog { return &Catalog{tx: tx} }

// Reset empties the catalog's caches, keeping their room: it is then as
// a new catalog over the same transaction, for a caller that would make
// one for each of many steps.
func (c *Catalog) Reset() {
	clear(c.res)
	clear(c.eff)
	clear(c.busy)
	clear(c.in)
	clear(c.sens)
	clear(c.sensIn)
	clear(c.sensBusy)
	clear(c.acts)
	clear(c.baseJSON)
}

// setIn sets (*m)[k] to v, making the map first if need be.
func setIn[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[k] = v
}

// Tx returns the transaction the catalog reads and writes.
func (c *Catalog) Tx() *store.Tx { return c.tx }

// Get returns the named resource or an error wrapping ErrNotFound. The
// returned value is shared with the catalog: modify it only through Put.
func (c *Catalog) Get(name string) (*Resource, error) {
	if r, ok := c.res[name]; ok {
		if r == nil {
			return nil, notFound(name)
		}
		return r, nil
	}
	raw, err := c.get(store.Resources, name)
	if err != nil {
		setIn(&c.res, name, nil)
		return nil, notFound(name)
	}
	r, err := decodeResource(raw)
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", name, err)
	}
	setIn(&c.res, name, r)
	return r, nil
}

// Keep caches r as the resource its name holds in the store, for a caller
// that decoded it from this store earlier and knows that the record has not
// changed since (the runner compares a digest of it): Get returns r without
// decoding the record again. r must not be modified afterwards.
func (c *Catalog) Keep(r *Resource) { setIn(&c.res, r.Name, r) }

func notFound(name string) error {
	return fmt.Errorf("%w %q (see solar resource list)", ErrNotFound, name)
}

// Exists reports whether the named resource exists.
func (c *Catalog) Exists(name string) bool {
	_, err := c.Get(name)
	return err == nil
}

// Actions implements events.Catalog: the actions the resource's base
// defines, sorted. The slice is shared with the catalog's cache; do not
// modify it.
func (c *Catalog) Actions(name string) ([]string, bool) {
	if a, ok := c.acts[name]; ok {
		return a, true
	}
	r, err := c.Get(name)
	if err != nil {
		return nil, false
	}
	a := slices.Clip(r.Base.ActionNames())
	setIn(&c.acts, name, a)
	return a, true
}

// Put stores r (new or changed).
func (c *Catalog) Put(r *Resource) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode resource %s: %w", r.Name, err)
	}
	return c.putRaw(r, raw)
}

func (c *Catalog) putRaw(r *Resource, raw []byte) error {
	if err := c.put(store.Resources, r.Name, raw); err != nil {
		return err
	}
	setIn(&c.res, r.Name, r)
	delete(c.acts, r.Name)
	return c.forget(r.Name)
}

// putNew stores a resource created from base, encoding base once per
// catalog: a base does not change once loaded.
func (c *Catalog) putNew(r *Resource, base *Base) error {
	enc, ok := c.baseJSON[base]
	if !ok {
		if err := c.storeBase(base); err != nil {
			return err
		}
		var err error
		if enc, err = json.Marshal(base); err != nil {
			return fmt.Errorf("encode base %s: %w", base.Name, err)
		}
		setIn(&c.baseJSON, base, enc)
	}
	// The record is what Put stores: the name, then the base, encoded once
	// and spliced in (json.Marshal would check and compact a
	// json.RawMessage again for every resource), then the rest. A
	// composition creates thousands of resources from a handful of bases,
	// and encoding the base was most of the cost of encoding each.
	name, err := json.Marshal(r.Name)
	if err != nil {
		return fmt.Errorf("encode resource %s: %w", r.Name, err)
	}
	rest, err := json.Marshal(recordRest{Inputs: r.Inputs, Tags: r.Tags, Meta: r.Meta, Removing: r.Removing, Masked: r.Masked})
	if err != nil {
		return fmt.Errorf("encode resource %s: %w", r.Name, err)
	}
	raw := make([]byte, 0, len(`{"name":,"base":,`)+len(name)+len(enc)+len(rest)-1)
	raw = append(append(append(append(append(raw, `{"name":`...), name...), `,"base":`...), enc...), ',')
	raw = append(raw, rest[1:]...)
	if c.bulk != nil {
		if _, pending := c.bulk.writes[bulkKey{store.Resources, r.Name}]; !pending {
			c.bulk.fresh[r.Name] = true
		}
	}
	return c.putRaw(r, raw)
}

// storeBase keeps the files of base, as LoadBase read them, in the store
// (once per content: bases.Put does nothing for a digest it has).
func (c *Catalog) storeBase(base *Base) error {
	if base.content == nil {
		return nil
	}
	info := bases.Info{Name: base.Name, Version: base.Version, Source: base.Dir, StoredAt: time.Now().UTC()}
	if err := bases.Put(c.tx, base.content, info); err != nil {
		return fmt.Errorf("store base %s: %w", base.Name, err)
	}
	return nil
}

// recordRest is what follows the base in a resource record: Resource's
// fields after Base, encoded as Resource encodes them.
type recordRest struct {
	Inputs   map[string]any `json:"inputs"`
	Tags     tags.Set       `json:"tags"`
	Meta     Meta           `json:"meta,omitzero"`
	Removing bool           `json:"removing,omitempty"`
	Masked   []string       `json:"masked,omitempty"`
}

// Delete removes the resource and every connection into or out of it.
func (c *Catalog) Delete(name string) error {
	ins, err := c.Incoming(name)
	if err != nil {
		return err
	}
	for _, conn := range ins {
		if err := c.deleteConn(conn.Emitter, conn.Receiver); err != nil {
			return err
		}
	}
	outs, err := c.Receivers(name)
	if err != nil {
		return err
	}
	for _, rcv := range outs {
		if err := c.deleteConn(name, rcv); err != nil {
			return err
		}
	}
	if err := c.del(store.Resources, name); err != nil {
		return err
	}
	setIn(&c.res, name, nil)
	delete(c.acts, name)
	delete(c.in, name)
	return c.forget(name)
}

// forget drops what the catalog derived from name: its incoming
// connections and the effective values and sensitivity of it and of
// everything downstream. Only those can change when name or a connection
// into it changes, so a long chain built link by link stays linear.
func (c *Catalog) forget(name string) error {
	delete(c.in, name)
	down, err := c.Downstream(name)
	if err != nil {
		return err
	}
	for _, d := range append(down, name) {
		delete(c.eff, d)
		delete(c.sens, d)
		delete(c.sensIn, d)
		if c.bulk != nil && c.bulk.fresh[d] {
			delete(c.bulk.writes, bulkKey{store.Effective, d})
			delete(c.bulk.writes, bulkKey{store.Effective, sensKey(d)})
			continue
		}
		if err := c.del(store.Effective, d); err != nil {
			return err
		}
		if err := c.del(store.Effective, sensKey(d)); err != nil {
			return err
		}
	}
	return nil
}

// List returns every resource sorted by name, optionally filtered by a tag
// expression (nil matches all).
func (c *Catalog) List(filter *tags.Expr) ([]*Resource, error) {
	var names []string
	if err := c.forEach(store.Resources, "", func(k string, _ []byte) error {
		names = append(names, k)
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]*Resource, 0, len(names))
	for _, n := range names {
		r, err := c.Get(n)
		if err != nil {
			return nil, err
		}
		if filter == nil || filter.Match(r.Tags) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Values are input values given by the user, before checking: raw text from
// "k=v" arguments or decoded JSON/YAML values.
type Values struct {
	Text map[string]string
	Raw  map[string]any
}

// ParseValues splits command-line arguments into values: each is "k=v"
// (v read as YAML for non-string schemas) or a JSON object.
func ParseValues(args []string) (Values, error) {
	v := Values{Text: map[string]string{}, Raw: map[string]any{}}
	for i, a := range args {
		if strings.HasPrefix(strings.TrimSpace(a), "{") {
			dec := json.NewDecoder(strings.NewReader(a))
			dec.UseNumber()
			var m map[string]any
			// The text is not echoed in errors: it may hold a sensitive
			// value, and which inputs are sensitive is not known yet.
			if err := dec.Decode(&m); err != nil {
				return v, invalidf("JSON value (argument %d): %s", i+1, jsonMessage(a, err))
			}
			if off := int(dec.InputOffset()); strings.TrimSpace(a[off:]) != "" {
				return v, invalidf("JSON value (argument %d): %s: text after the object", i+1, jsonPos(a, off))
			}
			for k, x := range m {
				if _, dup := v.Text[k]; dup {
					return v, invalidf("input %q is given twice", k)
				}
				if _, dup := v.Raw[k]; dup {
					return v, invalidf("input %q is given twice", k)
				}
				v.Raw[k] = x
			}
			continue
		}
		k, val, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return v, invalidf("argument %q: want input=value or a JSON object", a)
		}
		_, dupText := v.Text[k]
		_, dupRaw := v.Raw[k]
		if dupText || dupRaw {
			return v, invalidf("input %q is given twice", k)
		}
		v.Text[k] = val
	}
	return v, nil
}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// jsonMessage gives a JSON error with its line and column: a syntax error
// at its offset, a value cut short at the end of the text.
func jsonMessage(text string, err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return jsonPos(text, int(se.Offset)-1) + ": " + err.Error()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return jsonPos(text, len(text)) + ": unexpected end of JSON input"
	}
	return err.Error()
}

// jsonPos renders a byte offset in text as "line L column C".
func jsonPos(text string, off int) string {
	line, col := 1, 1
	for i := 0; i < off && i < len(text); i++ {
		if text[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d column %d", line, col)
}

// Names returns the inputs the values set, sorted.
func (v Values) Names() []string {
	out := make([]string, 0, len(v.Text)+len(v.Raw))
	for k := range v.Text {
		out = append(out, k)
	}
	for k := range v.Raw {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// check converts the values for the resource's schemas. Errors name the
// resource, the input, the schema and the value.
func (v Values) check(resource string, b *Base) (map[string]any, error) {
	out := map[string]any{}
	for _, name := range v.Names() {
		d, ok := b.Input(name)
		if !ok {
			return nil, invalidf("%s: unknown input %q (base %s has: %s)", resource, name, b.Name, strings.Join(b.InputNames(), ", "))
		}
		if d.Computable != "" {
			return nil, invalidf("%s: input %q is computed by base %s (computable: %s) and cannot be set; set the inputs it reads", resource, name, b.Name, d.Computable)
		}
		var (
			val any
			err error
		)
		if text, isText := v.Text[name]; isText {
			val, err = d.Schema.FromText(text)
			if err != nil {
				return nil, invalidf("%s: input %q (%s): %v", resource, name, d.Schema, maskErr(d, err))
			}
		} else {
			val, err = d.Schema.Check(v.Raw[name])
			if err != nil {
				return nil, invalidf("%s: input %q (%s): %v", resource, name, d.Schema, maskErr(d, err))
			}
		}
		out[name] = val
	}
	return out, nil
}

// maskErr keeps a sensitive value out of an error message.
func maskErr(d *InputDef, err error) error {
	if !d.Sensitive {
		return err
	}
	if ce, ok := err.(*schema.CheckError); ok {
		if ce.Got == nil || ce.Got == "" {
			return err // a missing value: nothing to hide
		}
		if ce.Path == "" {
			return fmt.Errorf("want %s (value hidden: sensitive)", ce.Want)
		}
		return fmt.Errorf("%s: want %s (value hidden: sensitive)", ce.Path, ce.Want)
	}
	return fmt.Errorf("invalid value (hidden: sensitive)")
}

// CreateSpec describes a resource to create.
type CreateSpec struct {
	Name   string
	Base   *Base
	Values Values
	Tags   tags.Set
	Meta   Meta
}

// Create validates spec and stores a new resource. Required inputs must be
// satisfied unless skipRequired is set (compositions check them after their
// connections are made).
func (c *Catalog) Create(spec CreateSpec, skipRequired bool) (*Resource, error) {
	if err := ValidName(spec.Name); err != nil {
		return nil, err
	}
	if c.Exists(spec.Name) {
		return nil, fmt.Errorf("%w: %q (choose another name or update it)", ErrExists, spec.Name)
	}
	vals, err := spec.Values.check(spec.Name, spec.Base)
	if err != nil {
		return nil, err
	}
	r := &Resource{Name: spec.Name, Base: *spec.Base, Inputs: map[string]any{}, Tags: tags.Set{}, Meta: spec.Meta}
	for _, d := range r.Base.Inputs {
		if d.Default != nil {
			r.Inputs[d.Name] = d.Default
		}
	}
	if r.Base.Node {
		r.Inputs[LocationInput] = r.Name
	}
	for k, v := range vals {
		r.Inputs[k] = v
	}
	for _, t := range r.Base.Tags {
		k, v, err := tags.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("%w: base %s: %v", ErrBase, r.Base.Name, err)
		}
		r.Tags[k] = v
	}
	for k, v := range spec.Tags {
		if k == "resource" && v != spec.Name {
			return nil, invalidf("%s: tag \"resource\" is implicit (resource=%s) and cannot be set", spec.Name, spec.Name)
		}
		r.Tags[k] = v
	}
	r.Tags["resource"] = r.Name
	if err := r.Meta.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	if !skipRequired {
		if err := c.checkRequired(r, r.Inputs); err != nil {
			return nil, err
		}
	}
	if err := c.putNew(r, spec.Base); err != nil {
		return nil, err
	}
	if !skipRequired && r.Base.computes() {
		// Evaluated now, so that an expression that fails on these
		// values refuses the resource (CheckRequired does it for a
		// composition, once its connections are made).
		if _, err := c.Effective(r.Name); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// CheckRequired verifies that every required input of the resource has an
// acceptable effective value.
func (c *Catalog) CheckRequired(name string) error {
	r, err := c.Get(name)
	if err != nil {
		return err
	}
	eff, err := c.Effective(name)
	if err != nil {
		return err
	}
	return c.checkRequired(r, eff)
}

func (c *Catalog) checkRequired(r *Resource, vals map[string]any) error {
	for _, d := range r.Base.Inputs {
		if !d.Schema.Required {
			continue
		}
		if _, err := d.Schema.Check(vals[d.Name]); err != nil {
			if v := vals[d.Name]; v == nil || v == "" {
				return invalidf("%s: input %q (%s) is required; give %s=VALUE", r.Name, d.Name, d.Schema, d.Name)
			}
			return invalidf("%s: input %q (%s): %v", r.Name, d.Name, d.Schema, maskErr(&d, err))
		}
	}
	if r.Base.Node {
		return checkNode(r.Name, vals)
	}
	return nil
}

// checkNode refuses node inputs that could never reach the node.
func checkNode(name string, vals map[string]any) error {
	switch t := vals[TransportInput]; t {
	case nil, TransportLocal:
	case TransportSSH:
		if ip, _ := vals[IPInput].(string); ip == "" {
			return invalidf("%s: input %q is required with transport ssh; give ip=ADDRESS", name, IPInput)
		}
	default:
		return invalidf("%s: input %q is %v; want local or ssh", name, TransportInput, t)
	}
	if p, ok := vals[SSHPortInput].(int64); ok && (p < 1 || p > 65535) {
		return invalidf("%s: input %q is %d; want a port from 1 to 65535", name, SSHPortInput, p)
	}
	return nil
}

// Update sets inputs and metaparameters of an existing resource. Writing an
// input that follows a connection fails and names the connection.
func (c *Catalog) Update(name string, values Values, meta Meta) (*Resource, error) {
	old, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	vals, err := values.check(name, &old.Base)
	if err != nil {
		return nil, err
	}
	conns, err := c.Incoming(name)
	if err != nil {
		return nil, err
	}
	for _, in := range values.Names() {
		for _, conn := range conns {
			for _, m := range conn.Mappings {
				if m.To == in {
					return nil, connectedf("%s: input %q follows %s.%s; disconnect first (solar disconnect %s %s)", name, in, conn.Emitter, m.From, conn.Emitter, name)
				}
			}
		}
	}
	r := *old
	r.Inputs = make(map[string]any, len(old.Inputs))
	for k, v := range old.Inputs {
		r.Inputs[k] = v
	}
	for k, v := range vals {
		r.Inputs[k] = v
	}
	if len(old.Masked) > 0 {
		// A value written by hand is what the operator gave, no longer
		// one a sensitive input gave.
		r.Masked = slices.DeleteFunc(slices.Clone(old.Masked), func(k string) bool { _, ok := vals[k]; return ok })
		if len(r.Masked) == 0 {
			r.Masked = nil
		}
	}
	r.Meta = old.Meta.Over(meta)
	if err := r.Meta.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := c.Put(&r); err != nil {
		return nil, err
	}
	eff, err := c.Effective(name)
	if err != nil {
		return nil, err
	}
	if err := c.checkRequired(&r, eff); err != nil {
		return nil, err
	}
	return &r, nil
}

// SetTags adds (or with del, removes) tags. The resource=NAME tag is
// implicit and cannot be changed.
func (c *Catalog) SetTags(name string, set tags.Set, del bool) (*Resource, error) {
	old, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	if _, ok := set["resource"]; ok {
		return nil, invalidf("tag \"resource\" is implicit (resource=%s) and cannot be changed", name)
	}
	r := *old
	r.Tags = old.Tags.Clone()
	for k, v := range set {
		if del {
			if cur, ok := r.Tags[k]; ok && (v == "" || v == cur) {
				delete(r.Tags, k)
			}
			continue
		}
		r.Tags[k] = v
	}
	return &r, c.Put(&r)
}
