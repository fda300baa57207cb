package resources

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/tags"
)

// Upgrade is what Catalog.Upgrade did to one resource.
type Upgrade struct {
	Name string
	// Old and New are the base before and after; Old.Digest is "" for a
	// resource created before bases were stored.
	Old, New BaseRef
	// Unchanged is set when the new base has the digest of the old one:
	// nothing else of it changed (the directory may have, see Moved).
	Unchanged bool
	// Moved is set when an unchanged base was read from another
	// directory, which the resource records from now on.
	Moved bool
	// Files lists how the base's files changed. OldFiles is false when the
	// old files are not in the store (a record from before bases were
	// stored): then Files is empty, as nothing can be compared.
	Files    []bases.Difference
	OldFiles bool
	// Added are the inputs the new base adds (they take their defaults),
	// Removed those it drops (their values go), Changed those whose
	// declaration changed, each with what changed; all sorted.
	Added   []string
	Removed []string
	Changed []InputChange
}

// BaseRef names a base: the name, version and digest a resource records.
type BaseRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// Ref returns what names b.
func (b *Base) Ref() BaseRef { return BaseRef{Name: b.Name, Version: b.Version, Digest: b.Digest} }

// String renders the reference as NAME@SHORT ("NAME" without a digest).
func (r BaseRef) String() string {
	if r.Digest == "" {
		return r.Name
	}
	return r.Name + "@" + bases.Short(r.Digest)
}

// InputChange is an input whose declaration a new base changed.
type InputChange struct {
	Name string `json:"name"`
	// What says what changed, e.g. `schema int >> str`, `default 3 >> 4`.
	What string `json:"what"`
}

// Upgrade gives the named resource the base b, which LoadBase read (its
// files are stored here, once per digest), and returns what changed. The
// inputs b adds take their defaults; those it drops lose their values; a
// value equal to its old default takes the new one; every value kept must
// fit its new schema. It refuses, wrapping
// ErrConnected, to drop an input a connection maps into or out of, and,
// wrapping ErrInvalid, a resource staged for removal, a base that is a
// node where the old was not (or the reverse), and a new required input
// with no default. A base with the digest of the old one changes nothing
// but, if it was read elsewhere, the directory recorded.
func (c *Catalog) Upgrade(name string, b *Base) (*Upgrade, error) {
	old, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	if old.Removing {
		return nil, invalidf("%s is staged for removal; discard that first (solar ch discard %s.remove)", name, name)
	}
	u := &Upgrade{Name: name, Old: old.Base.Ref(), New: b.Ref()}
	if b.Digest == old.Base.Digest {
		u.Unchanged = true
		if b.Dir == old.Base.Dir && b.Name == old.Base.Name {
			return u, nil
		}
		u.Moved = true
		r := *old
		r.Base.Dir, r.Base.Name = b.Dir, b.Name
		return u, c.Put(&r)
	}
	if b.Node != old.Base.Node {
		return nil, invalidf("%s: base %s is %s and %s is %s; a resource cannot change between node and not (create a new resource)",
			name, old.Base.Name, nodeWord(old.Base.Node), b.Name, nodeWord(b.Node))
	}
	u.Added, u.Removed, u.Changed = compareInputs(&old.Base, b)
	if err := c.refuseConnected(name, u.Removed); err != nil {
		return nil, err
	}
	r := *old
	r.Base = *b
	if r.Inputs, err = upgradedInputs(old, b); err != nil {
		return nil, err
	}
	r.Masked = slices.DeleteFunc(slices.Clone(old.Masked), func(k string) bool { return slices.Contains(u.Removed, k) })
	if len(r.Masked) == 0 {
		r.Masked = nil
	}
	if r.Tags, err = upgradedTags(old, b); err != nil {
		return nil, err
	}
	if u.Files, u.OldFiles, err = c.fileChanges(old, b); err != nil {
		return nil, err
	}
	if err := c.storeBase(b); err != nil {
		return nil, err
	}
	if err := c.Put(&r); err != nil {
		return nil, err
	}
	eff, err := c.Effective(name)
	if err != nil {
		return nil, err
	}
	if err := c.checkRequired(&r, eff); err != nil {
		return nil, fmt.Errorf("upgrade %s to base %s: %w", name, u.New, err)
	}
	return u, nil
}

func nodeWord(node bool) string {
	if node {
		return "a node"
	}
	return "not a node"
}

