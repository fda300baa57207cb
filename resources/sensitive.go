package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
)

// Sensitivity follows the value: an input whose effective value comes,
// through connections, from a sensitive input is sensitive too, however
// many connections lie between, and is masked wherever the source would be.
// It is decided the way apply decides the value: a simple input takes the
// sensitivity of the last connection into it; a list input fed element by
// element, or an object input fed key by key, is masked whole as soon as
// one sensitive source feeds it. An input its base declares sensitive is
// always masked, an own value marked Masked wherever it shows;
// disconnecting gives an input back its own sensitivity with its own value.
//
// Like effective values, sensitivity is kept per resource: in the catalog
// for the transaction, and in the effective bucket (under sensKey) by write
// transactions, so that the tail of a long chain is one lookup and building
// a chain link by link stays linear. forget drops both with the effective
// values.

// SensitiveInputs returns the inputs of resource name whose values must be
// masked: those its base declares sensitive, its own values marked Masked,
// and those a sensitive input feeds through connections, directly or not.
// The map is shared with the catalog's cache; do not modify it.
func (c *Catalog) SensitiveInputs(name string) (map[string]bool, error) {
	return c.sensitive(name, 0)
}

// sensKey is where the effective bucket keeps a resource's sensitivity. It
// cannot be a resource name (those have no NUL), under which the bucket
// keeps effective values, and sorts next to name's: bbolt splits pages only
// at commit, so keys that a long transaction appends in order stay cheap.
func sensKey(name string) string { return name + "\x00sensitive" }

// sensRecord is a resource's sensitivity as kept in the store. Effective is
// the digest of the effective values' record it was computed with: a solar
// that does not keep sensitivity forgets and rewrites those but leaves this
// record, which then no longer matches and is not trusted.
type sensRecord struct {
	Effective string   `json:"effective"`
	Inputs    []string `json:"inputs"`
}

// digest names an effective values' record: the first 16 bytes of its
// SHA-256, in hex. It only tells the record apart from another one written
// in its place, so half the hash is plenty and keeps 32 bytes per resource
// out of the store. A record kept with the whole hash (by an earlier
// solar) no longer matches and is computed again.
func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

