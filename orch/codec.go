package orch

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/jsonfast"
	"github.com/solarops/solar/planner"
)

// A plan's task list and edge list, and its task states, are read and
// written without reflection: a run of 100,000 tasks reads 300,000 such
// records and writes 200,000. The bytes are encoding/json's, and a record
// the fast reader finds unusual is read by encoding/json (codec_test.go
// checks both against it).

var statuses = []string{string(StatusPending), string(StatusInProgress), string(StatusSuccess), string(StatusNoop), string(StatusSkipped), string(StatusError)}

// encodeState encodes a task's state.
func encodeState(st State) ([]byte, error) {
	dst := make([]byte, 0, 128)
	dst = append(dst, `{"status":`...)
	dst = jsonfast.AppendString(dst, string(st.Status))
	if st.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = jsonfast.AppendString(dst, st.Reason)
	}
	if st.Err != "" {
		dst = append(dst, `,"error":`...)
		dst = jsonfast.AppendString(dst, st.Err)
	}
	if st.Attempts != 0 {
		dst = append(dst, `,"attempts":`...)
		dst = strconv.AppendInt(dst, int64(st.Attempts), 10)
	}
	if st.Changed {
		dst = append(dst, `,"changed":true`...)
	}
	var err error
	if !st.Start.IsZero() {
		dst = append(dst, `,"start":`...)
		if dst, err = jsonfast.AppendTime(dst, st.Start); err != nil {
			return nil, err
		}
	}
	if !st.End.IsZero() {
		dst = append(dst, `,"end":`...)
		if dst, err = jsonfast.AppendTime(dst, st.End); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// decodeState decodes a task's state.
func decodeState(raw []byte) (State, error) {
	var st State
	r := jsonfast.NewReader(raw)
	var seen uint32
	r.Object(func(k []byte) {
		switch string(k) {
		case "status":
			r.Seen(&seen, 1<<0)
			st.Status = Status(r.StringOf(statuses...))
		case "reason":
			r.Seen(&seen, 1<<1)
			st.Reason = r.String()
		case "error":
			r.Seen(&seen, 1<<2)
			st.Err = r.String()
		case "attempts":
			r.Seen(&seen, 1<<3)
			st.Attempts = r.Int()
		case "changed":
			r.Seen(&seen, 1<<4)
			st.Changed = r.Bool()
		case "start":
			r.Seen(&seen, 1<<5)
			st.Start = r.Time()
		case "end":
			r.Seen(&seen, 1<<6)
			st.End = r.Time()
		default:
			r.Fail()
		}
	})
	if r.End() == nil {
		return st, nil
	}
	var s stateJSON
	err := json.Unmarshal(raw, &s)
	return State(s), err
}

// decodeList decodes a JSON list of flat objects, each with elem, or with
// encoding/json when the fast reader finds the list unusual.
func decodeList[T any](raw []byte, out *[]T, elem func(*jsonfast.Reader) T) error {
	// Sized by its objects' boundaries at once: grown as it was read, the
	// edges of a plan of 100,000 tasks took 130 MB of copies.
	var list []T
	if n := bytes.Count(raw, objectBoundary); n > 0 {
		list = make([]T, 0, n+1)
	}
	r := jsonfast.NewReader(raw)
	ok := r.Array(func() { list = append(list, elem(r)) })
	if r.End() == nil {
		if ok && list == nil {
			list = []T{}
		}
		*out = list
		return nil
	}
	*out = nil
	return json.Unmarshal(raw, out)
}

// objectBoundary is where one element of a list of flat objects ends and
// the next starts, as encoding/json writes it; a string holding it only
// makes the count too high.
var objectBoundary = []byte("},{")

// decodeNodes decodes a list of a plan's tasks.
func decodeNodes(raw []byte, out *[]planner.Node) error { return decodeList(raw, out, readNode) }

func readNode(r *jsonfast.Reader) planner.Node {
	var n planner.Node
	var seen uint32
	r.Object(func(k []byte) {
		switch string(k) {
		case "id":
			r.Seen(&seen, 1<<0)
			n.ID = r.String()
		case "resource":
			r.Seen(&seen, 1<<1)
			n.Resource = r.String()
		case "action":
			r.Seen(&seen, 1<<2)
			n.Action = r.StringOf("run", "update", "remove")
		case "instance":
			r.Seen(&seen, 1<<3)
			n.Instance = r.Int()
		case "staged":
			r.Seen(&seen, 1<<4)
			n.Staged = r.Bool()
		case "staged_key":
			r.Seen(&seen, 1<<5)
			n.StagedKey = r.String()
		case "triggered_by":
			r.Seen(&seen, 1<<6)
			n.TriggeredBy = r.Strings()
		case "weight":
			r.Seen(&seen, 1<<7)
			n.Weight = r.Int()
		default:
			r.Fail()
		}
	})
	return n
}

var eventTexts = []string{"", string(events.Changed), string(events.OK), string(events.Failed), string(events.Success), string(events.Any)}

// decodeEdges decodes a list of a plan's edges.
func decodeEdges(raw []byte, out *[]planner.Edge) error { return decodeList(raw, out, readEdge) }

func readEdge(r *jsonfast.Reader) planner.Edge {
	var e planner.Edge
	var seen uint32
	r.Object(func(k []byte) {
		switch string(k) {
		case "from":
			r.Seen(&seen, 1<<0)
			e.From = r.String()
		case "to":
			r.Seen(&seen, 1<<1)
			e.To = r.String()
		case "kind":
			r.Seen(&seen, 1<<2)
			e.Kind = r.StringOf(planner.EdgeAfter, planner.EdgeReact)
		case "event":
			r.Seen(&seen, 1<<3)
			e.Event = events.Event(r.StringOf(eventTexts...))
		case "rule":
			r.Seen(&seen, 1<<4)
			e.Rule = r.String()
		default:
			r.Fail()
		}
	})
	return e
}
