package staging

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Errors for bad requests; each returned error wraps one and names the thing.
var (
	// ErrNoEntry means no staged entry has the given key.
	ErrNoEntry = invalid.New("nothing staged under that key")
	// ErrNoHistory means no history entry has the given uid.
	ErrNoHistory = invalid.New("no history entry with that uid")
	// ErrNotRevertible means the history entry cannot be reverted.
	ErrNotRevertible = invalid.New("cannot revert")
	// ErrUnknownAction means the base does not define the action.
	ErrUnknownAction = invalid.New("unknown action")
)

// Lifecycle actions; every other action is a custom action.
const (
	ActionRun    = "run"
	ActionUpdate = "update"
	ActionRemove = "remove"
)

// Change operations in a diff.
const (
	OpAdd    = "add"
	OpChange = "change"
	OpRemove = "remove"
)

// Change is one line of a diff: an input value, an incoming connection,
// or an entry of the resource's base files (File, staged by "resource
// upgrade"; see upgrade.go), never its bytes.
type Change struct {
	Op         string `json:"op"`
	Key        string `json:"key"`
	Connection bool   `json:"connection,omitempty"`
	File       bool   `json:"file,omitempty"`
	Old        any    `json:"old,omitempty"`
	New        any    `json:"new,omitempty"`
	Sensitive  bool   `json:"sensitive,omitempty"`
}

// Entry is one staged (resource, action).
type Entry struct {
	Key      string    `json:"key"`
	Resource string    `json:"resource"`
	Action   string    `json:"action"`
	Seq      uint64    `json:"seq"`
	Tags     tags.Set  `json:"tags,omitempty"`
	Diff     []Change  `json:"diff"`
	Cause    string    `json:"cause"`
	StagedAt time.Time `json:"staged_at"`
	// StagedBy is the actor (internal/actor) who staged or last changed
	// the entry: the last writer, as StagedAt is, since an operator asks
	// who changed it last. "" for entries written before actors.
	StagedBy string `json:"staged_by,omitempty"`
	// AffectedBy lists the resources whose changes made this entry (for
	// affected children, which carry no tags of their own).
	AffectedBy []string `json:"affected_by,omitempty"`
	// Explicit marks an entry staged for the action itself, not for a
	// change: by hand (solar ch stage -a) or as a pending refresh. It stays
	// staged when the diff goes back to empty, until it is committed or
	// discarded.
	Explicit bool `json:"explicit,omitempty"`
	// Plan is the plan whose run staged or last changed the entry (a
	// pending refresh, outputs that reached the resource); "" when a
	// command did.
	Plan string `json:"plan,omitempty"`
}

// Custom reports whether the entry is for an action other than run, update
// and remove.
func (e *Entry) Custom() bool {
	switch e.Action {
	case ActionRun, ActionUpdate, ActionRemove:
		return false
	}
	return true
}

// Key returns the staged key of a resource's action.
func Key(resource, action string) string { return resource + "." + action }

func tagKey(k, v, entry string) string { return k + "=" + v + "\x00" + entry }

func noEntry(key string) error {
	return fmt.Errorf("%w: %q (see solar ch stage)", ErrNoEntry, key)
}

// getEntry reads a stored entry; a missing one is nil without error.
func getEntry(tx *store.Tx, key string) (*Entry, error) {
	raw, err := tx.Peek(store.Staged, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read staged entry %s: %w", key, err)
	}
	e, err := decodeEntry(raw)
	if err != nil {
		return nil, store.Damagedf("staged entry %s does not decode: %v", key, err)
	}
	return e, nil
}

// Get returns the staged entry with key, or an error wrapping ErrNoEntry.
func Get(tx *store.Tx, key string) (*Entry, error) {
	e, err := getEntry(tx, key)
	if err == nil && e == nil {
		err = noEntry(key)
	}
	return e, err
}

// entry returns the entry under key as this Stager sees it, pending writes
// included, or nil if there is none.
func (s *Stager) entry(key string) (*Entry, error) {
	if e, ok := s.pending[key]; ok {
		return e, nil
	}
	e, err := getEntry(s.tx, key)
	if err != nil {
		return nil, err
	}
	// flush needs the stored entry's tags to update the tag index; the
	// entry itself may be changed by the caller, its tags map is not (a
	// new entry gets a clone).
	if s.storedTags == nil {
		s.storedTags = map[string]storedTags{}
	}
	if e != nil {
		s.storedTags[key] = storedTags{tags: e.Tags, stored: true}
	} else {
		s.storedTags[key] = storedTags{}
	}
	return e, nil
}

