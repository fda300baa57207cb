// Package kvtest is the conformance suite every store backend passes: the
// contracts of package kv, checked against a real backend.
package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/solarops/solar/store/kv"
)

// Buckets the backend under test must have.
var Buckets = []string{"one", "two"}

// Factory makes a new, empty store with Buckets and returns a function that
// opens it; the suite opens it again to check what survives a reopen, and
// closes what it opens.
type Factory func(t *testing.T) (open func() (kv.Backend, error))

// Run runs the suite.
func Run(t *testing.T, factory Factory) {
	cases := []struct {
		name string
		fn   func(*testing.T, func() kv.Backend)
	}{
		{"OrderAndPrefix", orderAndPrefix},
		{"Last", last},
		{"GetCopiesAndMissing", getCopies},
		{"Peek", peek},
		{"ReadOnly", readOnly},
		{"Rollback", rollback},
		{"Sequence", sequence},
		{"Stop", stop},
		{"BucketsAreSeparate", separate},
		{"Reopen", reopen},
		{"ReadYourWrites", readYourWrites},
		{"ManyKeys", manyKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open := factory(t)
			c.fn(t, func() kv.Backend {
				t.Helper()
				b, err := open()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				return b
			})
		})
	}
}

func put(t *testing.T, b kv.Backend, bucket string, kvs ...string) {
	t.Helper()
	if err := b.Update(func(tx kv.Tx) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			if err := tx.Put(bucket, kvs[i], []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func keys(t *testing.T, b kv.Backend, bucket, prefix string) []string {
	t.Helper()
	var got []string
	if err := b.View(func(tx kv.Tx) error {
		return tx.ForEach(bucket, prefix, func(k string, v []byte) error {
			got = append(got, k+"="+string(v))
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func orderAndPrefix(t *testing.T, open func() kv.Backend) {
	b := open()
	// Byte order, not collation: upper case first, bytes above 0x7f last,
	// NUL inside a key sorts before everything.
	put(t, b, "one", "b", "1", "a\x00z", "2", "a", "3", "B", "4", "a/\xff", "5", "a/\x80", "6", "ab", "7", "a/", "8", "é", "9")
	want := []string{"B=4", "a=3", "a\x00z=2", "a/=8", "a/\x80=6", "a/\xff=5", "ab=7", "b=1", "é=9"}
	if got := keys(t, b, "one", ""); !slices.Equal(got, want) {
		t.Fatalf("order: got %q, want %q", got, want)
	}
	if got := keys(t, b, "one", "a/"); !slices.Equal(got, []string{"a/=8", "a/\x80=6", "a/\xff=5"}) {
		t.Fatalf("prefix a/: got %q", got)
	}
	if got := keys(t, b, "one", "zz"); len(got) != 0 {
		t.Fatalf("prefix zz: got %q", got)
	}
	// A prefix that ends in 0xff bytes, where "the next prefix" overflows.
	put(t, b, "one", "\xff\xff", "x", "\xff\xff\x01", "y", "\xff\xfe", "z")
	if got := keys(t, b, "one", "\xff\xff"); !slices.Equal(got, []string{"\xff\xff=x", "\xff\xff\x01=y"}) {
		t.Fatalf("prefix ffff: got %q", got)
	}
}

func last(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "a/1", "x", "a/2", "y", "a/10", "z", "b/1", "w", "\xff", "top")
	_ = b.View(func(tx kv.Tx) error {
		for _, c := range []struct{ prefix, key, val string }{
			{"a/", "a/2", "y"}, {"b/", "b/1", "w"}, {"", "\xff", "top"}, {"a/1", "a/10", "z"},
		} {
			k, v, err := tx.Last("one", c.prefix)
			if err != nil || k != c.key || string(v) != c.val {
				t.Errorf("Last(%q) = %q %q %v; want %q %q", c.prefix, k, v, err, c.key, c.val)
			}
		}
		if _, _, err := tx.Last("one", "c/"); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Last of a missing prefix: err = %v, want ErrNotFound", err)
		}
		if _, _, err := tx.Last("two", ""); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Last of an empty bucket: err = %v, want ErrNotFound", err)
		}
		return nil
	})
	// Deleting the greatest key makes the one before it the last.
	if err := b.Update(func(tx kv.Tx) error {
		if err := tx.Delete("one", "a/2"); err != nil {
			return err
		}
		k, _, err := tx.Last("one", "a/")
		if err != nil || k != "a/10" {
			t.Errorf("Last after deleting a/2 in the same transaction = %q %v", k, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = b.View(func(tx kv.Tx) error {
		if k, _, err := tx.Last("one", "a/"); err != nil || k != "a/10" {
			t.Errorf("Last after deleting a/2 = %q %v", k, err)
		}
		return nil
	})
}

func getCopies(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "k", "value", "empty", "")
	var got []byte
	_ = b.View(func(tx kv.Tx) error {
		v, err := tx.Get("one", "k")
		if err != nil {
			t.Fatal(err)
		}
		got = v
		e, err := tx.Get("one", "empty")
		if err != nil || len(e) != 0 {
			t.Errorf("Get of an empty value = %q %v", e, err)
		}
		if !tx.Has("one", "empty") || tx.Has("one", "nope") {
			t.Error("Has is wrong about an empty value or a missing key")
		}
		if _, err := tx.Get("one", "nope"); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Get missing: err = %v, want ErrNotFound", err)
		}
		return nil
	})
	put(t, b, "one", "k", "other")
	if string(got) != "value" {
		t.Fatalf("a value got in a finished transaction changed to %q", got)
	}
	got[0] = 'X'
	_ = b.View(func(tx kv.Tx) error {
		if v, _ := tx.Get("one", "k"); string(v) != "other" {
			t.Errorf("Get after writing to a returned copy = %q", v)
		}
		return nil
	})
	// A value written is copied: changing the caller's slice later changes
	// nothing stored.
	buf := []byte("mine")
	if err := b.Update(func(tx kv.Tx) error { return tx.Put("one", "buf", buf) }); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X'
	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18) // 1 MiB, all byte values
	if err := b.Update(func(tx kv.Tx) error { return tx.Put("one", "big", big) }); err != nil {
		t.Fatal(err)
	}
	_ = b.View(func(tx kv.Tx) error {
		if v, _ := tx.Get("one", "buf"); string(v) != "mine" {
			t.Errorf("stored value followed the caller's slice: %q", v)
		}
		if v, _ := tx.Get("one", "big"); !bytes.Equal(v, big) {
			t.Errorf("a 1 MiB binary value came back different (%d bytes)", len(v))
		}
		return nil
	})
}

// peek checks that Peek returns what Get returns: in a read transaction,
// and in a write transaction after its own puts and deletions. A backend
// that cannot peek is read with Get, as store.Tx.Peek does.
func peek(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "a", "1", "b", "2", "empty", "")
	check := func(tx kv.Tx, when string) {
		t.Helper()
		peek := tx.Get
		if p, ok := tx.(kv.Peeker); ok {
			peek = p.Peek
		}
		for _, k := range []string{"a", "b", "c", "empty", "gone"} {
			want, wantErr := tx.Get("one", k)
			got, err := peek("one", k)
			if !errors.Is(err, wantErr) || !bytes.Equal(got, want) || (want != nil) != (got != nil) {
				t.Errorf("%s: Peek(%s) = %q, %v; Get: %q, %v", when, k, got, err, want, wantErr)
			}
		}
	}
	if err := b.View(func(tx kv.Tx) error { check(tx, "read"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx kv.Tx) error {
		if err := tx.Put("one", "c", []byte("3")); err != nil {
			return err
		}
		if err := tx.Put("one", "a", []byte("11")); err != nil {
			return err
		}
		if err := tx.Delete("one", "b"); err != nil {
			return err
		}
		check(tx, "write")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.View(func(tx kv.Tx) error { check(tx, "after the write"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func readOnly(t *testing.T, open func() kv.Backend) {
	b := open()
	_ = b.View(func(tx kv.Tx) error {
		if tx.Writable() {
			t.Error("a View transaction says it is writable")
		}
		if err := tx.Put("one", "x", nil); !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("Put in View: err = %v", err)
		}
		if err := tx.Delete("one", "x"); !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("Delete in View: err = %v", err)
		}
		if _, err := tx.NextSequence("one"); !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("NextSequence in View: err = %v", err)
		}
		return nil
	})
	_ = b.Update(func(tx kv.Tx) error {
		if !tx.Writable() {
			t.Error("an Update transaction says it is not writable")
		}
		return nil
	})
}

func rollback(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "keep", "1", "gone", "2")
	boom := errors.New("boom")
	err := b.Update(func(tx kv.Tx) error {
		for i := range 100 {
			if err := tx.Put("one", fmt.Sprintf("new%03d", i), []byte("x")); err != nil {
				return err
			}
		}
		if err := tx.Put("one", "keep", []byte("changed")); err != nil {
			return err
		}
		if err := tx.Delete("one", "gone"); err != nil {
			return err
		}
		if _, err := tx.NextSequence("one"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	if got := keys(t, b, "one", ""); !slices.Equal(got, []string{"gone=2", "keep=1"}) {
		t.Fatalf("after a failed Update: %q", got)
	}
	if err := b.Update(func(tx kv.Tx) error {
		n, err := tx.NextSequence("one")
		if err == nil && n != 1 {
			t.Errorf("the first sequence after a rolled-back one is %d, want 1", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func sequence(t *testing.T, open func() kv.Backend) {
	b := open()
	var got []uint64
	for range 3 {
		if err := b.Update(func(tx kv.Tx) error {
			for range 2 {
				n, err := tx.NextSequence("one")
				if err != nil {
					return err
				}
				got = append(got, n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("sequence: %v", got)
	}
	if err := b.Update(func(tx kv.Tx) error {
		n, err := tx.NextSequence("two")
		if err == nil && n != 1 {
			t.Errorf("bucket two's first sequence is %d: sequences are per bucket", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// SetSequence sets the counter, up or down; Sequence reads it.
	if err := b.Update(func(tx kv.Tx) error {
		if err := tx.SetSequence("one", 100); err != nil {
			return err
		}
		if err := tx.SetSequence("two", 0); err != nil {
			return err
		}
		if n, err := tx.Sequence("one"); err != nil || n != 100 {
			t.Errorf("Sequence after SetSequence(100) in the transaction = %d %v", n, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = b.View(func(tx kv.Tx) error {
		if n, err := tx.Sequence("one"); err != nil || n != 100 {
			t.Errorf("Sequence(one) = %d %v, want 100", n, err)
		}
		if n, err := tx.Sequence("two"); err != nil || n != 0 {
			t.Errorf("Sequence(two) = %d %v, want 0 (set)", n, err)
		}
		if err := tx.SetSequence("one", 200); !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("SetSequence in View: err = %v", err)
		}
		return nil
	})
	if err := b.Update(func(tx kv.Tx) error {
		n, err := tx.NextSequence("one")
		if err == nil && n != 101 {
			t.Errorf("NextSequence after SetSequence(100) = %d, want 101", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func stop(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "1", "", "2", "", "3", "")
	n := 0
	err := b.View(func(tx kv.Tx) error {
		return tx.ForEach("one", "", func(string, []byte) error {
			n++
			if n == 2 {
				return kv.ErrStop
			}
			return nil
		})
	})
	if err != nil || n != 2 {
		t.Fatalf("ErrStop: err %v after %d keys, want nil after 2", err, n)
	}
	other := errors.New("other")
	err = b.View(func(tx kv.Tx) error {
		return tx.ForEach("one", "", func(string, []byte) error { return other })
	})
	if !errors.Is(err, other) {
		t.Fatalf("a callback's error came back as %v", err)
	}
}

func separate(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "k", "in one")
	put(t, b, "two", "k", "in two", "j", "only two")
	if got := keys(t, b, "one", ""); !slices.Equal(got, []string{"k=in one"}) {
		t.Fatalf("bucket one: %q", got)
	}
	if got := keys(t, b, "two", ""); !slices.Equal(got, []string{"j=only two", "k=in two"}) {
		t.Fatalf("bucket two: %q", got)
	}
}

func reopen(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "a", "1", "b", "2")
	if err := b.Update(func(tx kv.Tx) error {
		if err := tx.Delete("one", "a"); err != nil {
			return err
		}
		_, err := tx.NextSequence("two")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open()
	if got := keys(t, b, "one", ""); !slices.Equal(got, []string{"b=2"}) {
		t.Fatalf("after reopening: %q", got)
	}
	if err := b.Update(func(tx kv.Tx) error {
		n, err := tx.NextSequence("two")
		if err == nil && n != 2 {
			t.Errorf("sequence after reopening = %d, want 2", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func readYourWrites(t *testing.T, open func() kv.Backend) {
	b := open()
	put(t, b, "one", "a/1", "old", "a/3", "old", "a/5", "old")
	if err := b.Update(func(tx kv.Tx) error {
		for _, w := range []struct{ k, v string }{{"a/2", "new"}, {"a/3", "new"}, {"a/6", "new"}} {
			if err := tx.Put("one", w.k, []byte(w.v)); err != nil {
				return err
			}
		}
		if err := tx.Delete("one", "a/5"); err != nil {
			return err
		}
		var got []string
		if err := tx.ForEach("one", "a/", func(k string, v []byte) error {
			got = append(got, k+"="+string(v))
			return nil
		}); err != nil {
			return err
		}
		if want := []string{"a/1=old", "a/2=new", "a/3=new", "a/6=new"}; !slices.Equal(got, want) {
			t.Errorf("inside the transaction: %q, want %q", got, want)
		}
		if v, err := tx.Get("one", "a/3"); err != nil || string(v) != "new" {
			t.Errorf("Get of a key written in the transaction = %q %v", v, err)
		}
		if tx.Has("one", "a/5") {
			t.Error("Has sees a key deleted in the transaction")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, b, "one", "a/"); !slices.Equal(got, []string{"a/1=old", "a/2=new", "a/3=new", "a/6=new"}) {
		t.Fatalf("after commit: %q", got)
	}
}

func manyKeys(t *testing.T, open func() kv.Backend) {
	b := open()
	const n = 5000
	if err := b.Update(func(tx kv.Tx) error {
		for i := n - 1; i >= 0; i-- { // in reverse: order is the backend's job
			if err := tx.Put("one", fmt.Sprintf("k%d", i), []byte(strings.Repeat("v", i%50))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := keys(t, b, "one", "k")
	if len(got) != n || !slices.IsSortedFunc(got, func(a, b string) int {
		return strings.Compare(strings.SplitN(a, "=", 2)[0], strings.SplitN(b, "=", 2)[0])
	}) {
		t.Fatalf("%d keys, sorted %v", len(got), slices.IsSorted(got))
	}
	if err := b.Update(func(tx kv.Tx) error {
		for i := 0; i < n; i += 2 {
			if err := tx.Delete("one", fmt.Sprintf("k%d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, b, "one", "k"); len(got) != n/2 {
		t.Fatalf("%d keys after deleting half, want %d", len(got), n/2)
	}
}
