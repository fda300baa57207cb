package jsonfast

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/solarops/solar/internal/jsonfast/jsonfasttest"
)

// TestAppendMatchesEncodingJSON checks that what the writer appends is,
// byte for byte, what encoding/json's Marshal produces.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		v := jsonfasttest.Value(rng)
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendValue(nil, v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendValue(%#v) = %s, %v; encoding/json: %s", v, got, err, want)
		}
	}
	for _, s := range jsonfasttest.Texts {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s; encoding/json: %s", s, got, want)
		}
	}
	for _, v := range []any{map[string]any(nil), []any(nil), []string(nil), []string{}, map[string]string{"b": "<", "a": "x"}, int(-7), uint8(3), time.Unix(1e9, 5).UTC()} {
		want, _ := json.Marshal(v)
		if got, err := AppendValue(nil, v); err != nil || !bytes.Equal(got, want) {
			t.Errorf("AppendValue(%#v) = %s, %v; encoding/json: %s", v, got, err, want)
		}
	}
	if _, err := AppendValue(nil, math.NaN()); err == nil {
		t.Error("NaN appended without an error")
	}
	tm := time.Date(2026, 11, 23, 16, 4, 5, 123456789, time.FixedZone("x", 3600))
	want, _ := json.Marshal(tm)
	if got, err := AppendTime(nil, tm); err != nil || !bytes.Equal(got, want) {
		t.Errorf("AppendTime = %s, %v; want %s", got, err, want)
	}
	if _, err := AppendTime(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("year 10000 appended without an error")
	}
}

// TestValueMatchesEncodingJSON checks that Value reads what encoding/json
// reads into an interface, or says the input is unusual where
// encoding/json would replace bytes or fail.
func TestValueMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		raw, err := json.Marshal(jsonfasttest.Value(rng))
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		r := NewReader(raw)
		got := r.Value()
		if err := r.End(); err != nil {
			if !errors.Is(err, ErrUnusual) {
				t.Fatalf("%s: %v", raw, err)
			}
			continue // encoding/json decides
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Value(%s) = %#v; encoding/json: %#v", raw, got, want)
		}
		// Skip reads over exactly the value, inside a list too.
		r = NewReader(append(append([]byte("["), raw...), `,true]`...))
		n := 0
		r.Array(func() {
			if n++; n == 1 {
				r.Skip()
			} else if !r.Bool() {
				r.Fail()
			}
		})
		if err := r.End(); err != nil || n != 2 {
			t.Fatalf("Skip of %s: %v after %d elements", raw, err, n)
		}
	}
	// Written by hand: escapes Marshal never writes, white space.
	for _, raw := range []string{`"\u00e9\/\ud83d\ude00\b\f"`, ` { "a" : [ 1 , -0.5e+3 , true , null ] } `, `"\u0041"`, `-0`, `0.000001`} {
		var want any
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		r := NewReader([]byte(raw))
		if got := r.Value(); r.End() != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Value(%s) = %#v, %v; encoding/json: %#v", raw, got, r.Err(), want)
		}
	}
}

// TestUnusual checks that input encoding/json rejects, or reads in a way
// the fast reader does not, is reported unusual rather than read.
func TestUnusual(t *testing.T) {
	for _, raw := range []string{``, `{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `+1`, `0x10`, `1e`, `"\ud83d"`, `"\x"`, "\"\xff\"", "\"a\nb\"",
		`{"a":1,"a":2}`, `tru`, `nul`, `"open`, `[1 2]`, `{"a" 1}`, `1e400`, `{} x`, `{null:1}`, `{1:1}`} {
		r := NewReader([]byte(raw))
		r.Value()
		if err := r.End(); !errors.Is(err, ErrUnusual) {
			t.Errorf("%q read without a failure", raw)
		}
		if raw == `{"a":1,"a":2}` || raw == `1e400` {
			continue // valid JSON: Skip reads over it
		}
		r = NewReader([]byte(raw))
		r.Skip()
		if err := r.End(); !errors.Is(err, ErrUnusual) {
			t.Errorf("%q skipped without a failure", raw)
		}
	}
	r := NewReader([]byte(`01`))
	if r.Uint64(); r.End() == nil {
		t.Error("Uint64 read 01")
	}
	r = NewReader([]byte(`-1`))
	if r.Uint64(); r.End() == nil {
		t.Error("Uint64 read -1")
	}
	r = NewReader([]byte(`1.5`))
	if r.Int(); r.End() == nil {
		t.Error("Int read 1.5")
	}
}

// TestReaderTyped checks the typed reads against encoding/json's.
func TestReaderTyped(t *testing.T) {
	type rec struct {
		S  string            `json:"s"`
		N  uint64            `json:"n"`
		I  int               `json:"i"`
		B  bool              `json:"b"`
		T  time.Time         `json:"t"`
		L  []string          `json:"l"`
		M  map[string]string `json:"m"`
		LN []string          `json:"ln"`
		MN map[string]string `json:"mn"`
	}
	raw := []byte(`{"s":"x\u003cy","n":18446744073709551615,"i":-42,"b":true,"t":"2026-11-23T16:04:05.5+01:00","l":[],"m":{},"ln":null,"mn":null}`)
	var want rec
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	var got rec
	var seen uint32
	r := NewReader(raw)
	r.Object(func(k []byte) {
		switch string(k) {
		case "s":
			r.Seen(&seen, 1)
			got.S = r.String()
		case "n":
			got.N = r.Uint64()
		case "i":
			got.I = r.Int()
		case "b":
			got.B = r.Bool()
		case "t":
			got.T = r.Time()
		case "l":
			got.L = r.Strings()
		case "m":
			got.M = r.StringMap()
		case "ln":
			got.LN = r.Strings()
		case "mn":
			got.MN = r.StringMap()
		default:
			r.Fail()
		}
	})
	if err := r.End(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("read %+v, %v; encoding/json: %+v", got, err, want)
	}
	r = NewReader([]byte(`{"s":"a","s":"b"}`))
	seen = 0
	r.Object(func([]byte) { r.Seen(&seen, 1); _ = r.String() })
	if r.End() == nil {
		t.Error("a repeated field read without a failure")
	}
}