// storedTags are the tags of an entry as stored; stored is false when no
// entry was.
type storedTags struct {
	tags   tags.Set
	stored bool
}

// put buffers the write of e; flush stores it.
func (s *Stager) put(e *Entry) {
	if s.pending == nil {
		s.pending = map[string]*Entry{}
	}
	s.pending[e.Key] = e
}

// drop buffers the deletion of the entry under key, if there is one.
func (s *Stager) drop(key string) {
	if s.pending == nil {
		s.pending = map[string]*Entry{}
	}
	s.pending[key] = nil
}

// flush stores the pending entries and their tag index keys, in key
// order. bbolt splits a node only when the transaction commits, so
// inserting thousands of keys out of order into one transaction (a
// composition stages an entry and three or four index keys per resource)
// shifts a growing node's entries on every insert, which is quadratic; in
// key order each insert lands after the previous one and the cost stays
// linear.
func (s *Stager) flush() error {
	if len(s.pending) == 0 {
		// Another Stager of the transaction may write before this one's
		// next call: what it read is forgotten here, as after a write.
		clear(s.storedTags)
		return nil
	}
	type write struct {
		key   string
		value []byte
		del   bool
	}
	// The entries and the tag index, each written in key order (bucket
	// by bucket); the index is sorted on another core while the entries
	// are encoded.
	ents := make([]write, 0, len(s.pending))
	idx := make([]write, 0, 3*len(s.pending))
	var enc []*Entry // of ents[i] when it is to be encoded
	for key, e := range s.pending {
		memo, known := s.storedTags[key]
		was, stored := memo.tags, memo.stored
		if !known {
			old, err := getEntry(s.tx, key)
			if err != nil {
				return err
			}
			if old != nil {
				was, stored = old.Tags, true
			}
		}
		var is tags.Set
		if e != nil {
			is = e.Tags
		}
		for k, v := range was {
			if nv, ok := is[k]; !ok || nv != v {
				idx = append(idx, write{key: tagKey(k, v, key), del: true})
			}
		}
		for k, v := range is {
			if ov, ok := was[k]; !ok || ov != v {
				idx = append(idx, write{key: tagKey(k, v, key), value: []byte{}})
			}
		}
		switch {
		case e != nil:
			ents = append(ents, write{key: key})
			enc = append(enc, e)
		case stored:
			ents = append(ents, write{key: key, del: true})
			enc = append(enc, nil)
		}
	}
	clear(s.pending)
	clear(s.storedTags)
	byKey := func(a, b write) int { return strings.Compare(a.key, b.key) }
	var wg sync.WaitGroup
	if len(idx) >= parallelSort {
		wg.Go(func() { slices.SortFunc(idx, byKey) })
	} else {
		// A task's commit deletes an entry or two: a goroutine of its own
		// would cost more (waking an idle thread) than the sort.
		slices.SortFunc(idx, byKey)
	}
	var err error
	for i, e := range enc {
		if e == nil {
			continue
		}
		if ents[i].value, err = encodeEntry(e); err != nil {
			err = fmt.Errorf("encode staged entry %s: %w", e.Key, err)
			break
		}
	}
	slices.SortFunc(ents, byKey)
	wg.Wait()
	if err != nil {
		return err
	}
	for _, b := range []struct {
		bucket string
		ws     []write
	}{{store.Staged, ents}, {store.StagedTags, idx}} {
		for _, w := range b.ws {
			if w.del {
				err = s.tx.Delete(b.bucket, w.key)
			} else {
				err = s.tx.Put(b.bucket, w.key, w.value)
			}
			if err != nil {
				return fmt.Errorf("write staged log at %q: %w", w.key, err)
			}
		}
	}
	return nil
}

// parallelSort is the number of index writes from which flush sorts them
// on another core while it encodes the entries.
const parallelSort = 1024