func (c *Catalog) sensitive(name string, depth int) (map[string]bool, error) {
	if m, ok := c.sens[name]; ok {
		return m, nil
	}
	if m, ok, err := c.storedSensitive(name); err != nil || ok {
		return m, err
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
	if len(conns) > 0 {
		setIn(&c.sensBusy, name, true)
		defer delete(c.sensBusy, name)
	}
	out, err := c.foldSensitive(r, conns, "", depth)
	if err != nil {
		return nil, err
	}
	setIn(&c.sens, name, out)
	if c.tx.Writable() && len(conns) > 0 {
		if err := c.keepSensitive(name, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keepSensitive writes a resource's sensitivity next to its effective
// values, computing those first if they are not kept yet.
func (c *Catalog) keepSensitive(name string, sens map[string]bool) error {
	if _, err := c.Effective(name); err != nil {
		return err
	}
	raw, err := c.get(store.Effective, name)
	if err != nil {
		return nil // nothing kept to tie it to (a resource with no connections)
	}
	rec := sensRecord{Effective: digest(raw), Inputs: make([]string, 0, len(sens))}
	for k := range sens {
		rec.Inputs = append(rec.Inputs, k)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return c.put(store.Effective, sensKey(name), b)
}

// storedSensitive reads the sensitivity a write transaction kept, if it
// still belongs to the kept effective values (kept only for a resource
// that connections feed, as those are).
func (c *Catalog) storedSensitive(name string) (map[string]bool, bool, error) {
	if fed, err := c.fed(name); err != nil || !fed {
		return nil, false, err
	}
	raw, err := c.get(store.Effective, sensKey(name))
	if err != nil {
		return nil, false, nil
	}
	var rec sensRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, false, fmt.Errorf("decode sensitive inputs of %s: %w", name, err)
	}
	eff, err := c.get(store.Effective, name)
	if err != nil || digest(eff) != rec.Effective {
		return nil, false, nil
	}
	out := make(map[string]bool, len(rec.Inputs))
	for _, k := range rec.Inputs {
		out[k] = true
	}
	setIn(&c.sens, name, out)
	return out, true, nil
}

// sensitiveFrom reports whether the effective value of one input of
// emitter is sensitive. As in emitted, when emitter is being computed
// further up (two resources feeding each other through different inputs)
// only that input is computed, which cannot loop: checkCycle refuses cycles
// between inputs.
func (c *Catalog) sensitiveFrom(emitter, input string, depth int) (bool, error) {
	if !c.sensBusy[emitter] {
		m, err := c.sensitive(emitter, depth)
		return m[input], err
	}
	if v, ok := c.sensIn[emitter][input]; ok {
		return v, nil
	}
	if depth > maxDepth {
		return false, fmt.Errorf("%w: connections around %s are too deep or circular", ErrCycle, emitter)
	}
	r, err := c.Get(emitter)
	if err != nil {
		return false, err
	}
	conns, err := c.Incoming(emitter)
	if err != nil {
		return false, err
	}
	m, err := c.foldSensitive(r, conns, input, depth)
	if err != nil {
		return false, err
	}
	if c.sensIn[emitter] == nil {
		setIn(&c.sensIn, emitter, map[string]bool{})
	}
	c.sensIn[emitter][input] = m[input]
	return m[input], nil
}

// foldSensitive applies r's connections, in order, to its own sensitivity,
// as apply does to its values: for every input, or only for input only
// when it is not "". It returns the sensitive inputs.
func (c *Catalog) foldSensitive(r *Resource, conns []Connection, only string, depth int) (map[string]bool, error) {
	out := map[string]bool{}
	for _, k := range r.Masked {
		if only == "" || k == only {
			out[k] = true
		}
	}
	if only != "" {
		if d, ok := r.Base.Input(only); ok && (d.Sensitive || d.Computable != "") {
			// A computed input read while its resource is being folded
			// cannot be valued either (emitted refuses it): mask it.
			return map[string]bool{only: true}, nil
		}
	}
	var listStarted map[string]bool
	for _, conn := range conns {
		var e *Resource
		for _, m := range conn.Mappings {
			if only != "" && m.To != only {
				continue
			}
			to, ok := r.Base.Input(m.To)
			if !ok || to.Sensitive {
				continue // declared sensitive: masked whatever feeds it
			}
			if e == nil {
				var err error
				if e, err = c.Get(conn.Emitter); err != nil {
					return nil, err
				}
			}
			from, ok := e.Base.Input(m.From)
			if !ok {
				continue
			}
			src, err := c.sensitiveFrom(conn.Emitter, m.From, depth+1)
			if err != nil {
				return nil, err
			}
			switch {
			case m.Key != "":
				// One key: the object keeps the rest of what it had.
				out[m.To] = out[m.To] || src
			case to.Schema.Kind == schema.List && from.Schema.Kind != schema.List:
				// One element: the first replaces the own list.
				if listStarted == nil {
					listStarted = map[string]bool{}
				}
				out[m.To] = src || listStarted[m.To] && out[m.To]
				listStarted[m.To] = true
			default:
				// The whole value: the last connection wins.
				out[m.To] = src
			}
		}
	}
	for k, v := range out {
		if !v {
			delete(out, k)
		}
	}
	if only == "" {
		for _, d := range r.Base.Inputs {
			if d.Sensitive {
				out[d.Name] = true
			}
		}
		if r.Base.computes() {
			r.computedSensitive(out)
		}
	}
	return out, nil
}

// CommitKeys are the records a commit of one of resource's staged entries
// (stagedKey) reads: the resource, its entry, its committed snapshot, its
// effective values and their sensitivity. A runner prefetches them.
func CommitKeys(resource, stagedKey string) []store.Key {
	return []store.Key{
		{Bucket: store.Resources, Key: resource},
		{Bucket: store.Staged, Key: stagedKey},
		{Bucket: store.Committed, Key: resource},
		{Bucket: store.Effective, Key: resource},
		{Bucket: store.Effective, Key: sensKey(resource)},
	}
}
