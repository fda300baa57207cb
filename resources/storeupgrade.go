package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/store"
)

// The upgrade of a store to schema version 4 reads bases from the
// operator's directories, which package store cannot do: it is registered
// here, where every program that opens a store links it.
func init() { store.RegisterUpgrade(4, storeOldBases) }

// ErrBaseMissing means a resource's base files are not in the store: it
// was made by a solar that did not store them, and its directory was gone
// (or did not read) when the store was upgraded. Nothing of it can run
// until "solar resource upgrade NAME DIR" stores them.
var ErrBaseMissing = invalid.New("base not in the store")

// MissingBase is a base directory that could not be stored when the store
// was upgraded, and the resources that still lack it.
type MissingBase struct {
	Dir       string   `json:"dir"`
	Resources []string `json:"resources"`
}

// missingError names the resources without their base, where it was
// looked for, and the command that stores it.
type missingError struct{ list []MissingBase }

func (e *missingError) Error() string {
	var parts []string
	n := 0
	for _, m := range e.list {
		n += len(m.Resources)
		parts = append(parts, fmt.Sprintf("%s (directory %s could not be read)", strings.Join(m.Resources, ", "), m.Dir))
	}
	what, verb := "the base of resource", "is"
	if n > 1 {
		what, verb = "the bases of resources", "are"
	}
	return fmt.Sprintf("%s %s %s not in the store; re-point each with solar resource upgrade NAME DIR", what, strings.Join(parts, "; "), verb)
}

func (e *missingError) Unwrap() error { return ErrBaseMissing }

// BaseMissing returns an error wrapping ErrBaseMissing that names the
// resources of list and their directories, with the command that
// re-points them; nil for an empty list.
func BaseMissing(list []MissingBase) error {
	if len(list) == 0 {
		return nil
	}
	return &missingError{list: list}
}

// CheckBase returns nil when r's base is in the store (its record names a
// digest), else the error of BaseMissing for r alone. Whatever needs a
// resource's files (planning a task of it, running one) asks first.
func CheckBase(r *Resource) error {
	if r.Base.Digest != "" {
		return nil
	}
	return BaseMissing([]MissingBase{{Dir: r.Base.Dir, Resources: []string{r.Name}}})
}