// List returns every staged entry in staging order.
func List(tx *store.Tx) ([]*Entry, error) {
	var out []*Entry
	err := tx.ForEach(store.Staged, "", func(k string, v []byte) error {
		e, err := decodeEntry(v)
		if err != nil {
			return store.Damagedf("staged entry %s does not decode: %v", k, err)
		}
		out = append(out, e)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

// ForResource returns the staged entries of one resource, in staging order.
func ForResource(tx *store.Tx, resource string) ([]*Entry, error) {
	var out []*Entry
	err := tx.ForEach(store.Staged, resource+".", func(k string, v []byte) error {
		e, err := decodeEntry(v)
		if err != nil {
			return store.Damagedf("staged entry %s does not decode: %v", k, err)
		}
		// "rmq.1." also prefixes "rmq.1.x.run"; keep only this resource's.
		if e.Resource == resource {
			out = append(out, e)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

// Stamp is what a check for stale plans reads of a staged entry: which
// action, staged by which plan's run ("" for a command) and when, and how
// many changes its diff holds. Checking a plan of 100,000 tasks decodes a
// stamp per entry instead of the whole entry.
type Stamp struct {
	Key      string    `json:"key"`
	Resource string    `json:"resource"`
	Action   string    `json:"action"`
	Seq      uint64    `json:"seq"`
	StagedAt time.Time `json:"staged_at"`
	Plan     string    `json:"plan,omitempty"`
	Diff     []skipped `json:"diff"`
}

// skipped is a JSON value read over without being decoded.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// StampsFor returns the stamps of the entries staged for resource, oldest
// first: ForResource without the entries' diffs, tags and causes.
func StampsFor(tx *store.Tx, resource string) ([]Stamp, error) {
	var out []Stamp
	err := tx.ForEach(store.Staged, resource+".", func(k string, v []byte) error {
		st, err := decodeStamp(v)
		if err != nil {
			return store.Damagedf("staged entry %s does not decode: %v", k, err)
		}
		// "rmq.1." also prefixes "rmq.1.x.run"; keep only this resource's.
		if st.Resource == resource {
			out = append(out, st)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

// AllStamps returns the stamps of every staged entry by resource, each
// resource's oldest first: StampsFor for many resources at once, in one
// pass over the log.
func AllStamps(tx *store.Tx) (map[string][]Stamp, error) {
	out := map[string][]Stamp{}
	err := tx.ForEach(store.Staged, "", func(k string, v []byte) error {
		st, err := decodeStamp(v)
		if err != nil {
			return store.Damagedf("staged entry %s does not decode: %v", k, err)
		}
		out[st.Resource] = append(out[st.Resource], st)
		return nil
	})
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].Seq < list[j].Seq })
	}
	return out, err
}

// Head is a staged entry without its diff, cause and time: what selecting
// and planning read. "ch process" of 100,000 entries decodes heads, which
// are a fraction of the entries' size.
type Head struct {
	Key        string   `json:"key"`
	Resource   string   `json:"resource"`
	Action     string   `json:"action"`
	Seq        uint64   `json:"seq"`
	Tags       tags.Set `json:"tags,omitempty"`
	AffectedBy []string `json:"affected_by,omitempty"`
	StagedBy   string   `json:"staged_by,omitempty"`
}

// decodeHead reads the head of a stored entry. Resource and action share
// the key's bytes when it is made of them, as it always is, so a head holds
// one string where the record has three.
func decodeHead(key string, raw []byte) (*Head, error) {
	var h Head
	if !decodeHeadFast(raw, &h) {
		h = Head{}
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, store.Damagedf("staged entry %s does not decode: %v", key, err)
		}
	}
	if n := len(h.Resource); len(h.Key) == n+1+len(h.Action) && h.Key[:n] == h.Resource && h.Key[n] == '.' && h.Key[n+1:] == h.Action {
		h.Resource, h.Action = h.Key[:n], h.Key[n+1:]
	}
	return &h, nil
}

// listHeads returns the head of every staged entry, in key order.
func listHeads(tx *store.Tx) ([]*Head, error) {
	var out []*Head
	err := tx.ForEach(store.Staged, "", func(k string, v []byte) error {
		h, err := decodeHead(k, v)
		if err == nil {
			out = append(out, h)
		}
		return err
	})
	return out, err
}

// Select returns, in staging order, the entries whose copied tags match expr
// (all entries when expr is nil), plus the affected children of a selected
// resource: they carry no tags but belong to the change that caused them.
func Select(tx *store.Tx, expr *tags.Expr) ([]*Entry, error) {
	if expr == nil {
		return List(tx)
	}
	heads, err := SelectHeads(tx, expr)
	if err != nil {
		return nil, err
	}
	out := make([]*Entry, len(heads))
	for i, h := range heads {
		if out[i], err = Get(tx, h.Key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SelectHeads is Select returning heads: the same entries, in the same
// order, without their diffs.
func SelectHeads(tx *store.Tx, expr *tags.Expr) ([]*Head, error) {
	var candidates []*Head
	switch req := expr.Required(); {
	case expr == nil:
		all, err := listHeads(tx)
		if err != nil {
			return nil, err
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
		return all, nil
	case req != nil && req[0][1] != "*":
		prefix := req[0][0] + "=" + req[0][1] + "\x00"
		var keys []string
		if err := tx.ForEach(store.StagedTags, prefix, func(k string, _ []byte) error {
			keys = append(keys, strings.TrimPrefix(k, prefix))
			return nil
		}); err != nil {
			return nil, err
		}
		for _, k := range keys {
			raw, err := tx.Get(store.Staged, k)
			if err != nil {
				return nil, fmt.Errorf("staged tag index names %s: %w", k, noEntry(k))
			}
			h, err := decodeHead(k, raw)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, h)
		}
		// Affected children are untagged, so the index cannot find them.
		all, err := listHeads(tx)
		if err != nil {
			return nil, err
		}
		for _, h := range all {
			if len(h.AffectedBy) > 0 && len(h.Tags) == 0 {
				candidates = append(candidates, h)
			}
		}
	default:
		all, err := listHeads(tx)
		if err != nil {
			return nil, err
		}
		candidates = all
	}
	var out []*Head
	taken := map[string]bool{}   // entry keys in out
	causes := map[string]bool{}  // resources whose changes are selected
	kids := map[string][]*Head{} // cause -> untagged entries it affected
	var queue []string           // causes whose children are not taken yet
	for _, e := range candidates {
		switch {
		case len(e.Tags) == 0:
			for _, by := range e.AffectedBy {
				kids[by] = append(kids[by], e)
			}
		case expr.Match(e.Tags):
			taken[e.Key] = true
			out = append(out, e)
			if !causes[e.Resource] {
				causes[e.Resource] = true
				queue = append(queue, e.Resource)
			}
		}
	}
	// Children follow their causes, transitively (a chain of children).
	for len(queue) > 0 {
		cause := queue[0]
		queue = queue[1:]
		for _, e := range kids[cause] {
			if taken[e.Key] {
				continue
			}
			taken[e.Key] = true
			out = append(out, e)
			if !causes[e.Resource] {
				causes[e.Resource] = true
				queue = append(queue, e.Resource)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// FormatChange renders a diff line: "+ k: v", "~ k: old >> new", "- k: v",
// masking sensitive values.
func FormatChange(c Change) string {
	show := func(v any) string {
		if c.Sensitive && v != nil {
			return "********"
		}
		if v == nil {
			return "null"
		}
		if v == "" {
			// Shown bare, an empty string would vanish into "key: ".
			return `""`
		}
		return schema.Format(v)
	}
	if c.File {
		return formatFile(c)
	}
	key := c.Key
	if c.Connection {
		key = "connection " + c.Key
		switch c.Op {
		case OpAdd:
			return "+ " + key
		case OpRemove:
			return "- " + key
		}
	}
	switch c.Op {
	case OpAdd:
		return "+ " + key + ": " + show(c.New)
	case OpRemove:
		return "- " + key + ": " + show(c.Old)
	default:
		return "~ " + key + ": " + show(c.Old) + " >> " + show(c.New)
	}
}

// connKeys renders a resource's incoming connections as diff keys.
func connKeys(conns []resources.Connection) []string {
	var out []string
	for _, c := range conns {
		for _, m := range c.Mappings {
			to := m.To
			if m.Key != "" {
				to += ":" + m.Key
			}
			if m.Tag != "" {
				to += "|" + m.Tag
			}
			out = append(out, c.Emitter+"."+m.From+" -> "+to)
		}
	}
	sort.Strings(out)
	return out
}
