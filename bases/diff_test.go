package bases

import (
	"io/fs"
	"reflect"
	"testing"
)

func TestDiffListsEntriesAddedRemovedAndChanged(t *testing.T) {
	file := func(p, data string, mode fs.FileMode) File { return File{Path: p, Mode: mode, Data: []byte(data)} }
	old := New([]File{
		file("actions", "", fs.ModeDir|0o755),
		file("actions/old.sh", "echo old", 0o644),
		file("actions/run.sh", "echo run", 0o644),
		file("actions/mode.sh", "same", 0o644),
		file("meta.yaml", "actions: {}", 0o644),
	})
	next := New([]File{
		file("actions", "", fs.ModeDir|0o755),
		file("actions/mode.sh", "same", 0o755),
		file("actions/new.sh", "echo new", 0o644),
		file("actions/run.sh", "echo run v2", 0o644),
		file("meta.yaml", "actions: {}", 0o644),
	})
	var got []string
	for _, d := range Diff(old, next) {
		got = append(got, d.Op+" "+d.Path)
		if (d.Old == "") != (d.Op == Added) || (d.New == "") != (d.Op == Removed) {
			t.Errorf("%s %s: old %q, new %q", d.Op, d.Path, d.Old, d.New)
		}
	}
	want := []string{"change actions/mode.sh", "add actions/new.sh", "remove actions/old.sh", "change actions/run.sh"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if d := Diff(old, old); len(d) != 0 {
		t.Errorf("Diff of a content with itself = %v, want none", d)
	}
}

func TestFingerprintIsOfModeAndBytes(t *testing.T) {
	a := File{Path: "a", Mode: 0o644, Data: []byte("x")}
	b := File{Path: "b", Mode: 0o644, Data: []byte("x")}
	c := File{Path: "a", Mode: 0o755, Data: []byte("x")}
	if Fingerprint(&a) != Fingerprint(&b) {
		t.Error("same mode and bytes at two paths: fingerprints differ")
	}
	if Fingerprint(&a) == Fingerprint(&c) || len(Fingerprint(&a)) != 12 {
		t.Errorf("fingerprints %q and %q: want 12 digits, differing by mode", Fingerprint(&a), Fingerprint(&c))
	}
}
