package staging

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// HistoryEntry is a committed staged entry.
type HistoryEntry struct {
	UID      string   `json:"uid"`
	Key      string   `json:"key"`
	Resource string   `json:"resource"`
	Action   string   `json:"action"`
	Diff     []Change `json:"diff"`
	Cause    string   `json:"cause"`
	Plan     string   `json:"plan,omitempty"`
	Task     string   `json:"task,omitempty"`
	// StagedBy is who last staged the entry (Entry.StagedBy); RanBy and
	// RanOn are the actor and the host of the runner that ran and
	// committed it. All three are "" in entries written before actors.
	StagedBy string `json:"staged_by,omitempty"`
	RanBy    string `json:"ran_by,omitempty"`
	RanOn    string `json:"ran_on,omitempty"`
	// CommittedAt is when the task's success was recorded.
	CommittedAt time.Time `json:"committed_at"`
	// Before is the committed state before this change (nil for a first
	// run).
	Before *Snapshot `json:"before,omitempty"`
	// Removed, Connections and Rules keep what a committed removal deleted
	// (the resource, every connection into or out of it, the rules naming
	// it) so that revert can put it back.
	Removed     *resources.Resource    `json:"removed,omitempty"`
	Connections []resources.Connection `json:"connections,omitempty"`
	Rules       []string               `json:"rules,omitempty"`
}

// Commit moves the staged entry key to history and updates the committed
// state, in the caller's transaction (the executor's, together with the
// task's status). ran are the effective inputs the action ran with; nil
// means the current ones. History records the change that ran; if the
// resource changed again meanwhile, what still differs is staged afresh,
// so nothing is forgotten. Committing a removal deletes the resource and
// restages the resources it fed.
func (s *Stager) Commit(key, plan, task string, ran map[string]any) (*HistoryEntry, error) {
	return s.CommitRan(key, plan, task, ran, nil)
}

// CommitRan is Commit given also ranSensitive, the inputs masked when the
// action ran (resources.Catalog.SensitiveInputs then). Those of ran's values
// stay masked in history and in the committed state even if what made them
// sensitive (a connection from a sensitive input) went away while the
// action ran; Commit knows only the current sensitivity.
func (s *Stager) CommitRan(key, plan, task string, ran map[string]any, ranSensitive map[string]bool) (*HistoryEntry, error) {
	h, err := s.commit(key, plan, task, ran, ranSensitive)
	if err != nil {
		return nil, err
	}
	return h, s.done(nil)
}

func (s *Stager) commit(key, plan, task string, ran map[string]any, ranSensitive map[string]bool) (*HistoryEntry, error) {
	e, err := s.entry(key)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, noEntry(key)
	}
	r, err := s.cat.Get(e.Resource)
	if err != nil {
		return nil, err
	}
	before, err := Committed(s.tx, e.Resource)
	if err != nil {
		return nil, err
	}
	h := &HistoryEntry{Key: key, Resource: e.Resource, Action: e.Action, Diff: e.Diff, Cause: e.Cause, Plan: plan, Task: task, StagedBy: e.StagedBy, RanBy: s.Actor, RanOn: s.Host, CommittedAt: s.now().UTC(), Before: before}
	s.drop(key)
	switch {
	case e.Action == ActionRemove:
		if err := s.keepRemoved(h, r); err != nil {
			return nil, err
		}
		if err := s.deleteResource(e.Resource, "removed "+e.Resource); err != nil {
			return nil, err
		}
	case e.Custom():
		// A custom action changes no inputs; the committed state stays.
	default:
		conns, err := s.cat.Incoming(e.Resource)
		if err != nil {
			return nil, err
		}
		if ran == nil {
			if ran, err = s.cat.Effective(e.Resource); err != nil {
				return nil, err
			}
		}
		var old map[string]any
		var oldConns []resources.Connection
		if before != nil {
			old, oldConns = before.Inputs, before.Connections
		}
		sens, err := s.cat.SensitiveInputs(e.Resource)
		if err != nil {
			return nil, err
		}
		sens = union(sens, ranSensitive)
		// An upgrade's file lines are what the action ran with, as the
		// values are (see upgrade.go).
		h.Diff = append(fileLines(e.Diff), diff(r, before.masked(), sens, old, ran, oldConns, conns)...)
		own, masked := ownValues(r, conns, ran, sens)
		snap := Snapshot{Own: own, Masked: masked, Inputs: ran, Sensitive: sortedTrue(sens), Connections: snapshotConns(conns), CommittedAt: h.CommittedAt, Plan: plan}
		raw, err := encodeSnapshot(&snap)
		if err != nil {
			return nil, fmt.Errorf("encode committed state of %s: %w", e.Resource, err)
		}
		if err := s.tx.Put(store.Committed, e.Resource, raw); err != nil {
			return nil, err
		}
		// run and update both bring the resource to the committed state:
		// the other one is done too if nothing differs, and whatever
		// changed while the action ran is staged afresh. It compares with
		// snap as written, rather than decode it back.
		s.wrote, s.wroteFor = &snap, e.Resource
		_, err = s.touchOne(e.Resource, again(e, "changed while running"))
		s.wrote = nil
		if err != nil {
			return nil, err
		}
	}
	seq, err := s.tx.NextSequence(store.History)
	if err != nil {
		return nil, err
	}
	h.UID = strconv.FormatUint(seq, 10)
	raw, err := encodeHistory(h)
	if err != nil {
		return nil, fmt.Errorf("encode history %s: %w", h.UID, err)
	}
	return h, s.tx.Put(store.History, store.SeqKey(seq), raw)
}