// MissingBases lists, by directory, the resources that the upgrade to
// schema version 4 could not give their base and that still have none
// (not removed, not upgraded since). A store without such resources costs
// one empty prefix scan.
func MissingBases(tx *store.Tx) ([]MissingBase, error) {
	marks, err := bases.Missing(tx)
	if err != nil || len(marks) == 0 {
		return []MissingBase{}, err
	}
	byDir := map[string][]string{}
	for name, dir := range marks {
		raw, err := tx.Peek(store.Resources, name)
		if err != nil {
			continue // removed since
		}
		var rec struct {
			Base struct {
				Digest string `json:"digest"`
			} `json:"base"`
		}
		if json.Unmarshal(raw, &rec) != nil || rec.Base.Digest != "" {
			continue
		}
		byDir[dir] = append(byDir[dir], name)
	}
	out := make([]MissingBase, 0, len(byDir))
	for dir, names := range byDir {
		sort.Strings(names)
		out = append(out, MissingBase{Dir: dir, Resources: names})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// oldBase is what the upgrade reads of a base in a record of version 3.
type oldBase struct {
	Name    string `json:"name"`
	Dir     string `json:"dir"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// oldRecord is a record of version 3 that carries a base: a resource
// (its "base"), or a history entry of a committed removal (the removed
// resource's "base", under "removed").
type oldRecord struct {
	bucket, key string
	path        []string // the keys leading to the base object
	base        oldBase
	resource    string // the resource to mark when its base is missing
}

// storeOldBases brings a store from version 3 to 4. Version 3 kept no
// base files: each resource named the directory it was made from. Each
// directory named by a resource record or a history entry (a committed
// removal keeps the resource, which revert recreates) is read once with
// bases.Read and stored, and the records get its digest, their other
// bytes kept as they were. A directory that is gone or does not read
// fails nothing: its resources keep no digest and are marked
// (bases.MarkMissing), so that commands warn and runs refuse them
// (CheckBase). It is frozen with the layout of version 3.
func storeOldBases(tx *store.Tx) error {
	var recs []oldRecord
	collect := func(bucket string, path []string, named func(raw []byte) (oldBase, string, bool)) error {
		return tx.ForEach(bucket, "", func(k string, raw []byte) error {
			if b, res, ok := named(raw); ok && b.Digest == "" && b.Dir != "" {
				recs = append(recs, oldRecord{bucket: bucket, key: k, path: path, base: b, resource: res})
			}
			return nil
		})
	}
	err := collect(store.Resources, []string{"base"}, func(raw []byte) (oldBase, string, bool) {
		var r struct {
			Name string  `json:"name"`
			Base oldBase `json:"base"`
		}
		return r.Base, r.Name, json.Unmarshal(raw, &r) == nil
	})
	if err != nil {
		return err
	}
	err = collect(store.History, []string{"removed", "base"}, func(raw []byte) (oldBase, string, bool) {
		var h struct {
			Removed *struct {
				Base oldBase `json:"base"`
			} `json:"removed"`
		}
		if json.Unmarshal(raw, &h) != nil || h.Removed == nil {
			return oldBase{}, "", false
		}
		return h.Removed.Base, "", true
	})
	if err != nil {
		return err
	}
	digests := map[string]string{} // dir -> digest, "" when it did not read
	now := time.Now().UTC()
	for _, r := range recs {
		digest, seen := digests[r.base.Dir]
		if !seen {
			if c, err := bases.Read(r.base.Dir); err == nil {
				info := bases.Info{Name: r.base.Name, Version: r.base.Version, Source: r.base.Dir, StoredAt: now}
				if err := bases.Put(tx, c, info); err != nil {
					return err
				}
				digest = c.Digest
			}
			digests[r.base.Dir] = digest
		}
		if digest == "" {
			if r.resource != "" {
				if err := bases.MarkMissing(tx, r.resource, r.base.Dir); err != nil {
					return err
				}
			}
			continue
		}
		raw, err := tx.Get(r.bucket, r.key)
		if err != nil {
			return err
		}
		if raw, err = setField(raw, r.path, "digest", digest); err != nil {
			return store.Damagedf("%s record %q: %v", r.bucket, r.key, err)
		}
		if err := tx.Put(r.bucket, r.key, raw); err != nil {
			return err
		}
	}
	return nil
}

// field is one member of a JSON object, its value as it was written.
type field struct {
	key   string
	value json.RawMessage
}

// setField sets key to the JSON string value in the object that path
// leads to inside the object raw, keeping every other member, and their
// order, byte for byte. A new key goes after "dir" when there is one (the
// place Base encodes "digest"), else last.
func setField(raw []byte, path []string, key, value string) ([]byte, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	if len(path) > 0 {
		for i := range fields {
			if fields[i].key == path[0] {
				inner, err := setField(fields[i].value, path[1:], key, value)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", path[0], err)
				}
				fields[i].value = inner
				return encodeFields(fields), nil
			}
		}
		return nil, fmt.Errorf("no member %q", path[0])
	}
	v, _ := json.Marshal(value)
	at := len(fields)
	for i, f := range fields {
		if f.key == key {
			fields[i].value = v
			return encodeFields(fields), nil
		}
		if f.key == "dir" {
			at = i + 1
		}
	}
	fields = append(fields[:at], append([]field{{key, v}}, fields[at:]...)...)
	return encodeFields(fields), nil
}

func objectFields(raw []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{key: t.(string), value: v})
	}
	return out, nil
}

func encodeFields(fields []field) []byte {
	out := []byte{'{'}
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(f.key)
		out = append(append(append(out, k...), ':'), f.value...)
	}
	return append(out, '}')
}
