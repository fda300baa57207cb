package resources

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/resources/schema"
)

// Errors for bad input. Each returned error wraps one of these and names the
// offending thing; the CLI maps all of them to exit status 2.
var (
	// ErrBase means a base directory or its meta.yaml is missing or invalid
	// (the sentinel of package bases, which reads the directory).
	ErrBase = bases.ErrBase
	// ErrInvalid means a value, name, mapping or tag given by the user is
	// not acceptable.
	ErrInvalid = invalid.New("invalid input")
	// ErrNotFound means a named resource does not exist.
	ErrNotFound = invalid.New("no such resource")
	// ErrExists means a resource with that name already exists.
	ErrExists = invalid.New("resource already exists")
	// ErrConnected means a write targeted an input that follows a connection.
	ErrConnected = invalid.New("input is connected")
	// ErrCycle means a connection would make data flow in a circle.
	ErrCycle = invalid.New("data cycle")
)

// userError is a message for the user whose category is a sentinel; the
// sentinel's own text is not repeated in the message.
type userError struct {
	msg  string
	kind error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.kind }

func invalidf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...), kind: ErrInvalid}
}

func connectedf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...), kind: ErrConnected}
}

// LocationInput is the implicit input every resource has: the node it runs
// on ("" for the local machine).
const LocationInput = "location"

// The inputs of a node (a base with node: true) that say how to reach it.
const (
	TransportInput = "transport" // "local" or "ssh"
	IPInput        = "ip"
	SSHPortInput   = "ssh_port"
	SSHUserInput   = "ssh_user" // "" is the controller's user name
	SSHKeyInput    = "ssh_key"  // a private key file on the controller; "" is the agent, then ~/.ssh/id_*
)

// Transports a node may use.
const (
	TransportLocal = "local"
	TransportSSH   = "ssh"
)

// nodeInputs are added to a node base that does not declare them.
func nodeInputs() []InputDef {
	return []InputDef{
		{Name: TransportInput, Schema: schema.MustParse("str"), Default: TransportLocal},
		{Name: IPInput, Schema: schema.MustParse("str"), Default: ""},
		{Name: SSHPortInput, Schema: schema.MustParse("int"), Default: int64(22)},
		{Name: SSHUserInput, Schema: schema.MustParse("str"), Default: ""},
		{Name: SSHKeyInput, Schema: schema.MustParse("str"), Default: ""},
	}
}

// InputDef declares one input of a base.
type InputDef struct {
	Name      string         `json:"name"`
	Schema    *schema.Schema `json:"-"`
	Default   any            `json:"default,omitempty"`
	Sensitive bool           `json:"sensitive,omitempty"`
	// Computable is the expression that computes the input from the
	// resource's other effective inputs (meta.yaml computable:); "" for
	// an input set by hand or by a connection.
	Computable string `json:"computable,omitempty"`
}

type inputDefJSON struct {
	Name       string `json:"name"`
	Schema     string `json:"schema"`
	Default    any    `json:"default,omitempty"`
	Sensitive  bool   `json:"sensitive,omitempty"`
	Computable string `json:"computable,omitempty"`
}

// MarshalJSON stores the schema as its canonical text.
func (d InputDef) MarshalJSON() ([]byte, error) {
	return json.Marshal(inputDefJSON{Name: d.Name, Schema: d.Schema.String(), Default: d.Default, Sensitive: d.Sensitive, Computable: d.Computable})
}

// schemaCache avoids re-parsing the same schema text for every stored
// resource a command loads; bases share a handful of schema texts.
var schemaCache sync.Map // string -> *schema.Schema

func parseSchemaCached(text string) (*schema.Schema, error) {
	if s, ok := schemaCache.Load(text); ok {
		return s.(*schema.Schema), nil
	}
	s, err := schema.Parse(text)
	if err != nil {
		return nil, err
	}
	schemaCache.Store(text, s)
	return s, nil
}

