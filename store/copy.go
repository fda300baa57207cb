package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// ErrNotEmpty means store copy found data in its destination.
var ErrNotEmpty = errors.New("destination store is not empty")

// Counts are the keys of each bucket.
type Counts map[string]int

// Total is the number of keys in every bucket but the store's own meta.
func (c Counts) Total() int {
	n := 0
	for b, k := range c {
		if b != meta {
			n += k
		}
	}
	return n
}

// Count returns the number of keys in each bucket.
func Count(tx *Tx) (Counts, error) {
	c := Counts{}
	for _, b := range Buckets {
		n := 0
		if err := tx.ForEach(b, "", func(string, []byte) error { n++; return nil }); err != nil {
			return nil, err
		}
		c[b] = n
	}
	return c, nil
}

// Copy copies every key and sequence of src into dst, in one transaction
// of dst: all of it or nothing. It refuses a destination holding data
// (ErrNotEmpty) unless force, which first empties it. It returns the keys
// copied per bucket.
func Copy(src, dst *DB, force bool) (Counts, error) {
	copied := Counts{}
	err := src.View(func(from *Tx) error {
		return dst.Update(func(to *Tx) error {
			have, err := Count(to)
			if err != nil {
				return err
			}
			if have.Total() > 0 {
				if !force {
					return fmt.Errorf("%w: %s holds %d keys; use --force to replace them", ErrNotEmpty, dst.Location(), have.Total())
				}
				for _, b := range Buckets {
					if b != meta {
						if err := to.DeletePrefix(b, ""); err != nil {
							return err
						}
					}
				}
			}
			for _, b := range Buckets {
				if b == meta {
					continue // each store has its own, already checked on open
				}
				n := 0
				if err := from.ForEach(b, "", func(k string, v []byte) error {
					n++
					return to.Put(b, k, v)
				}); err != nil {
					return err
				}
				copied[b] = n
				seq, err := from.t.Sequence(b)
				if err != nil {
					return err
				}
				if err := to.t.SetSequence(b, seq); err != nil {
					return err
				}
			}
			return nil
		})
	})
	return copied, err
}

// ExportFormat is the version of Export's JSON.
const ExportFormat = 1

// Export writes the whole store as JSON: per bucket its sequence and its
// keys in order, each value as "json" when it is JSON, else as "text" when
// it is UTF-8, else as "base64". Two stores with the same content export
// the same bytes, whatever their backends.
func Export(tx *Tx, w io.Writer) error {
	bw := &errWriter{w: w}
	bw.printf("{\"format_version\":%d,\"schema_version\":%d,\"buckets\":{", ExportFormat, SchemaVersion)
	sep := ""
	for _, b := range slices.Sorted(slices.Values(Buckets)) {
		if b == meta {
			continue
		}
		seq, err := tx.t.Sequence(b)
		if err != nil {
			return err
		}
		bw.printf("%s\n%s:{\"sequence\":%d,\"keys\":[", sep, quote(b), seq)
		sep = ","
		n := 0
		if err := tx.ForEach(b, "", func(k string, v []byte) error {
			if n > 0 {
				bw.printf(",")
			}
			n++
			bw.printf("\n{\"key\":%s,%s}", text(k), value(v))
			return bw.err
		}); err != nil {
			return err
		}
		bw.printf("]}")
	}
	bw.printf("\n}}\n")
	return bw.err
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// text renders a key: a JSON string when it is UTF-8, else an object
// holding its base64.
func text(k string) string {
	if utf8.ValidString(k) {
		return quote(k)
	}
	return `{"base64":` + quote(base64.StdEncoding.EncodeToString([]byte(k))) + `}`
}

func value(v []byte) string {
	var buf bytes.Buffer
	switch {
	case len(v) > 0 && json.Compact(&buf, v) == nil:
		return `"json":` + buf.String()
	case utf8.Valid(v):
		return `"text":` + quote(string(v))
	}
	return `"base64":` + quote(base64.StdEncoding.EncodeToString(v))
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