// compareInputs lists the inputs b adds to, drops from and changes in
// the base from, each sorted.
func compareInputs(from, b *Base) (added, removed []string, changed []InputChange) {
	added, removed = []string{}, []string{}
	changed = []InputChange{}
	for _, d := range b.Inputs {
		was, ok := from.Input(d.Name)
		if !ok {
			added = append(added, d.Name)
			continue
		}
		var what []string
		if was.Schema.String() != d.Schema.String() {
			what = append(what, "schema "+was.Schema.String()+" >> "+d.Schema.String())
		}
		if was.Sensitive != d.Sensitive {
			what = append(what, fmt.Sprintf("sensitive %t >> %t", was.Sensitive, d.Sensitive))
		}
		if fmt.Sprint(was.Default) != fmt.Sprint(d.Default) {
			// A sensitive default is not shown, as a value is not.
			if was.Sensitive || d.Sensitive {
				what = append(what, "default changed")
			} else {
				what = append(what, "default "+showDefault(was.Default)+" >> "+showDefault(d.Default))
			}
		}
		if len(what) > 0 {
			changed = append(changed, InputChange{Name: d.Name, What: strings.Join(what, ", ")})
		}
	}
	for _, d := range from.Inputs {
		if _, ok := b.Input(d.Name); !ok {
			removed = append(removed, d.Name)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	slices.SortFunc(changed, func(x, y InputChange) int { return strings.Compare(x.Name, y.Name) })
	return added, removed, changed
}

func showDefault(v any) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(v)
}

// refuseConnected refuses to drop an input that a connection maps into or
// out of: the connection would name an input its resource no longer has.
func (c *Catalog) refuseConnected(name string, removed []string) error {
	if len(removed) == 0 {
		return nil
	}
	ins, err := c.Incoming(name)
	if err != nil {
		return err
	}
	for _, conn := range ins {
		for _, m := range conn.Mappings {
			if slices.Contains(removed, m.To) {
				return connectedf("%s: the new base drops input %q, which connection %s -> %s (%s) feeds; disconnect first (solar disconnect %s %s)",
					name, m.To, conn.Emitter, name, m, conn.Emitter, name)
			}
		}
	}
	rcvs, err := c.Receivers(name)
	if err != nil {
		return err
	}
	for _, rcv := range rcvs {
		conn, ok := c.Connection(name, rcv)
		if !ok {
			continue
		}
		for _, m := range conn.Mappings {
			if slices.Contains(removed, m.From) {
				return connectedf("%s: the new base drops input %q, which connection %s -> %s (%s) reads; disconnect first (solar disconnect %s %s)",
					name, m.From, name, rcv, m, name, rcv)
			}
		}
	}
	return nil
}

// upgradedInputs returns r's own values under base b: those of inputs b
// keeps, checked against their new schemas (a value equal to the old
// default becomes the new default), and the defaults of the inputs b adds.
func upgradedInputs(r *Resource, b *Base) (map[string]any, error) {
	out := make(map[string]any, len(b.Inputs))
	for _, d := range b.Inputs {
		if _, had := r.Base.Input(d.Name); !had {
			if d.Default != nil {
				out[d.Name] = d.Default
			}
			continue
		}
		v, ok := r.Inputs[d.Name]
		if !ok {
			continue
		}
		if was, _ := r.Base.Input(d.Name); was.Default != nil && v != nil && schema.Equal(v, was.Default) {
			// A value the resource took from the old default follows
			// the new one.
			v = d.Default
		}
		if v == nil {
			out[d.Name] = nil
			continue
		}
		cv, err := d.Schema.Check(v)
		if err != nil {
			// A value whose required keys come from connections, as a
			// composition stores it (decodeResource).
			if cv, err = optional(d.Schema).Check(v); err != nil {
				return nil, invalidf("%s: input %q: its value does not fit the new schema %s: %v; change the base or update the value first",
					r.Name, d.Name, d.Schema, maskErr(&d, err))
			}
		}
		out[d.Name] = cv
	}
	return out, nil
}

// upgradedTags returns r's tags with those the old base gave and the new
// one does not dropped (unless the resource set them otherwise), and those
// the new base gives added.
func upgradedTags(r *Resource, b *Base) (tags.Set, error) {
	parse := func(list []string, base string) (tags.Set, error) {
		out := tags.Set{}
		for _, t := range list {
			k, v, err := tags.Parse(t)
			if err != nil {
				return nil, fmt.Errorf("%w: base %s: %v", ErrBase, base, err)
			}
			out[k] = v
		}
		return out, nil
	}
	was, err := parse(r.Base.Tags, r.Base.Name)
	if err != nil {
		return nil, err
	}
	is, err := parse(b.Tags, b.Name)
	if err != nil {
		return nil, err
	}
	out := r.Tags.Clone()
	for k, v := range was {
		if _, keep := is[k]; !keep && out[k] == v && k != "resource" {
			delete(out, k)
		}
	}
	for k, v := range is {
		if k != "resource" {
			out[k] = v
		}
	}
	return out, nil
}

// fileChanges compares the files of r's base, read from the store, with
// those of b. Old files that are not stored (a record from before bases
// were) give no list and false.
func (c *Catalog) fileChanges(r *Resource, b *Base) ([]bases.Difference, bool, error) {
	if b.content == nil {
		return nil, false, fmt.Errorf("%w: base %s: its files were not read (use LoadBase)", ErrBase, b.Name)
	}
	if r.Base.Digest == "" {
		return []bases.Difference{}, false, nil
	}
	from, err := bases.Get(c.tx, r.Base.Name, r.Base.Digest)
	if errors.Is(err, bases.ErrUnknown) {
		return []bases.Difference{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	d := bases.Diff(from, b.content)
	if d == nil {
		d = []bases.Difference{}
	}
	return d, true, nil
}

// StoredBase returns the base of that digest as the store keeps it, read
// again from its files: what "ch discard" of an upgrade puts back. Errors
// wrap bases.ErrUnknown when it is not stored.
func (c *Catalog) StoredBase(digest string) (*Base, error) {
	info, err := bases.GetInfo(c.tx, digest)
	if err != nil {
		return nil, err
	}
	content, err := bases.Get(c.tx, info.Name, digest)
	if err != nil {
		return nil, err
	}
	return FromContent(content, info.Name, info.Source, info.Name+"@"+bases.Short(digest))
}
