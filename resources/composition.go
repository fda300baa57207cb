package resources

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/tags"
)

// Composition is a file that creates many resources, connections and rules
// at once. Resource ids are used as written (not prefixed by the name given
// on the command line); every resource gets the tag composition=NAME so the
// whole set can be selected.
type Composition struct {
	Path      string
	Resources []CompResource
	Events    []CompEvent
}

// CompResource is one entry of a composition.
type CompResource struct {
	ID       string
	From     string // base directory, relative to the composition file
	Location string
	Tags     []string
	Input    map[string]any
	Meta     map[string]string
	Line     int
}

// CompEvent is one rule text with its line, for error messages.
type CompEvent struct {
	Text string
	Line int
}

type compFile struct {
	Resources []yaml.Node `yaml:"resources"`
	Events    []yaml.Node `yaml:"events"`
}

type compEntry struct {
	ID       string            `yaml:"id"`
	From     string            `yaml:"from"`
	Location string            `yaml:"location"`
	Tags     []string          `yaml:"tags"`
	Input    map[string]any    `yaml:"-"` // from InputNode, by decodeInput
	Meta     map[string]string `yaml:"meta"`

	InputNode yaml.Node `yaml:"input"`
}

// IsComposition reports whether path names a composition file rather than
// a base directory.
func IsComposition(path string) bool {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		return false
	}
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml"
}

// LoadComposition reads a composition file. Errors name the file and line.
// String values in from and input may use ${NAME} for environment
// variables; an unset variable is an error, never an empty string.
func LoadComposition(path string, getenv func(string) string) (*Composition, error) {
	raw, err := ReadInputFile(path, CompositionMax)
	if errors.Is(err, ErrInputFile) {
		return nil, fmt.Errorf("%w: composition: %w", ErrBase, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: composition %s: %v", ErrBase, path, err)
	}
	f, err := parseComposition(raw)
	if err != nil {
		return nil, invalidf("%s: %s", path, yamlMessage(err))
	}
	c := &Composition{Path: path}
	dir := filepath.Dir(path)
	for i := range f.Resources {
		n := &f.Resources[i]
		if err := knownKeys(n, "id", "from", "location", "tags", "input", "meta"); err != nil {
			return nil, invalidf("%s:%d: %s", path, err.line, err.msg)
		}
		var e compEntry
		var err error
		if err = decodeEntry(n, &e); err != nil {
			return nil, invalidf("%s:%d: %s", path, n.Line, yamlMessage(err))
		}
		if e.ID == "" || e.From == "" {
			return nil, invalidf("%s:%d: each resource needs id and from", path, n.Line)
		}
		if e.Input, err = decodeInput(path, &e.InputNode); err != nil {
			return nil, err
		}
		if err := expandEnv(&e, getenv); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrInvalid, path, n.Line, err)
		}
		from := e.From
		if !filepath.IsAbs(from) {
			from = filepath.Join(dir, from)
		}
		c.Resources = append(c.Resources, CompResource{ID: e.ID, From: from, Location: e.Location, Tags: e.Tags, Input: e.Input, Meta: e.Meta, Line: n.Line})
	}
	for i := range f.Events {
		n := &f.Events[i]
		if n.Kind != yaml.ScalarNode {
			return nil, invalidf("%s:%d: each event is one rule as text", path, n.Line)
		}
		c.Events = append(c.Events, CompEvent{Text: n.Value, Line: n.Line})
	}
	return c, nil
}

// decodeEntry decodes one resource entry of a composition. Entries most
// often hold plain text, which it reads from the node itself; any other
// entry (another kind of scalar, an alias, a field given twice) is left to
// yaml.v3, whose decoding by reflection took a fifth of the time a
// 100,000-entry composition took to load.
func decodeEntry(n *yaml.Node, e *compEntry) error {
	if plainEntry(n, e) {
		return nil
	}
	*e = compEntry{}
	return n.Decode(e)
}

// plainEntry fills e from n and reports true when every field of n is
// plain text (tags a list of it, meta a mapping of it), so that yaml.v3
// would decode it as the text as written.
func plainEntry(n *yaml.Node, e *compEntry) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	seen := make([]string, 0, 6) // a field given twice is yaml.v3's to report
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !plainText(k) || slices.Contains(seen, k.Value) {
			return false
		}
		seen = append(seen, k.Value)
		switch k.Value {
		case "id", "from", "location":
			if !plainText(v) {
				return false
			}
			switch k.Value {
			case "id":
				e.ID = v.Value
			case "from":
				e.From = v.Value
			default:
				e.Location = v.Value
			}
		case "tags":
			if v.Kind != yaml.SequenceNode {
				return false
			}
			e.Tags = make([]string, 0, len(v.Content))
			for _, t := range v.Content {
				if !plainText(t) {
					return false
				}
				e.Tags = append(e.Tags, t.Value)
			}
		case "meta":
			if v.Kind != yaml.MappingNode {
				return false
			}
			e.Meta = make(map[string]string, len(v.Content)/2)
			for j := 0; j+1 < len(v.Content); j += 2 {
				mk, mv := v.Content[j], v.Content[j+1]
				if !plainText(mk) || !plainText(mv) {
					return false
				}
				if _, dup := e.Meta[mk.Value]; dup {
					return false
				}
				e.Meta[mk.Value] = mv.Value
			}
		case "input":
			e.InputNode = *v
		default:
			return false
		}
	}
	return true
}

