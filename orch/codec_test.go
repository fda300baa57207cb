package orch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/jsonfast/jsonfasttest"
	"github.com/solarops/solar/planner"
)

// TestCodecMatchesEncodingJSON checks that task states are written byte
// for byte as encoding/json writes them, and that states, task lists and
// edge lists read back as encoding/json reads them, also when they are
// unusual (then encoding/json reads them).
func TestCodecMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	text := func() string {
		if rng.IntN(2) == 0 {
			return []string{"", "r1.run#0", "SUCCESS", "after a.run b.run", "changed", "on", "after"}[rng.IntN(7)]
		}
		return jsonfasttest.Text(rng)
	}
	for i := 0; i < 5000; i++ {
		st := State{Status: Status(text()), Reason: text(), Err: text(), Attempts: rng.IntN(3) - 1, Changed: rng.IntN(2) == 0, Start: jsonfasttest.Time(rng), End: jsonfasttest.Time(rng)}
		want, err := json.Marshal(stateJSON(st))
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeState(st)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeState:\n%s, %v\nencoding/json:\n%s", got, err, want)
		}
		var back stateJSON
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		if dec, err := decodeState(want); err != nil || !reflect.DeepEqual(dec, State(back)) {
			t.Fatalf("decodeState(%s) = %#v, %v; encoding/json: %#v", want, dec, err, State(back))
		}

		var nodes []planner.Node
		var edges []planner.Edge
		for range rng.IntN(4) {
			n := planner.Node{ID: text(), Resource: text(), Action: text(), Instance: rng.IntN(3), Staged: rng.IntN(2) == 0, StagedKey: text(), Weight: rng.IntN(1e6)}
			if rng.IntN(3) > 0 {
				n.TriggeredBy = jsonfasttest.Strings(rng)
			}
			nodes = append(nodes, n)
			edges = append(edges, planner.Edge{From: text(), To: text(), Kind: text(), Event: events.Event(text()), Rule: text()})
		}
		if rng.IntN(4) == 0 {
			nodes, edges = nil, nil
		}
		checkList(t, nodes, decodeNodes)
		checkList(t, edges, decodeEdges)
	}
	// Unusual: an unknown field, a repeated one, a wrong type.
	for _, raw := range []string{`[{"id":"a","Weight":3}]`, `[{"id":"a","id":"b"}]`, `[{"id":"a","x":1}]`} {
		var want []planner.Node
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		var got []planner.Node
		if err := decodeNodes([]byte(raw), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeNodes(%s) = %#v, %v; encoding/json: %#v", raw, got, err, want)
		}
	}
	var got []planner.Edge
	if err := decodeEdges([]byte(`[{"from":1}]`), &got); err == nil {
		t.Error("an edge with a number for a name decoded")
	}
	if _, err := decodeState([]byte(`{"status":"NOOP","attempts":"1"}`)); err == nil {
		t.Error("a state with a string for attempts decoded")
	}
}

// checkList checks that decode reads list, encoded, as encoding/json does.
func checkList[T any](t *testing.T, list []T, decode func([]byte, *[]T) error) {
	t.Helper()
	raw, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []T
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := decode(raw, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode(%s) = %#v, %v; encoding/json: %#v", raw, got, err, want)
	}
}
