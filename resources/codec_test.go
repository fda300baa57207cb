package resources

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/solarops/solar/internal/jsonfast/jsonfasttest"
)

// TestDecodeRestMatchesEncodingJSON checks that a resource record without
// its base reads as encoding/json reads it, and that what the fast reader
// leaves to encoding/json (metaparameters, unknown fields) is left.
func TestDecodeRestMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	retry := 3
	read := 0
	for i := 0; i < 5000; i++ {
		r := Resource{Name: jsonfasttest.Text(rng), Inputs: jsonfasttest.Map(rng), Removing: rng.IntN(2) == 0, Masked: jsonfasttest.Strings(rng)}
		if rng.IntN(3) > 0 {
			r.Tags = map[string]string{jsonfasttest.Text(rng): jsonfasttest.Text(rng)}
		}
		meta := rng.IntN(5) == 0
		if meta {
			r.Meta.Retry = &retry
		}
		full, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(full, &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "base")
		rest, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		var want Resource
		if err := json.Unmarshal(rest, &want); err != nil {
			t.Fatal(err)
		}
		var got Resource
		ok := decodeRest(rest, &got)
		if ok && meta {
			t.Fatalf("decodeRest(%s) read metaparameters", rest)
		}
		if ok {
			read++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeRest(%s) = %#v; encoding/json: %#v", rest, got, want)
			}
		}
	}
	// Keys that were not UTF-8 can repeat once written (as U+FFFD), and
	// those records go to encoding/json; the rest must not.
	if read < 3500 {
		t.Errorf("decodeRest read %d of 5,000 records itself; want most", read)
	}
	for _, raw := range []string{`{"name":"a","x":1}`, `{"name":"a","inputs":"no"}`, `{"name":"a","name":"b"}`} {
		var got Resource
		if decodeRest([]byte(raw), &got) {
			t.Errorf("decodeRest(%s) read it", raw)
		}
	}
}

// TestDecodeValuesMatchesEncodingJSON checks that stored input values read
// as encoding/json reads them into a map.
func TestDecodeValuesMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 5000; i++ {
		raw, err := json.Marshal(jsonfasttest.Map(rng))
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeValues(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeValues(%s) = %#v, %v; encoding/json: %#v", raw, got, err, want)
		}
	}
	for _, raw := range []string{`[1]`, `"x"`, `{"a":1`} {
		var want map[string]any
		wantErr := json.Unmarshal([]byte(raw), &want)
		if _, err := decodeValues([]byte(raw)); err == nil || err.Error() != wantErr.Error() {
			t.Errorf("decodeValues(%s): %v; want encoding/json's error %v", raw, err, wantErr)
		}
	}
}