// union returns the keys set in a or b; a itself when b adds none.
func union(a, b map[string]bool) map[string]bool {
	var out map[string]bool
	for k, v := range b {
		if !v || a[k] {
			continue
		}
		if out == nil {
			out = make(map[string]bool, len(a)+len(b))
			maps.Copy(out, a)
		}
		out[k] = true
	}
	if out == nil {
		return a
	}
	return out
}

// sortedTrue returns the keys set in m, sorted, never nil.
func sortedTrue(m map[string]bool) []string {
	out := []string{}
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ownValues returns the resource's own values as they were when the action
// ran: ran for every input no connection feeds, the current own value for
// the others. Discarding a later change then restores what ran. It also
// returns which of them are marked resources.Resource.Masked: the current
// marks for the inputs connections feed; for the others, a value masked in
// ran (sens) that the base does not declare sensitive.
func ownValues(r *resources.Resource, conns []resources.Connection, ran map[string]any, sens map[string]bool) (map[string]any, []string) {
	own := make(map[string]any, len(r.Inputs))
	for k, v := range r.Inputs {
		own[k] = v
	}
	fed := map[string]bool{}
	for _, c := range conns {
		for _, m := range c.Mappings {
			fed[m.To] = true
		}
	}
	var masked []string
	for _, k := range r.Masked {
		if fed[k] {
			masked = append(masked, k)
		}
	}
	for k, v := range ran {
		switch {
		case fed[k]:
		case v == nil:
			delete(own, k)
		default:
			own[k] = v
			if d, ok := r.Base.Input(k); sens[k] && ok && !d.Sensitive {
				masked = append(masked, k)
			}
		}
	}
	sort.Strings(masked)
	return own, masked
}

// keepRemoved records in h what deleting r takes with it.
func (s *Stager) keepRemoved(h *HistoryEntry, r *resources.Resource) error {
	cp := *r
	cp.Removing = false
	h.Removed = &cp
	ins, err := s.cat.Incoming(r.Name)
	if err != nil {
		return err
	}
	h.Connections = append(h.Connections, ins...)
	rcvs, err := s.cat.Receivers(r.Name)
	if err != nil {
		return err
	}
	for _, rcv := range rcvs {
		if c, ok := s.cat.Connection(r.Name, rcv); ok {
			h.Connections = append(h.Connections, *c)
		}
	}
	rules, err := events.ListFor(s.tx, r.Name)
	if err != nil {
		return err
	}
	for _, rule := range rules {
		h.Rules = append(h.Rules, rule.String())
	}
	return nil
}

// History returns the last n committed entries, newest first (all if n ≤ 0).
// History only grows, so the last n are read from the end, by uid.
func History(tx *store.Tx, n int) ([]*HistoryEntry, error) {
	if n > 0 {
		k, _, err := tx.Last(store.History, "")
		if errors.Is(err, store.ErrNotFound) {
			return []*HistoryEntry{}, nil
		}
		if err != nil {
			return nil, err
		}
		last, err := strconv.ParseUint(k, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("history key %q is not a uid: %w", k, err)
		}
		out := make([]*HistoryEntry, 0, n)
		for seq := last; seq > 0 && len(out) < n; seq-- {
			h, err := GetHistory(tx, strconv.FormatUint(seq, 10))
			if errors.Is(err, ErrNoHistory) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, h)
		}
		return out, nil
	}
	var all []*HistoryEntry
	err := tx.ForEach(store.History, "", func(k string, v []byte) error {
		var h HistoryEntry
		if err := json.Unmarshal(v, &h); err != nil {
			return store.Damagedf("history record %s does not decode: %v", k, err)
		}
		all = append(all, &h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if all == nil {
		all = []*HistoryEntry{}
	}
	slices.Reverse(all)
	return all, nil
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
		return nil, store.Damagedf("history record %s does not decode: %v", uid, err)
	}
	return &h, nil
}

// Discard undoes staged entries: a discarded run of a never-committed
// resource deletes it (with its connections and rules); a discarded update
// restores the committed values and connections; a discarded remove keeps
// the resource; a discarded custom action just drops the entry. An
// affected child's entry stays while the change it follows is staged:
// discard that change instead.
func (s *Stager) Discard(keys ...string) ([]*Entry, error) {
	ents, err := s.discard(keys)
	if err != nil {
		return nil, err
	}
	return ents, s.done(nil)
}

func (s *Stager) discard(keys []string) ([]*Entry, error) {
	ents := make([]*Entry, 0, len(keys))
	for _, k := range keys {
		e, err := s.entry(k)
		if err != nil {
			return nil, err
		}
		if e == nil {
			return nil, noEntry(k)
		}
		ents = append(ents, e)
	}
	for _, e := range ents {
		cur, err := s.entry(e.Key)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			continue // gone with an earlier one (a deleted resource)
		}
		if err := s.discardOne(cur); err != nil {
			return nil, err
		}
	}
	return ents, nil
}

// DiscardAll discards every staged entry, newest first.
func (s *Stager) DiscardAll() ([]*Entry, error) {
	if err := s.flush(); err != nil {
		return nil, err
	}
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
	cause := "discarded " + e.Key
	switch {
	case e.Custom():
		s.drop(e.Key)
		return nil
	case e.Action == ActionRemove:
		s.drop(e.Key)
		r, err := s.cat.Get(e.Resource)
		if err != nil {
			return err
		}
		cp := *r
		cp.Removing = false
		if err := s.cat.Put(&cp); err != nil {
			return err
		}
		_, err = s.touchOne(e.Resource, reason{cause: cause})
		return err
	case snap == nil && e.Action == ActionRun:
		return s.deleteResource(e.Resource, cause)
	case snap == nil:
		// An update staged by hand before the first run: nothing to restore.
		s.drop(e.Key)
		return nil
	default:
		if snap, err = s.forgetGone(e.Resource, snap); err != nil {
			return err
		}
		if err := s.restoreBase(e.Resource, e.Key, e.Diff); err != nil {
			return err
		}
		if err := s.restore(e.Resource, snap); err != nil {
			return err
		}
		why := again(e, cause)
		if !why.child {
			s.drop(e.Key)
		}
		// A child keeps its entry, and its place, if its cause still
		// reaches it; touch drops it otherwise.
		_, err = s.touch(why, []string{e.Resource})
		return err
	}
}

// forgetGone rewrites the committed snapshot of a resource whose
// committed connections come from emitters that no longer exist: such a
// connection cannot be put back, so discarding a change would otherwise
// never end. The inputs it fed alone keep their committed values as the
// resource's own, so what the resource is stays what was committed.
func (s *Stager) forgetGone(name string, snap *Snapshot) (*Snapshot, error) {
	var kept []resources.Connection
	frozen := map[string]bool{}
	fedByLive := map[string]bool{}
	for _, c := range snap.Connections {
		if s.cat.Exists(c.Emitter) {
			kept = append(kept, c)
			for _, m := range c.Mappings {
				fedByLive[m.To] = true
			}
			continue
		}
		for _, m := range c.Mappings {
			frozen[m.To] = true
		}
	}
	if len(frozen) == 0 {
		return snap, nil
	}
	cp := *snap
	cp.Connections = kept
	cp.Own = make(map[string]any, len(snap.Own))
	for k, v := range snap.Own {
		cp.Own[k] = v
	}
	oldSens := snap.masked()
	cp.Masked = slices.Clone(snap.Masked)
	for to := range frozen {
		if !fedByLive[to] {
			cp.Own[to] = snap.Inputs[to]
			// The value stays masked if it was: it may be a secret
			// that came from the emitter.
			if oldSens[to] && !slices.Contains(cp.Masked, to) {
				cp.Masked = append(cp.Masked, to)
			}
		}
	}
	sort.Strings(cp.Masked)
	raw, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("encode committed state of %s: %w", name, err)
	}
	return &cp, s.tx.Put(store.Committed, name, raw)
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
	if !slices.Equal(connKeys(cur), connKeys(snap.Connections)) {
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
	}
	cp := *r
	cp.Masked = slices.Clone(snap.Masked)
	cp.Inputs = make(map[string]any, len(snap.Own))
	for k, v := range snap.Own {
		// JSON gives numbers back as float64; the rest of solar expects
		// the canonical form the schema gives (int64 for int).
		if d, ok := r.Base.Input(k); ok && v != nil {
			if cv, err := d.Schema.Check(v); err == nil {
				v = cv
			}
		}
		cp.Inputs[k] = v
	}
	return s.cat.Put(&cp)
}

