package kv

import (
	"reflect"
	"testing"
)

// TestWritesReset checks that Writes forgets everything on Reset, and
// records writes after it as if new, though it keeps its maps.
func TestWritesReset(t *testing.T) {
	var w Writes
	w.Set("b", "k1", []byte("v1"), false)
	w.Set("b", "k2", nil, true)
	w.Set("c", "k3", []byte("v3"), false)
	w.SetSeq("b", 7)
	_ = w.Keys("b", "") // sorts
	w.Set("b", "k0", []byte("v0"), false)
	w.Reset()
	if w.Len() != 0 || w.Bytes() != 0 {
		t.Fatalf("after Reset: Len %d, Bytes %d", w.Len(), w.Bytes())
	}
	for _, k := range []string{"k0", "k1", "k2"} {
		if _, ok := w.Lookup("b", k); ok {
			t.Errorf("after Reset %s is still written", k)
		}
	}
	if keys := w.Keys("b", ""); len(keys) != 0 {
		t.Errorf("after Reset the keys of b are %v", keys)
	}
	if _, ok := w.Seq("b"); ok {
		t.Error("after Reset the counter of b is still set")
	}
	w.Set("b", "k9", []byte("v9"), false)
	w.Set("b", "k5", []byte("v5"), false)
	if got, want := w.Keys("b", ""), []string{"k5", "k9"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys after new writes: %v, want %v", got, want)
	}
	if w.Len() != 2 || w.Bytes() != 2*(1+2+2) {
		t.Errorf("after new writes: Len %d, Bytes %d", w.Len(), w.Bytes())
	}
}
