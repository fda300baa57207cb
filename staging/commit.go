package staging

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// HistoryEntry is a committed staged entry.
type HistoryEntry struct {
	UID         string    `json:"uid"`
	Key         string    `json:"key"`
	Resource    string    `json:"resource"`
	Action      string    `json:"action"`
	Diff        []Change  `json:"diff"`
	Cause       string    `json:"cause"`
	Plan        string    `json:"plan,omitempty"`
	Task        string    `json:"task,omitempty"`
	CommittedAt time.Time `json:"committed_at"`
	// Before is the committed state before this change (nil for a first
	// run); Removed keeps a removed resource so revert can recreate it.
	Before  *Snapshot           `json:"before,omitempty"`
	Removed *resources.Resource `json:"removed,omitempty"`
}

// Commit moves the staged entry key to history and updates the committed
// state, in the caller's transaction (the executor's, together with the
// task's status). ran are the effective inputs the action ran with; nil
// means the current ones. If the resource changed again while the action
// ran, a fresh entry is staged so nothing is forgotten.
func (s *Stager) Commit(key, plan, task string, ran map[string]any) (*HistoryEntry, error) {
	e, err := getEntry(s.tx, key)
	if err != nil {
		return nil, err
	}
	before, err := Committed(s.tx, e.Resource)
	if err != nil {
		return nil, err
	}
	h := &HistoryEntry{Key: key, Resource: e.Resource, Action: e.Action, Diff: e.Diff, Cause: e.Cause, Plan: plan, Task: task, CommittedAt: s.now().UTC(), Before: before}
	if err := deleteEntry(s.tx, key); err != nil {
		return nil, err
	}
	r, err := s.cat.Get(e.Resource)
	if err != nil {
		return nil, err
	}
	switch {
	case e.Action == ActionRemove:
		cp := *r
		cp.Removing = false
		h.Removed = &cp
		if err := s.dropResource(e.Resource); err != nil {
			return nil, err
		}
	case e.Custom():
		// A custom action changes no inputs; the committed state stays.
	default:
		eff, err := s.cat.Effective(e.Resource)
		if err != nil {
			return nil, err
		}
		if ran == nil {
			ran = eff
		}
		conns, err := s.cat.Incoming(e.Resource)
		if err != nil {
			return nil, err
		}
		snap := Snapshot{Own: r.Inputs, Inputs: ran, Connections: conns, CommittedAt: h.CommittedAt}
		raw, err := json.Marshal(snap)
		if err != nil {
			return nil, err
		}
		if err := s.tx.Put(store.Committed, e.Resource, raw); err != nil {
			return nil, err
		}
		// run and update both bring the resource to the committed state, so
		// the other one is done too if its diff is now empty.
		if _, err := s.touchOne(e.Resource, "changed while running", nil, true); err != nil {
			return nil, err
		}
	}
	seq, err := s.tx.NextSequence(store.History)
	if err != nil {
		return nil, err
	}
	h.UID = strconv.FormatUint(seq, 10)
	raw, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return h, s.tx.Put(store.History, store.SeqKey(seq), raw)
}

// History returns the last n committed entries, newest first (all if n ≤ 0).
func History(tx *store.Tx, n int) ([]*HistoryEntry, error) {
	var all []*HistoryEntry
	err := tx.ForEach(store.History, "", func(k string, v []byte) error {
		var h HistoryEntry
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("decode history %s: %w", k, err)
		}
		all = append(all, &h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*HistoryEntry, 0, len(all))
	for i := len(all) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		out = append(out, all[i])
	}
	return out, nil
}

// GetHistory returns one history entry by uid.
func GetHistory(tx *store.Tx, uid string) (*HistoryEntry, error) {
	n, err := strconv.ParseUint(uid, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %q (see solar ch history)", ErrNoHistory, uid)
	}
	raw, err := tx.Get(store.History, store.SeqKey(n))
	if err != nil {
		return nil, fmt.Errorf("%w: %q (see solar ch history)", ErrNoHistory, uid)
	}
	var h HistoryEntry
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("decode history %s: %w", uid, err)
	}
	return &h, nil
}

// Discard undoes staged entries: a discarded run of a never-committed
// resource deletes it; a discarded update restores the committed values and
// connections; a discarded remove keeps the resource; a discarded custom
// action just drops the entry.
func (s *Stager) Discard(keys ...string) ([]*Entry, error) {
	var ents []*Entry
	for _, k := range keys {
		e, err := getEntry(s.tx, k)
		if err != nil {
			return nil, err
		}
		ents = append(ents, e)
	}
	for _, e := range ents {
		if !s.tx.Has(store.Staged, e.Key) {
			continue // gone with an earlier discard (a deleted resource)
		}
		if err := s.discardOne(e); err != nil {
			return nil, err
		}
	}
	return ents, nil
}

