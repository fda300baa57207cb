package resources

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// TestCreateEncodesAsPut checks that a resource created with its base
// encoded once per catalog (putNew) is stored exactly as Put would store
// it, for bases with every kind of field set.
func TestCreateEncodesAsPut(t *testing.T) {
	db := openStore(t)
	retry := 2
	for _, name := range []string{"noop", "node", "mariadb", "file"} {
		b := realBase(t, name)
		update(t, db, func(c *Catalog) {
			vals := Values{Text: map[string]string{}}
			for _, d := range b.Inputs {
				if d.Schema.Required && d.Schema.String() == "str" {
					vals.Text[d.Name] = "x"
				}
			}
			r, err := c.Create(CreateSpec{Name: "r-" + name, Base: b, Values: vals, Tags: tags.Set{"env": "1"}, Meta: Meta{Retry: &retry}}, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.get(store.Resources, r.Name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s stored as\n%s\nwant (as Put stores it)\n%s", name, got, want)
			}
		})
	}
}

// TestRecordsCarryNoDeadWeight checks the store size of a connected
// resource: no empty metaparameters in its record or its base's, and its
// kept sensitivity names the effective values by half a SHA-256 (which a
// long chain still trusts: TestSensitiveInputsOfLongChain).
func TestRecordsCarryNoDeadWeight(t *testing.T) {
	db := openStore(t)
	noop := realBase(t, "noop")
	update(t, db, func(c *Catalog) {
		for _, n := range []string{"a", "b"} {
			if _, err := c.Create(CreateSpec{Name: n, Base: noop, Values: Values{}}, false); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Connect("a", "b", []Mapping{{From: "value", To: "value"}}); err != nil {
			t.Fatal(err)
		}
	})
	if err := db.View(func(tx *store.Tx) error {
		raw, err := tx.Get(store.Resources, "b")
		if err != nil {
			return err
		}
		if bytes.Contains(raw, []byte(`"meta":{}`)) {
			t.Errorf("record of b holds empty metaparameters: %s", raw)
		}
		raw, err = tx.Get(store.Effective, sensKey("b"))
		if err != nil {
			return err
		}
		var rec sensRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		if len(rec.Effective) != 32 {
			t.Errorf("sensitivity record of b names its effective values by %q, want 32 hex digits", rec.Effective)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	view(t, db, func(c *Catalog) {
		r, err := c.Get("b")
		if err != nil {
			t.Fatal(err)
		}
		if r.Meta.Retry != nil || r.Base.Meta.Timeout != nil || r.Meta.Sema != nil {
			t.Errorf("b read back with metaparameters %+v, base %+v", r.Meta, r.Base.Meta)
		}
	})
}
