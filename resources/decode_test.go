package resources

import (
	"reflect"
	"testing"

	"github.com/solarops/solar/store"
)

// TestDecodedBasesShared checks that resources whose records carry the
// same base share one decoded base, across catalogs, while a resource of
// another base (or another version of it) gets its own, and that every
// resource still reads as it was written.
func TestDecodedBasesShared(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	file := realBase(t, "file")
	other := *noop
	other.Version = "9.9.9"
	update(t, db, func(c *Catalog) {
		mustCreate(t, c, "a", noop, "value=1")
		mustCreate(t, c, "b", noop, "value=2")
		mustCreate(t, c, "c", &other)
		mustCreate(t, c, "f", file, "dir=/tmp/d", "path=x", "content=y")
	})
	get := func(c *Catalog, name string) *Resource {
		t.Helper()
		r, err := c.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var a, b, c, f *Resource
	view(t, db, func(cat *Catalog) { a, c, f = get(cat, "a"), get(cat, "c"), get(cat, "f") })
	view(t, db, func(cat *Catalog) { b = get(cat, "b") })
	shared := func(x, y *Resource) bool { return &x.Base.Inputs[0] == &y.Base.Inputs[0] }
	if !shared(a, b) {
		t.Error("a and b (same base, two catalogs) decoded their base twice")
	}
	if shared(a, c) || shared(a, f) {
		t.Error("resources of different bases share a decoded base")
	}
	if c.Base.Version != "9.9.9" || a.Base.Version != noop.Version || f.Base.Name != file.Name {
		t.Errorf("bases read back as %s %s, %s %s, %s", a.Base.Name, a.Base.Version, c.Base.Name, c.Base.Version, f.Base.Name)
	}
	if a.Inputs["value"] != "1" || b.Inputs["value"] != "2" {
		t.Errorf("values read back as %v and %v", a.Inputs, b.Inputs)
	}
	for _, r := range []*Resource{a, b, c, f} {
		for _, d := range r.Base.Inputs {
			if got, ok := r.Base.Input(d.Name); !ok || got.Name != d.Name {
				t.Errorf("%s: input %s not found by name in its decoded base", r.Name, d.Name)
			}
		}
	}
	if !reflect.DeepEqual(f.Base.Actions, file.Actions) {
		t.Errorf("file base actions read back as %v, want %v", f.Base.Actions, file.Actions)
	}
}

// TestDecodedBasesBounded checks that the cache of decoded bases stays
// within maxDecodedBases and still serves what it holds.
func TestDecodedBasesBounded(t *testing.T) {
	c := &baseCache{m: map[string]Base{}}
	for i := range maxDecodedBases + 10 {
		c.put([]byte{byte(i), byte(i >> 8)}, Base{Name: "b"})
		if len(c.m) > maxDecodedBases {
			t.Fatalf("cache holds %d bases, more than %d", len(c.m), maxDecodedBases)
		}
	}
	last := maxDecodedBases + 9
	if b, ok := c.get([]byte{byte(last), byte(last >> 8)}); !ok || b.Name != "b" {
		t.Error("the last base put is not served")
	}
}

// TestDecodeCutMatchesFull checks that a record whose base was decoded
// before (its base's bytes then skipped) reads exactly as a record decoded
// in full, and that records of another form still decode in full.
func TestDecodeCutMatchesFull(t *testing.T) {
	db := openStore(t)
	var raws [][]byte
	update(t, db, func(c *Catalog) {
		mustCreate(t, c, "a", realBase(t, "noop"), "value=1")
		mustCreate(t, c, "f", realBase(t, "file"), "dir=/tmp/d", "path=x", "content=y")
		for _, name := range []string{"a", "f"} {
			raw, err := c.get(store.Resources, name)
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, raw)
		}
	})
	// Another member order, as an older or hand-made record could have.
	raws = append(raws, []byte(`{"base":{"name":"x","dir":"/d","handler":"noop","actions":{"run":"r.sh"},"inputs":[{"name":"n","schema":"int","default":1}]},"name":"y","inputs":{"n":2},"tags":{}}`))
	defer func(kept *baseCache) { decodedBases = kept }(decodedBases)
	for _, raw := range raws {
		decodedBases = &baseCache{m: map[string]Base{}}
		full, err := decodeResource(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := decodedBases.cut(raw); ok != (raw[2] == 'n') {
			t.Errorf("record %.40s...: cut %v", raw, ok)
		}
		again, err := decodeResource(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(full, again) {
			t.Errorf("record %.40s... reads as\n%+v\nonce its base is known, and as\n%+v\nin full", raw, again, full)
		}
	}
}