// plainText reports whether n is a scalar that yaml.v3 reads as the string
// n.Value: plain text that resolves to no other type, quoted, a block, or
// tagged !!str.
func plainText(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!str" }

// decodeInput decodes an entry's input mapping (input name -> value) in time
// linear in its size: yaml.v3 checks the keys of a mapping it decodes
// pairwise, which made one entry of 200,000 inputs take minutes. Each value
// is decoded on its own by yaml.v3, and repeated names are found with a map.
func decodeInput(path string, n *yaml.Node) (map[string]any, error) {
	switch {
	case n.Kind == 0, n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return nil, nil
	case n.Kind == yaml.AliasNode || n.Kind == yaml.MappingNode && hasMergeKey(n):
		// Rare and small: leave aliases and merge keys to yaml.v3.
		var m map[string]any
		if err := n.Decode(&m); err != nil {
			return nil, invalidf("%s:%d: input: %s", path, n.Line, yamlMessage(err))
		}
		return m, nil
	case n.Kind != yaml.MappingNode:
		return nil, invalidf("%s:%d: input must be a mapping of input name -> value", path, n.Line)
	}
	m := make(map[string]any, len(n.Content)/2)
	lines := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, invalidf("%s:%d: an input name must be plain text", path, k.Line)
		}
		if first, dup := lines[k.Value]; dup {
			return nil, invalidf("%s:%d: input %q is given twice (first at line %d)", path, k.Line, k.Value, first)
		}
		lines[k.Value] = k.Line
		if plainText(v) {
			m[k.Value] = v.Value
			continue
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return nil, invalidf("%s:%d: input %q: %s", path, v.Line, k.Value, yamlMessage(err))
		}
		m[k.Value] = x
	}
	return m, nil
}

// hasMergeKey reports whether mapping n holds a YAML merge key ("<<").
func hasMergeKey(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge") {
			return true
		}
	}
	return false
}

var refRe = regexp.MustCompile(`^([a-z0-9][a-z0-9_.-]*)::([a-z_][a-z0-9_]*)$`)

