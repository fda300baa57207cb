package resources

import (
	"testing"
)

const secretMeta = `handler: noop
inputs:
  secret: {schema: str, value: "", sensitive: true}
  plain:  {schema: str, value: ""}
`

// Sensitivity follows the value through chains of connections, into list
// and object receivers, and goes with the connection.
func TestSensitiveInputsFollowTheValue(t *testing.T) {
	db := openStore(t)
	update(t, db, func(cat *Catalog) {
		mustCreate(t, cat, "s", loadBase(t, writeBase(t, "sec", secretMeta)))
		for _, n := range []string{"a", "b", "l", "o"} {
			mustCreate(t, cat, n, valBaseFor(t))
		}
		connect := func(e, r string, m Mapping) {
			t.Helper()
			if _, err := cat.Connect(e, r, []Mapping{m}); err != nil {
				t.Fatal(err)
			}
		}
		connect("s", "a", Mapping{From: "secret", To: "x"})                // s.secret -> a.x
		connect("a", "b", Mapping{From: "x", To: "y"})                     // -> b.y: two connections away
		connect("a", "l", Mapping{From: "x", To: "list"})                  // a list receiver
		connect("b", "o", Mapping{From: "y", To: "settings", Key: "host"}) // one key of an object
		want := map[string][]string{"s": {"secret"}, "a": {"x"}, "b": {"y"}, "l": {"list"}, "o": {"settings"}}
		for name, inputs := range want {
			got, err := cat.SensitiveInputs(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(inputs) {
				t.Errorf("%s: sensitive %v, want %v", name, got, inputs)
			}
			for _, in := range inputs {
				if !got[in] {
					t.Errorf("%s.%s is not sensitive; its value comes from s.secret", name, in)
				}
			}
		}
		if _, err := cat.Disconnect("a", "b"); err != nil {
			t.Fatal(err)
		}
		if got, _ := cat.SensitiveInputs("b"); len(got) != 0 {
			t.Errorf("after disconnect, b still has sensitive %v", got)
		}
		if got, _ := cat.SensitiveInputs("o"); len(got) != 0 {
			t.Errorf("after disconnect upstream, o still has sensitive %v", got)
		}
	})
}