// UnmarshalJSON restores the schema from its text.
func (d *InputDef) UnmarshalJSON(b []byte) error {
	var j inputDefJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	s, err := parseSchemaCached(j.Schema)
	if err != nil {
		return err
	}
	def := j.Default
	if def != nil {
		if def, err = s.Check(def); err != nil {
			return err
		}
	}
	*d = InputDef{Name: j.Name, Schema: s, Default: def, Sensitive: j.Sensitive, Computable: j.Computable}
	return nil
}

// Duration is a time.Duration written as "1s" in YAML and JSON.
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration written as text.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// String renders the duration ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// Meta holds execution metaparameters. Nil fields are unset: a resource's
// Meta overrides its base's field by field.
type Meta struct {
	Retry   *int      `json:"retry,omitempty" yaml:"retry"`
	Delay   *Duration `json:"delay,omitempty" yaml:"delay"`
	Timeout *Duration `json:"timeout,omitempty" yaml:"timeout"`
	Sema    []string  `json:"sema,omitempty" yaml:"sema"`
	// DriftIgnore adds, for one resource, to its base's DriftIgnore.
	DriftIgnore []string `json:"drift_ignore,omitempty" yaml:"drift_ignore"`
	// Rate names shared rates, Limit and Burst the resource's own (rate.go).
	Rate  []string `json:"rate,omitempty" yaml:"rate"`
	Limit string   `json:"limit,omitempty" yaml:"limit"`
	Burst *int     `json:"burst,omitempty" yaml:"burst"`
}

// Over returns m with every field set in o replacing m's.
func (m Meta) Over(o Meta) Meta {
	if o.Retry != nil {
		m.Retry = o.Retry
	}
	if o.Delay != nil {
		m.Delay = o.Delay
	}
	if o.Timeout != nil {
		m.Timeout = o.Timeout
	}
	if o.Sema != nil {
		m.Sema = o.Sema
	}
	if o.DriftIgnore != nil {
		m.DriftIgnore = o.DriftIgnore
	}
	if o.Rate != nil {
		m.Rate = o.Rate
	}
	if o.Limit != "" {
		m.Limit = o.Limit
	}
	if o.Burst != nil {
		m.Burst = o.Burst
	}
	return m
}

var semaRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+:[1-9][0-9]*$`)

// SetMeta parses one "key=value" metaparameter into m. A list-valued key
// (IsListMeta: sema) appends its comma-separated items to what m has, so it
// may be given again; a scalar key (retry, delay, timeout) already set in m
// is refused, naming it, rather than one value silently winning.
func (m *Meta) SetMeta(key, value string) error {
	if ok, err := m.setRateMeta(key, value); ok {
		if err != nil {
			return err
		}
		return m.validate()
	}
	switch key {
	case "retry":
		if m.Retry != nil {
			return metaTwice(key)
		}
		var n int
		if _, err := fmt.Sscanf(value, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != value {
			return invalidf("meta retry=%q: want a whole number ≥ 0", value)
		}
		m.Retry = &n
	case "delay", "timeout":
		field := &m.Delay
		if key == "timeout" {
			field = &m.Timeout
		}
		if *field != nil {
			return metaTwice(key)
		}
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return invalidf("meta %s=%q: want a duration such as 1s or 2m", key, value)
		}
		dd := Duration(d)
		*field = &dd
	case "sema":
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				m.Sema = append(m.Sema, s)
			}
		}
	case "drift_ignore":
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if !driftNameRe.MatchString(s) {
				return invalidf("meta drift_ignore=%q: want names such as an input's ([a-z_][a-z0-9_]*)", value)
			}
			m.DriftIgnore = append(m.DriftIgnore, s)
		}
	default:
		return invalidf("unknown metaparameter %q (want retry, delay, timeout, sema, drift_ignore, rate, limit or burst)", key)
	}
	return m.validate()
}

// IsListMeta reports whether the metaparameter key holds a list, to which
// SetMeta appends, rather than one value.
func IsListMeta(key string) bool {
	return key == "sema" || key == "drift_ignore" || key == "rate"
}

func metaTwice(key string) error {
	return invalidf("meta %s given twice: it takes one value (only sema, drift_ignore and rate may be repeated)", key)
}

func (m Meta) validate() error {
	if m.Retry != nil && *m.Retry < 0 {
		return invalidf("meta retry=%d: want ≥ 0", *m.Retry)
	}
	for _, s := range m.Sema {
		if !semaRe.MatchString(s) {
			return invalidf("meta sema %q: want NAME:COUNT with COUNT ≥ 1, e.g. db:1", s)
		}
	}
	return m.validateRates()
}

// Base is a loaded resource base. A resource keeps a copy of it.
type Base struct {
	Name string `json:"name"`
	// Dir is the directory the base was read from, on the machine that
	// read it: the default of "resource upgrade". Nothing runs from it.
	Dir string `json:"dir"`
	// Digest names the base's files in the store (package bases), which
	// runners materialize on the machine that runs them. "" in a record
	// from before bases were stored.
	Digest  string            `json:"digest,omitempty"`
	Handler string            `json:"handler"`
	Version string            `json:"version,omitempty"`
	Node    bool              `json:"node,omitempty"`
	Actions map[string]string `json:"actions"`
	// Check lists the actions whose scripts honour SOLAR_CHECK=1: they
	// change nothing and report whether they would (solar orch check).
	Check []string `json:"check,omitempty"`
	// DriftIgnore names what solar drift ignores in a check's changes
	// (meta.yaml drift: {ignore: [...]}): inputs or aspects a check
	// reports that are expected to move on their own.
	DriftIgnore []string   `json:"drift_ignore,omitempty"`
	Inputs      []InputDef `json:"inputs"`
	Meta        Meta       `json:"meta,omitzero"`
	Tags        []string   `json:"tags,omitempty"`

	// Batch maps an action to its batch script (meta.yaml batch:), which
	// runs several tasks of that action on one node at once (batch.go).
	Batch map[string]string `json:"batch,omitempty"`
	// BatchMax bounds the members of one batch (meta.yaml batch_max:);
	// 0 is no bound.
	BatchMax int `json:"batch_max,omitempty"`

	// content is the base's files as LoadBase read them, until a catalog
	// stores them (putNew).
	content *bases.Content

	// index maps input names to their position in Inputs, so that a base
	// with 100,000 inputs is not searched linearly per input. Built once
	// the inputs are final (reindex); read-only after, so copies share it.
	index map[string]int
}

// reindex builds the input index.
func (b *Base) reindex() {
	b.index = make(map[string]int, len(b.Inputs))
	for i := range b.Inputs {
		b.index[b.Inputs[i].Name] = i
	}
}

// Input returns the definition of the named input.
func (b *Base) Input(name string) (*InputDef, bool) {
	if b.index != nil && len(b.index) == len(b.Inputs) {
		if i, ok := b.index[name]; ok && b.Inputs[i].Name == name {
			return &b.Inputs[i], true
		}
		return nil, false
	}
	for i := range b.Inputs {
		if b.Inputs[i].Name == name {
			return &b.Inputs[i], true
		}
	}
	return nil, false
}

// InputNames lists the inputs in declaration order.
func (b *Base) InputNames() []string {
	out := make([]string, len(b.Inputs))
	for i, d := range b.Inputs {
		out[i] = d.Name
	}
	return out
}

// Checks reports whether the base's script for action supports check mode.
func (b *Base) Checks(action string) bool { return slices.Contains(b.Check, action) }

// ActionNames lists the actions sorted by name.
func (b *Base) ActionNames() []string {
	out := make([]string, 0, len(b.Actions))
	for a := range b.Actions {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

type metaFile struct {
	Handler string            `yaml:"handler"`
	Version string            `yaml:"version"`
	Node    bool              `yaml:"node"`
	Actions map[string]string `yaml:"actions"`
	Check   []string          `yaml:"check"`
	Drift   struct {
		Ignore []string `yaml:"ignore"`
	} `yaml:"drift"`
	Inputs yaml.Node `yaml:"inputs"`
	Meta   struct {
		Retry   *int     `yaml:"retry"`
		Delay   string   `yaml:"delay"`
		Timeout string   `yaml:"timeout"`
		Sema    []string `yaml:"sema"`
		Rate    []string `yaml:"rate"`
		Limit   string   `yaml:"limit"`
		Burst   *int     `yaml:"burst"`
	} `yaml:"meta"`
	Tags []string `yaml:"tags"`

	// Batch and BatchMax: see Base (batch.go checks them).
	Batch    map[string]string `yaml:"batch"`
	BatchMax *int              `yaml:"batch_max"`
}

type inputFile struct {
	Schema    string `yaml:"schema"`
	Value     any    `yaml:"value"`
	Sensitive bool   `yaml:"sensitive"`
	// Computable is an expression computing the input (computable.go).
	Computable string `yaml:"computable"`
}

var (
	driftNameRe  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	inputNameRe  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	actionNameRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// LoadBase reads the base in dir, its files kept to be stored with the
// first resource made of it. Errors wrap ErrBase and name the file and,
// for YAML problems, the line.
func LoadBase(dir string) (*Base, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBase, dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: base directory %s does not exist", ErrBase, dir)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (a base is a directory with meta.yaml)", ErrBase, dir)
	}
	c, err := bases.Read(dir)
	if err != nil {
		return nil, err
	}
	return FromContent(c, filepath.Base(abs), abs, dir)
}

// FromContent reads the base whose files are c: name is its name, source
// the directory it came from, shown how errors name that directory.
func FromContent(c *bases.Content, name, source, shown string) (*Base, error) {
	dir := shown
	f, ok := c.File("meta.yaml")
	if !ok || !f.Mode.IsRegular() {
		return nil, fmt.Errorf("%w: %s has no meta.yaml", ErrBase, dir)
	}
	metaPath := filepath.Join(dir, "meta.yaml")
	if int64(len(f.Data)) > MetaMax {
		return nil, fmt.Errorf("%w: %w", ErrBase, badFile("%s is %d bytes, more than the %d solar reads", metaPath, len(f.Data), MetaMax))
	}
	raw := f.Data
	if err := textOnly(metaPath, raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBase, err)
	}
	shown = metaPath
	var mf metaFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	// An empty (or comments only) meta.yaml is a base with no actions and
	// no inputs, as "{}" is; the decoder reports it as io.EOF.
	if err := dec.Decode(&mf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: %s", ErrBase, shown, yamlMessage(err))
	}
	b := &Base{Name: name, Dir: source, Digest: c.Digest, content: c, Handler: mf.Handler, Version: mf.Version, Node: mf.Node, Actions: mf.Actions, Tags: mf.Tags}
	if b.Handler == "" {
		b.Handler = "shell"
	}
	// The handlers are listed once, in package handler, which runs them.
	if !handler.Known(b.Handler) {
		return nil, fmt.Errorf("%w: %s: unknown handler %q (want %s)", ErrBase, shown, b.Handler, handler.KnownList())
	}
	if b.Actions == nil {
		b.Actions = map[string]string{}
	}
	for _, name := range b.ActionNames() {
		if !actionNameRe.MatchString(name) {
			return nil, fmt.Errorf("%w: %s: invalid action name %q (want [a-z_][a-z0-9_]*)", ErrBase, shown, name)
		}
		script := b.Actions[name]
		if b.Handler == "shell" || b.Handler == "ansible" {
			if script == "" {
				return nil, fmt.Errorf("%w: %s: action %q has no script", ErrBase, shown, name)
			}
			if _, ok := c.File(path.Clean(filepath.ToSlash(script))); !ok {
				return nil, fmt.Errorf("%w: %s: action %q: script %s does not exist", ErrBase, shown, name, script)
			}
		}
	}
	for _, name := range mf.Check {
		if _, ok := b.Actions[name]; !ok {
			return nil, fmt.Errorf("%w: %s: check lists %q, which is not an action of the base", ErrBase, shown, name)
		}
		if !slices.Contains(b.Check, name) {
			b.Check = append(b.Check, name)
		}
	}
	sort.Strings(b.Check)
	for _, name := range mf.Drift.Ignore {
		if !driftNameRe.MatchString(name) {
			return nil, fmt.Errorf("%w: %s: drift ignore lists %q: want a name such as an input's ([a-z_][a-z0-9_]*)", ErrBase, shown, name)
		}
		b.DriftIgnore = append(b.DriftIgnore, name)
	}
	if err := cmp.Or(b.loadBatch(c, mf.Batch, mf.BatchMax, shown), b.loadInputs(&mf.Inputs, shown)); err != nil {
		return nil, err
	}
	b.reindex()
	if _, ok := b.Input(LocationInput); !ok {
		b.Inputs = append(b.Inputs, InputDef{Name: LocationInput, Schema: schema.MustParse("str"), Default: ""})
	}
	if b.Node {
		// Every node can say how to reach it, whether its base declares
		// the inputs or not.
		for _, d := range nodeInputs() {
			if _, ok := b.Input(d.Name); !ok {
				b.Inputs = append(b.Inputs, d)
			}
		}
	}
	b.reindex()
	m := Meta{Retry: mf.Meta.Retry, Sema: mf.Meta.Sema, Rate: mf.Meta.Rate, Limit: mf.Meta.Limit, Burst: mf.Meta.Burst}
	for _, f := range []struct {
		key, text string
		dst       **Duration
	}{{"delay", mf.Meta.Delay, &m.Delay}, {"timeout", mf.Meta.Timeout, &m.Timeout}} {
		if f.text == "" {
			continue
		}
		d, err := time.ParseDuration(f.text)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%w: %s: meta %s %q: want a duration such as 1s or 2m", ErrBase, shown, f.key, f.text)
		}
		dd := Duration(d)
		*f.dst = &dd
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBase, shown, err)
	}
	b.Meta = m
	return b.compiled(shown)
}

func (b *Base) loadInputs(n *yaml.Node, shown string) error {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%w: %s:%d: inputs must be a mapping of name -> {schema, value}", ErrBase, shown, n.Line)
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		name := key.Value
		if !inputNameRe.MatchString(name) {
			return fmt.Errorf("%w: %s:%d: invalid input name %q (want [a-z_][a-z0-9_]*)", ErrBase, shown, key.Line, name)
		}
		if err := knownKeys(val, "schema", "value", "sensitive", "computable"); err != nil {
			return fmt.Errorf("%w: %s:%v: input %q: %v", ErrBase, shown, err.line, name, err.msg)
		}
		var f inputFile
		if err := val.Decode(&f); err != nil {
			return fmt.Errorf("%w: %s:%d: input %q: %s", ErrBase, shown, val.Line, name, yamlMessage(err))
		}
		if f.Schema == "" {
			return fmt.Errorf("%w: %s:%d: input %q has no schema", ErrBase, shown, val.Line, name)
		}
		s, err := parseSchemaCached(f.Schema)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: input %q: %v", ErrBase, shown, val.Line, name, err)
		}
		var def any
		if f.Value != nil {
			if def, err = s.Check(f.Value); err != nil {
				return fmt.Errorf("%w: %s:%d: input %q: default value: %v", ErrBase, shown, val.Line, name, err)
			}
		}
		if seen[name] {
			return fmt.Errorf("%w: %s:%d: input %q declared twice", ErrBase, shown, key.Line, name)
		}
		seen[name] = true
		if f.Computable != "" && f.Value != nil {
			return fmt.Errorf("%w: %s:%d: input %q: a computable input has no value (its expression gives it); drop value", ErrBase, shown, val.Line, name)
		}
		b.Inputs = append(b.Inputs, InputDef{Name: name, Schema: s, Default: def, Sensitive: f.Sensitive, Computable: f.Computable})
	}
	return nil
}

// keyError is an unknown key found by knownKeys, with its line.
type keyError struct {
	line int
	msg  string
}

// knownKeys reports the first key of mapping n that is not one of keys.
// yaml.Node.Decode ignores unknown fields even when the document's decoder
// has KnownFields set, so a typo such as "vaule" would silently drop a value.
func knownKeys(n *yaml.Node, keys ...string) *keyError {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(keys, k.Value) {
			return &keyError{line: k.Line, msg: fmt.Sprintf("unknown field %q (want %s)", k.Value, strings.Join(keys, ", "))}
		}
	}
	return nil
}

// yamlMessage shortens yaml.v3 errors ("yaml: line 3: ...") to "line 3: ...".
func yamlMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return msg
}