// ref splits "other::input".
func ref(v any) (res, input string, ok bool) {
	s, isStr := v.(string)
	if !isStr {
		return "", "", false
	}
	m := refRe.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// CompositionResult is what a composition created.
type CompositionResult struct {
	Resources   []*Resource
	Connections []Connection
}

// CreateComposition creates every resource of comp, then connects the
// "other::input" references and locations, then checks required inputs.
// The caller's transaction makes it all-or-nothing. Its writes reach the
// transaction in key order when it returns (see bulk).
func (c *Catalog) CreateComposition(name string, comp *Composition) (res *CompositionResult, err error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if c.bulk == nil {
		// A resource, and for a connection two keys and the receiver's
		// effective values and sensitivity.
		c.startBulk(5 * len(comp.Resources))
		defer func() {
			if ferr := c.endBulk(); ferr != nil && err == nil {
				res, err = nil, ferr
			}
		}()
	}
	bases := map[string]*Base{}
	res = &CompositionResult{}
	type pending struct {
		emitter, receiver string
		m                 Mapping
		line              int
	}
	var conns []pending
	seen := map[string]int{}
	for _, e := range comp.Resources {
		where := func() string { return fmt.Sprintf("%s:%d", comp.Path, e.Line) } // for errors only
		if prev, dup := seen[e.ID]; dup {
			return nil, fmt.Errorf("%w: %s: id %q already used at line %d", ErrExists, where(), e.ID, prev)
		}
		seen[e.ID] = e.Line
		b, ok := bases[e.From]
		if !ok {
			var err error
			if b, err = LoadBase(e.From); err != nil {
				return nil, fmt.Errorf("%s: %w", where(), err)
			}
			bases[e.From] = b
		}
		vals := Values{Raw: map[string]any{}} // no text: a composition's values are YAML
		var partial map[string]any            // objects that also take keys by reference
		keys := make([]string, 0, len(e.Input))
		for k := range e.Input {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := e.Input[k]
			if r, in, ok := ref(v); ok {
				conns = append(conns, pending{r, e.ID, Mapping{From: in, To: k}, e.Line})
				continue
			}
			if list, ok := v.([]any); ok && len(list) > 0 && allRefs(list) {
				for _, el := range list {
					r, in, _ := ref(el)
					conns = append(conns, pending{r, e.ID, Mapping{From: in, To: k}, e.Line})
				}
				continue
			}
			if obj, ok := v.(map[string]any); ok {
				plain := map[string]any{}
				refKeys := map[string]bool{}
				okeys := make([]string, 0, len(obj))
				for ok := range obj {
					okeys = append(okeys, ok)
				}
				sort.Strings(okeys)
				for _, ok := range okeys {
					if r, in, isRef := ref(obj[ok]); isRef {
						conns = append(conns, pending{r, e.ID, Mapping{From: in, To: k, Key: ok}, e.Line})
						refKeys[ok] = true
					} else {
						plain[ok] = obj[ok]
					}
				}
				d, known := b.Input(k)
				switch {
				case len(plain) == 0:
				case len(refKeys) > 0 && known && d.Schema.Kind == schema.Object:
					// The referenced keys arrive with the connections, so a
					// required one must not fail the check of the others.
					val, err := withOptional(d.Schema, refKeys).Check(plain)
					if err != nil {
						return nil, invalidf("%s: %s: input %q (%s): %v", where(), e.ID, k, d.Schema, maskErr(d, err))
					}
					if partial == nil {
						partial = map[string]any{}
					}
					partial[k] = val
				default:
					vals.Raw[k] = plain
				}
				continue
			}
			vals.Raw[k] = v
		}
		if e.Location != "" {
			conns = append(conns, pending{e.Location, e.ID, Mapping{From: LocationInput, To: LocationInput}, e.Line})
		}
		ts, err := tags.ParseList(e.Tags)
		if err != nil {
			return nil, invalidf("%s: %v", where(), err)
		}
		ts["composition"] = name
		var meta Meta
		mkeys := make([]string, 0, len(e.Meta))
		for k := range e.Meta {
			mkeys = append(mkeys, k)
		}
		sort.Strings(mkeys)
		for _, k := range mkeys {
			if err := meta.SetMeta(k, e.Meta[k]); err != nil {
				return nil, fmt.Errorf("%s: %w", where(), err)
			}
		}
		r, err := c.Create(CreateSpec{Name: e.ID, Base: b, Values: vals, Tags: ts, Meta: meta}, true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where(), err)
		}
		if len(partial) > 0 {
			for k, v := range partial {
				r.Inputs[k] = v
			}
			if err := c.Put(r); err != nil {
				return nil, err
			}
		}
		res.Resources = append(res.Resources, r)
	}
	// Group mappings per (emitter, receiver) so each pair is one connection.
	type pair struct{ e, r string }
	var order []pair
	grouped := map[pair][]Mapping{}
	lines := map[pair]int{}
	for _, p := range conns {
		k := pair{p.emitter, p.receiver}
		if _, ok := grouped[k]; !ok {
			order = append(order, k)
			lines[k] = p.line
		}
		grouped[k] = append(grouped[k], p.m)
	}
	for _, k := range order {
		conn, err := c.Connect(k.e, k.r, grouped[k])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", comp.Path, lines[k], err)
		}
		res.Connections = append(res.Connections, *conn)
	}
	for _, r := range res.Resources {
		if err := c.CheckRequired(r.Name); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// withOptional returns a copy of the object schema s in which keys are
// optional.
func withOptional(s *schema.Schema, keys map[string]bool) *schema.Schema {
	cp := *s
	cp.Required = false
	cp.Fields = make([]schema.Field, len(s.Fields))
	for i, f := range s.Fields {
		if keys[f.Name] {
			fs := *f.Schema
			fs.Required = false
			f.Schema = &fs
		}
		cp.Fields[i] = f
	}
	return &cp
}

func allRefs(list []any) bool {
	for _, el := range list {
		if _, _, ok := ref(el); !ok {
			return false
		}
	}
	return true
}

var envRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${NAME} in the entry's strings.
func expandEnv(e *compEntry, getenv func(string) string) error {
	var missing string
	expand := func(s string) string {
		if !strings.Contains(s, "${") {
			return s
		}
		return envRe.ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			v := getenv(name)
			if v == "" && missing == "" {
				missing = name
			}
			return v
		})
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return expand(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	e.From = expand(e.From)
	for k, v := range e.Input {
		e.Input[k] = walk(v)
	}
	if missing != "" {
		return fmt.Errorf("resource %s uses ${%s}, which is not set in the environment", e.ID, missing)
	}
	return nil
}