// DiscardAll discards every staged entry, newest first.
func (s *Stager) DiscardAll() ([]*Entry, error) {
	all, err := List(s.tx)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		keys = append(keys, all[i].Key)
	}
	return s.Discard(keys...)
}

func (s *Stager) discardOne(e *Entry) error {
	snap, err := Committed(s.tx, e.Resource)
	if err != nil {
		return err
	}
	switch {
	case e.Custom():
		return deleteEntry(s.tx, e.Key)
	case e.Action == ActionRemove:
		if err := deleteEntry(s.tx, e.Key); err != nil {
			return err
		}
		r, err := s.cat.Get(e.Resource)
		if err != nil {
			return err
		}
		cp := *r
		cp.Removing = false
		if err := s.cat.Put(&cp); err != nil {
			return err
		}
		_, err = s.touchOne(e.Resource, "remove discarded", nil, true)
		return err
	case snap == nil:
		down, err := s.cat.Downstream(e.Resource)
		if err != nil {
			return err
		}
		if err := s.dropResource(e.Resource); err != nil {
			return err
		}
		_, err = s.Touch("discarded "+e.Key, directOnly(s.cat, down)...)
		return err
	default:
		if err := s.restore(e.Resource, snap); err != nil {
			return err
		}
		if err := deleteEntry(s.tx, e.Key); err != nil {
			return err
		}
		_, err = s.Touch("discarded "+e.Key, e.Resource)
		return err
	}
}

// restore puts a resource's own values and incoming connections back to a
// committed snapshot.
func (s *Stager) restore(name string, snap *Snapshot) error {
	r, err := s.cat.Get(name)
	if err != nil {
		return err
	}
	cur, err := s.cat.Incoming(name)
	if err != nil {
		return err
	}
	for _, c := range cur {
		if _, err := s.cat.Disconnect(c.Emitter, name); err != nil {
			return err
		}
	}
	for _, c := range snap.Connections {
		if !s.cat.Exists(c.Emitter) {
			continue
		}
		if _, err := s.cat.Connect(c.Emitter, name, c.Mappings); err != nil {
			return err
		}
	}
	cp := *r
	cp.Inputs = map[string]any{}
	for k, v := range snap.Own {
		cp.Inputs[k] = v
	}
	return s.cat.Put(&cp)
}

// Revert stages the inverse of a committed change: a run is undone by a
// remove, an update by the old values, a remove by recreating the resource.
// Custom actions cannot be reverted: solar does not know their inverse.
func (s *Stager) Revert(uid string) ([]*Entry, error) {
	h, err := GetHistory(s.tx, uid)
	if err != nil {
		return nil, err
	}
	switch h.Action {
	case ActionRun:
		if h.Before != nil {
			return s.revertUpdate(h)
		}
		if !s.cat.Exists(h.Resource) {
			return nil, fmt.Errorf("%w %s: %s no longer exists", ErrNotRevertible, uid, h.Resource)
		}
		e, err := s.Remove(h.Resource)
		if err != nil || e == nil {
			return nil, err
		}
		return []*Entry{e}, nil
	case ActionUpdate:
		return s.revertUpdate(h)
	case ActionRemove:
		if h.Removed == nil {
			return nil, fmt.Errorf("%w %s: the removed resource was not kept", ErrNotRevertible, uid)
		}
		if s.cat.Exists(h.Resource) {
			return nil, fmt.Errorf("%w %s: a resource named %s exists again", ErrNotRevertible, uid, h.Resource)
		}
		r := *h.Removed
		if err := s.cat.Put(&r); err != nil {
			return nil, err
		}
		if h.Before != nil {
			for _, c := range h.Before.Connections {
				if s.cat.Exists(c.Emitter) {
					if _, err := s.cat.Connect(c.Emitter, r.Name, c.Mappings); err != nil {
						return nil, err
					}
				}
			}
		}
		return s.Touch("revert "+uid, r.Name)
	default:
		return nil, fmt.Errorf("%w %s: %s is a custom action and solar does not know its inverse; stage the opposite action yourself (solar ch stage -a ACTION -n %s)", ErrNotRevertible, uid, h.Key, h.Resource)
	}
}

func (s *Stager) revertUpdate(h *HistoryEntry) ([]*Entry, error) {
	if !s.cat.Exists(h.Resource) {
		return nil, fmt.Errorf("%w %s: %s no longer exists", ErrNotRevertible, h.UID, h.Resource)
	}
	if h.Before == nil {
		return nil, fmt.Errorf("%w %s: no earlier state recorded", ErrNotRevertible, h.UID)
	}
	if err := s.restore(h.Resource, h.Before); err != nil {
		return nil, err
	}
	return s.Touch("revert "+h.UID, h.Resource)
}
