package staging

import (
	"encoding/json"

	"github.com/solarops/solar/internal/jsonfast"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// The records a commit reads and writes (the staged entry, the committed
// snapshot, the history entry) are read and written without reflection:
// a run commits one per task. The bytes are encoding/json's, and a record
// the fast reader finds unusual is read by encoding/json (codec_test.go
// checks both against it).

// readHead reads the fields every view of a staged entry has (key,
// resource, action, seq; bits 0 to 3 of seen) and reports whether k is one
// of them.
func readHead(r *jsonfast.Reader, k []byte, seen *uint32, key, resource, action *string, seq *uint64) bool {
	switch string(k) {
	case "key":
		r.Seen(seen, 1<<0)
		*key = r.String()
	case "resource":
		r.Seen(seen, 1<<1)
		*resource = r.String()
	case "action":
		r.Seen(seen, 1<<2)
		*action = r.String()
	case "seq":
		r.Seen(seen, 1<<3)
		*seq = r.Uint64()
	default:
		return false
	}
	return true
}

// decodeEntry decodes a staged entry.
func decodeEntry(raw []byte) (*Entry, error) {
	var e Entry
	r := jsonfast.NewReader(raw)
	var seen uint32
	r.Object(func(k []byte) {
		if readHead(r, k, &seen, &e.Key, &e.Resource, &e.Action, &e.Seq) {
			return
		}
		switch string(k) {
		case "tags":
			r.Seen(&seen, 1<<4)
			e.Tags = r.StringMap()
		case "diff":
			r.Seen(&seen, 1<<5)
			e.Diff = readChanges(r)
		case "cause":
			r.Seen(&seen, 1<<6)
			e.Cause = r.String()
		case "staged_at":
			r.Seen(&seen, 1<<7)
			e.StagedAt = r.Time()
		case "affected_by":
			r.Seen(&seen, 1<<8)
			e.AffectedBy = r.Strings()
		case "explicit":
			r.Seen(&seen, 1<<9)
			e.Explicit = r.Bool()
		case "plan":
			r.Seen(&seen, 1<<10)
			e.Plan = r.String()
		case "staged_by":
			r.Seen(&seen, 1<<11)
			e.StagedBy = r.String()
		default:
			r.Fail()
		}
	})
	if r.End() == nil {
		return &e, nil
	}
	e = Entry{}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

func readChanges(r *jsonfast.Reader) []Change {
	var out []Change
	if r.Array(func() {
		var c Change
		var seen uint32
		r.Object(func(k []byte) {
			switch string(k) {
			case "op":
				r.Seen(&seen, 1<<0)
				c.Op = r.String()
			case "key":
				r.Seen(&seen, 1<<1)
				c.Key = r.String()
			case "connection":
				r.Seen(&seen, 1<<2)
				c.Connection = r.Bool()
			case "old":
				r.Seen(&seen, 1<<3)
				c.Old = r.Value()
			case "new":
				r.Seen(&seen, 1<<4)
				c.New = r.Value()
			case "sensitive":
				r.Seen(&seen, 1<<5)
				c.Sensitive = r.Bool()
			case "file":
				r.Seen(&seen, 1<<6)
				c.File = r.Bool()
			default:
				r.Fail()
			}
		})
		out = append(out, c)
	}) && out == nil {
		out = []Change{}
	}
	return out
}

func appendChanges(dst []byte, list []Change) ([]byte, error) {
	if list == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i := range list {
		c := &list[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"op":`...)
		dst = jsonfast.AppendString(dst, c.Op)
		dst = append(dst, `,"key":`...)
		dst = jsonfast.AppendString(dst, c.Key)
		if c.Connection {
			dst = append(dst, `,"connection":true`...)
		}
		if c.File {
			dst = append(dst, `,"file":true`...)
		}
		var err error
		if c.Old != nil {
			dst = append(dst, `,"old":`...)
			if dst, err = jsonfast.AppendValue(dst, c.Old); err != nil {
				return dst, err
			}
		}
		if c.New != nil {
			dst = append(dst, `,"new":`...)
			if dst, err = jsonfast.AppendValue(dst, c.New); err != nil {
				return dst, err
			}
		}
		if c.Sensitive {
			dst = append(dst, `,"sensitive":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

// encodeSnapshot encodes a committed snapshot.
func encodeSnapshot(s *Snapshot) ([]byte, error) {
	return appendSnapshot(make([]byte, 0, 256), s)
}

func appendSnapshot(dst []byte, s *Snapshot) ([]byte, error) {
	var err error
	dst = append(dst, `{"own":`...)
	if dst, err = jsonfast.AppendMap(dst, s.Own); err != nil {
		return nil, err
	}
	dst = append(dst, `,"inputs":`...)
	if dst, err = jsonfast.AppendMap(dst, s.Inputs); err != nil {
		return nil, err
	}
	if len(s.Connections) > 0 {
		dst = append(dst, `,"connections":`...)
		dst = appendConnections(dst, s.Connections)
	}
	dst = append(dst, `,"committed_at":`...)
	if dst, err = jsonfast.AppendTime(dst, s.CommittedAt); err != nil {
		return nil, err
	}
	if s.Plan != "" {
		dst = append(dst, `,"plan":`...)
		dst = jsonfast.AppendString(dst, s.Plan)
	}
	dst = append(dst, `,"sensitive":`...)
	dst = jsonfast.AppendStrings(dst, s.Sensitive)
	if len(s.Masked) > 0 {
		dst = append(dst, `,"masked":`...)
		dst = jsonfast.AppendStrings(dst, s.Masked)
	}
	return append(dst, '}'), nil
}

func appendConnections(dst []byte, list []resources.Connection) []byte {
	dst = append(dst, '[')
	for i := range list {
		c := &list[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"emitter":`...)
		dst = jsonfast.AppendString(dst, c.Emitter)
		if c.Receiver != "" {
			dst = append(dst, `,"receiver":`...)
			dst = jsonfast.AppendString(dst, c.Receiver)
		}
		dst = append(dst, `,"mappings":`...)
		if c.Mappings == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for j, m := range c.Mappings {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"from":`...)
				dst = jsonfast.AppendString(dst, m.From)
				dst = append(dst, `,"to":`...)
				dst = jsonfast.AppendString(dst, m.To)
				if m.Key != "" {
					dst = append(dst, `,"key":`...)
					dst = jsonfast.AppendString(dst, m.Key)
				}
				if m.Tag != "" {
					dst = append(dst, `,"tag":`...)
					dst = jsonfast.AppendString(dst, m.Tag)
				}
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		if c.Seq != 0 {
			dst = append(dst, `,"seq":`...)
			dst = appendUint(dst, c.Seq)
		}
		if len(c.Rules) > 0 {
			dst = append(dst, `,"rules":`...)
			dst = jsonfast.AppendStrings(dst, c.Rules)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendUint(dst []byte, n uint64) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// encodeHistory encodes a history entry; one that keeps a removal's
// resource, connections or rules goes through encoding/json.
func encodeHistory(h *HistoryEntry) ([]byte, error) {
	if h.Removed != nil || len(h.Connections) > 0 || len(h.Rules) > 0 {
		return json.Marshal(h)
	}
	dst := make([]byte, 0, 512)
	dst = append(dst, `{"uid":`...)
	dst = jsonfast.AppendString(dst, h.UID)
	dst = append(dst, `,"key":`...)
	dst = jsonfast.AppendString(dst, h.Key)
	dst = append(dst, `,"resource":`...)
	dst = jsonfast.AppendString(dst, h.Resource)
	dst = append(dst, `,"action":`...)
	dst = jsonfast.AppendString(dst, h.Action)
	dst = append(dst, `,"diff":`...)
	var err error
	if dst, err = appendChanges(dst, h.Diff); err != nil {
		return nil, err
	}
	dst = append(dst, `,"cause":`...)
	dst = jsonfast.AppendString(dst, h.Cause)
	if h.Plan != "" {
		dst = append(dst, `,"plan":`...)
		dst = jsonfast.AppendString(dst, h.Plan)
	}
	if h.Task != "" {
		dst = append(dst, `,"task":`...)
		dst = jsonfast.AppendString(dst, h.Task)
	}
	if h.StagedBy != "" {
		dst = append(dst, `,"staged_by":`...)
		dst = jsonfast.AppendString(dst, h.StagedBy)
	}
	if h.RanBy != "" {
		dst = append(dst, `,"ran_by":`...)
		dst = jsonfast.AppendString(dst, h.RanBy)
	}
	if h.RanOn != "" {
		dst = append(dst, `,"ran_on":`...)
		dst = jsonfast.AppendString(dst, h.RanOn)
	}
	dst = append(dst, `,"committed_at":`...)
	if dst, err = jsonfast.AppendTime(dst, h.CommittedAt); err != nil {
		return nil, err
	}
	if h.Before != nil {
		dst = append(dst, `,"before":`...)
		if dst, err = appendSnapshot(dst, h.Before); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// encodeEntry encodes a staged entry.
func encodeEntry(e *Entry) ([]byte, error) {
	dst := make([]byte, 0, 256)
	dst = append(dst, `{"key":`...)
	dst = jsonfast.AppendString(dst, e.Key)
	dst = append(dst, `,"resource":`...)
	dst = jsonfast.AppendString(dst, e.Resource)
	dst = append(dst, `,"action":`...)
	dst = jsonfast.AppendString(dst, e.Action)
	dst = append(dst, `,"seq":`...)
	dst = appendUint(dst, e.Seq)
	if len(e.Tags) > 0 {
		dst = append(dst, `,"tags":`...)
		dst = jsonfast.AppendStringMap(dst, e.Tags)
	}
	dst = append(dst, `,"diff":`...)
	var err error
	if dst, err = appendChanges(dst, e.Diff); err != nil {
		return nil, err
	}
	dst = append(dst, `,"cause":`...)
	dst = jsonfast.AppendString(dst, e.Cause)
	dst = append(dst, `,"staged_at":`...)
	if dst, err = jsonfast.AppendTime(dst, e.StagedAt); err != nil {
		return nil, err
	}
	if e.StagedBy != "" {
		dst = append(dst, `,"staged_by":`...)
		dst = jsonfast.AppendString(dst, e.StagedBy)
	}
	if len(e.AffectedBy) > 0 {
		dst = append(dst, `,"affected_by":`...)
		dst = jsonfast.AppendStrings(dst, e.AffectedBy)
	}
	if e.Explicit {
		dst = append(dst, `,"explicit":true`...)
	}
	if e.Plan != "" {
		dst = append(dst, `,"plan":`...)
		dst = jsonfast.AppendString(dst, e.Plan)
	}
	return append(dst, '}'), nil
}

// decodeStamp reads the stamp of a staged entry; what it finds unusual
// goes to encoding/json.
func decodeStamp(raw []byte) (Stamp, error) {
	var st Stamp
	r := jsonfast.NewReader(raw)
	var seen uint32
	r.Object(func(k []byte) {
		if readHead(r, k, &seen, &st.Key, &st.Resource, &st.Action, &st.Seq) {
			return
		}
		switch string(k) {
		case "staged_at":
			r.Seen(&seen, 1<<4)
			st.StagedAt = r.Time()
		case "plan":
			r.Seen(&seen, 1<<5)
			st.Plan = r.String()
		case "diff":
			r.Seen(&seen, 1<<6)
			if r.Array(func() { r.Skip(); st.Diff = append(st.Diff, skipped{}) }) && st.Diff == nil {
				st.Diff = []skipped{}
			}
		case "tags", "cause", "affected_by", "explicit", "staged_by":
			r.Skip()
		default:
			r.Fail()
		}
	})
	if r.End() == nil {
		return st, nil
	}
	st = Stamp{}
	err := json.Unmarshal(raw, &st)
	return st, err
}

// decodeHeadFast reads the head of a staged entry as encoding/json would
// (decodeHead), or reports false for what it finds unusual.
func decodeHeadFast(raw []byte, h *Head) bool {
	r := jsonfast.NewReader(raw)
	var seen uint32
	r.Object(func(k []byte) {
		if readHead(r, k, &seen, &h.Key, &h.Resource, &h.Action, &h.Seq) {
			return
		}
		switch string(k) {
		case "tags":
			r.Seen(&seen, 1<<4)
			h.Tags = r.StringMap()
		case "affected_by":
			r.Seen(&seen, 1<<5)
			h.AffectedBy = r.Strings()
		case "staged_by":
			r.Seen(&seen, 1<<6)
			h.StagedBy = r.String()
		case "diff", "cause", "staged_at", "explicit", "plan":
			r.Skip()
		default:
			r.Fail()
		}
	})
	return r.End() == nil
}

// CommittedPlan returns the plan whose run committed resource's state, ""
// when none did or nothing is committed.
func CommittedPlan(tx *store.Tx, resource string) string {
	raw, err := tx.Peek(store.Committed, resource)
	if err != nil {
		return ""
	}
	return committedPlanOf(raw)
}

// committedPlanOf reads the plan of an encoded snapshot, "" if it does not
// decode.
func committedPlanOf(raw []byte) string {
	r := jsonfast.NewReader(raw)
	plan := ""
	var seen uint32
	r.Object(func(k []byte) {
		switch string(k) {
		case "plan":
			r.Seen(&seen, 1<<0)
			plan = r.String()
		case "own", "inputs", "connections", "committed_at", "sensitive", "masked":
			r.Skip()
		default:
			r.Fail()
		}
	})
	if r.End() == nil {
		return plan
	}
	var snap struct {
		Plan string `json:"plan"`
	}
	if json.Unmarshal(raw, &snap) != nil {
		return ""
	}
	return snap.Plan
}