// Revert stages the inverse of a committed change: a first run is undone
// by a remove, an update (or a later run) by the old values, a remove by
// recreating the resource with its connections and rules. Custom actions
// cannot be reverted: solar does not know their inverse.
func (s *Stager) Revert(uid string) ([]*Entry, error) {
	ents, err := s.revert(uid)
	if err != nil {
		return nil, err
	}
	return ents, s.done(nil)
}

func (s *Stager) revert(uid string) ([]*Entry, error) {
	h, err := GetHistory(s.tx, uid)
	if err != nil {
		return nil, err
	}
	cause := "revert " + uid
	switch h.Action {
	case ActionRun, ActionUpdate:
		if !s.cat.Exists(h.Resource) {
			return nil, fmt.Errorf("%w %s: %s no longer exists", ErrNotRevertible, uid, h.Resource)
		}
		if h.Before == nil {
			if h.Action == ActionUpdate {
				return nil, fmt.Errorf("%w %s: no earlier state of %s was recorded", ErrNotRevertible, uid, h.Resource)
			}
			e, err := s.remove(h.Resource)
			if err != nil || e == nil {
				return nil, err
			}
			return []*Entry{e}, nil
		}
		if err := s.restoreBase(h.Resource, "history "+uid, h.Diff); err != nil {
			return nil, err
		}
		if err := s.restore(h.Resource, h.Before); err != nil {
			return nil, err
		}
		why, err := s.revertFiles(reason{cause: cause}, h)
		if err != nil {
			return nil, err
		}
		return s.touch(why, []string{h.Resource})
	case ActionRemove:
		if h.Removed == nil {
			return nil, fmt.Errorf("%w %s: the removed resource was not kept", ErrNotRevertible, uid)
		}
		if s.cat.Exists(h.Resource) {
			return nil, fmt.Errorf("%w %s: a resource named %s exists again; remove or rename it first", ErrNotRevertible, uid, h.Resource)
		}
		if err := s.recreate(h); err != nil {
			return nil, fmt.Errorf("revert %s: %w", uid, err)
		}
		return s.touch(reason{cause: cause}, []string{h.Resource})
	default:
		return nil, fmt.Errorf("%w %s: %s is a custom action and solar does not know its inverse; stage the opposite action yourself (solar ch stage -a ACTION -n %s)", ErrNotRevertible, uid, h.Key, h.Resource)
	}
}

// recreate puts back a removed resource with the connections and rules
// whose other resources still exist.
func (s *Stager) recreate(h *HistoryEntry) error {
	r := *h.Removed
	if err := s.cat.Put(&r); err != nil {
		return err
	}
	for _, c := range h.Connections {
		if !s.cat.Exists(c.Emitter) || !s.cat.Exists(c.Receiver) {
			continue
		}
		if _, err := s.cat.Connect(c.Emitter, c.Receiver, c.Mappings); err != nil {
			return err
		}
	}
	var rules []events.Rule
	for _, text := range h.Rules {
		rule, err := events.Parse(text)
		if err != nil {
			return err
		}
		if s.cat.Exists(rule.Emitter.Resource) && s.cat.Exists(rule.Subscriber.Resource) {
			rules = append(rules, rule)
		}
	}
	_, err := events.Add(s.tx, s.cat, rules...)
	return err
}
