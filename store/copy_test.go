package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func fill(t *testing.T, db *DB) {
	t.Helper()
	if err := db.Update(func(tx *Tx) error {
		for _, w := range []struct{ b, k, v string }{
			{Resources, "web", `{"base": "x",  "inputs": {"a": 1}}`},
			{Resources, "bin\xff", "not utf-8 \xfe"},
			{Events, "plain", "on a.run changed b.run"},
			{History, "empty", ""},
		} {
			if err := tx.Put(w.b, w.k, []byte(w.v)); err != nil {
				return err
			}
		}
		for range 3 {
			if _, err := tx.NextSequence(Staged); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func export(t *testing.T, db *DB) string {
	t.Helper()
	var buf bytes.Buffer
	if err := db.View(func(tx *Tx) error { return Export(tx, &buf) }); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatalf("export is not JSON:\n%s", buf.String())
	}
	return buf.String()
}

func TestCopyRoundTripsTheExport(t *testing.T) {
	src, _ := open(t)
	fill(t, src)
	dst := mustOpen(t, filepath.Join(t.TempDir(), "copy.db"))
	defer dst.Close()
	n, err := Copy(src, dst, false)
	if err != nil {
		t.Fatal(err)
	}
	if n.Total() != 4 {
		t.Fatalf("copied %v", n)
	}
	a, b := export(t, src), export(t, dst)
	if a != b {
		t.Fatalf("exports differ:\n%s\n%s", a, b)
	}
	for _, want := range []string{
		`"staged":{"sequence":3`,
		`{"key":"web","json":{"base":"x","inputs":{"a":1}}}`,
		`"text":"on a.run changed b.run"`,
		`{"key":{"base64":"Ymlu/w=="},"base64":"bm90IHV0Zi04IP4="}`, // neither is UTF-8
		`{"key":"empty","text":""}`,
	} {
		if !strings.Contains(a, want) {
			t.Errorf("export lacks %s:\n%s", want, a)
		}
	}
	// Not again onto a store with data, unless forced.
	if _, err := Copy(src, dst, false); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("second copy: err = %v, want ErrNotEmpty", err)
	}
	if err := dst.Update(func(tx *Tx) error { return tx.Put(Plans, "extra", []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(src, dst, true); err != nil {
		t.Fatal(err)
	}
	if b := export(t, dst); b != a {
		t.Fatalf("forced copy left a different store:\n%s", b)
	}
}
