package staging

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/solarops/solar/internal/jsonfast/jsonfasttest"
	"github.com/solarops/solar/resources"
)

func randChanges(rng *rand.Rand) []Change {
	if rng.IntN(4) == 0 {
		return nil
	}
	out := []Change{}
	for range rng.IntN(4) {
		c := Change{Op: jsonfasttest.Text(rng), Key: jsonfasttest.Text(rng), Connection: rng.IntN(2) == 0, File: rng.IntN(2) == 0, Sensitive: rng.IntN(2) == 0}
		if rng.IntN(3) > 0 {
			c.Old = jsonfasttest.Value(rng)
		}
		if rng.IntN(3) > 0 {
			c.New = jsonfasttest.Value(rng)
		}
		out = append(out, c)
	}
	return out
}

func randEntry(rng *rand.Rand) *Entry {
	e := &Entry{Key: jsonfasttest.Text(rng), Resource: jsonfasttest.Text(rng), Action: jsonfasttest.Text(rng), Seq: rng.Uint64() >> rng.IntN(64),
		Diff: randChanges(rng), Cause: jsonfasttest.Text(rng), StagedAt: jsonfasttest.Time(rng), StagedBy: jsonfasttest.Text(rng), AffectedBy: jsonfasttest.Strings(rng),
		Explicit: rng.IntN(2) == 0, Plan: jsonfasttest.Text(rng)}
	if rng.IntN(3) > 0 {
		e.Tags = map[string]string{}
		for range rng.IntN(4) {
			e.Tags[jsonfasttest.Text(rng)] = jsonfasttest.Text(rng)
		}
	}
	return e
}

func randSnapshot(rng *rand.Rand) *Snapshot {
	s := &Snapshot{Own: jsonfasttest.Map(rng), Inputs: jsonfasttest.Map(rng), CommittedAt: jsonfasttest.Time(rng), Plan: jsonfasttest.Text(rng),
		Sensitive: jsonfasttest.Strings(rng), Masked: jsonfasttest.Strings(rng)}
	for range rng.IntN(3) {
		c := resources.Connection{Emitter: jsonfasttest.Text(rng), Receiver: jsonfasttest.Text(rng), Seq: uint64(rng.IntN(3)), Rules: jsonfasttest.Strings(rng)}
		if rng.IntN(4) > 0 {
			c.Mappings = []resources.Mapping{}
			for range rng.IntN(3) {
				c.Mappings = append(c.Mappings, resources.Mapping{From: jsonfasttest.Text(rng), To: jsonfasttest.Text(rng), Key: jsonfasttest.Text(rng)})
			}
		}
		s.Connections = append(s.Connections, c)
	}
	return s
}

// TestCodecMatchesEncodingJSON checks that staged entries, committed
// snapshots and history entries are written byte for byte as
// encoding/json writes them, and that staged entries read back as
// encoding/json reads them.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		e := randEntry(rng)
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeEntry(e)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeEntry:\n%s, %v\nencoding/json:\n%s", got, err, want)
		}
		var back Entry
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		dec, err := decodeEntry(want)
		if err != nil || !reflect.DeepEqual(*dec, back) {
			t.Fatalf("decodeEntry(%s):\n%#v, %v\nencoding/json:\n%#v", want, dec, err, back)
		}

		var wantStamp Stamp
		if err := json.Unmarshal(want, &wantStamp); err != nil {
			t.Fatal(err)
		}
		if st, err := decodeStamp(want); err != nil || !reflect.DeepEqual(st, wantStamp) {
			t.Fatalf("decodeStamp(%s) = %#v, %v; encoding/json: %#v", want, st, err, wantStamp)
		}
		var wantHead Head
		if err := json.Unmarshal(want, &wantHead); err != nil {
			t.Fatal(err)
		}
		if h, err := decodeHead(e.Key, want); err != nil || !reflect.DeepEqual(*h, wantHead) {
			t.Fatalf("decodeHead(%s) = %#v, %v; encoding/json: %#v", want, h, err, wantHead)
		}

		s := randSnapshot(rng)
		if want, err = json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		var wantPlan struct {
			Plan string `json:"plan"`
		}
		if err := json.Unmarshal(want, &wantPlan); err != nil {
			t.Fatal(err)
		}
		if got := committedPlanOf(want); got != wantPlan.Plan {
			t.Fatalf("committedPlanOf(%s) = %q; encoding/json: %q", want, got, wantPlan.Plan)
		}
		if got, err = encodeSnapshot(s); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeSnapshot:\n%s, %v\nencoding/json:\n%s", got, err, want)
		}

		h := &HistoryEntry{UID: jsonfasttest.Text(rng), Key: e.Key, Resource: e.Resource, Action: e.Action, Diff: e.Diff, Cause: e.Cause,
			Plan: jsonfasttest.Text(rng), Task: jsonfasttest.Text(rng), StagedBy: jsonfasttest.Text(rng), RanBy: jsonfasttest.Text(rng), RanOn: jsonfasttest.Text(rng), CommittedAt: jsonfasttest.Time(rng)}
		if rng.IntN(2) == 0 {
			h.Before = s
		}
		if rng.IntN(8) == 0 {
			h.Rules = []string{"after a.run b.run"}
		}
		if want, err = json.Marshal(h); err != nil {
			t.Fatal(err)
		}
		if got, err = encodeHistory(h); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeHistory:\n%s, %v\nencoding/json:\n%s", got, err, want)
		}
	}
}

// TestDecodeEntryUnusual checks that records the fast reader does not
// take (an unknown or repeated field, a wrong type, damage) are read by
// encoding/json: what it reads, or its error.
func TestDecodeEntryUnusual(t *testing.T) {
	for _, raw := range []string{
		`{"key":"a.run","Resource":"a","action":"run"}`,     // encoding/json matches case-insensitively
		`{"key":"a.run","key":"b.run"}`,                     // the last wins
		`{"key":"a.run","extra":[1,{"x":null}]}`,            // unknown fields are ignored
		`{"key":"a.run","tags":{"x":"1"},"tags":{"y":"2"}}`, // repeated maps merge
	} {
		var want Entry
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeEntry([]byte(raw))
		if err != nil || !reflect.DeepEqual(*got, want) {
			t.Errorf("decodeEntry(%s) = %#v, %v; encoding/json: %#v", raw, got, err, want)
		}
		var wantStamp Stamp
		if err := json.Unmarshal([]byte(raw), &wantStamp); err != nil {
			t.Fatal(err)
		}
		if st, err := decodeStamp([]byte(raw)); err != nil || !reflect.DeepEqual(st, wantStamp) {
			t.Errorf("decodeStamp(%s) = %#v, %v; encoding/json: %#v", raw, st, err, wantStamp)
		}
	}
	for _, raw := range []string{`{"staged_at":"2026-11-23T16:04:05\u002b01:00"}`, `{"key":1}`, `{"seq":-1}`, `{"diff":{}}`, `{"key":"a"`, `[]`, ``} {
		var want Entry
		wantErr := json.Unmarshal([]byte(raw), &want)
		if _, err := decodeEntry([]byte(raw)); err == nil || err.Error() != wantErr.Error() {
			t.Errorf("decodeEntry(%s): %v; want encoding/json's error %v", raw, err, wantErr)
		}
	}
}
