package staging

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Snapshot is a resource's committed state: what its actions last ran with.
type Snapshot struct {
	Own         map[string]any         `json:"own"`
	Inputs      map[string]any         `json:"inputs"`
	Connections []resources.Connection `json:"connections"`
	CommittedAt time.Time              `json:"committed_at"`
}

// Committed returns the resource's committed snapshot, or nil if it was
// never committed.
func Committed(tx *store.Tx, resource string) (*Snapshot, error) {
	raw, err := tx.Get(store.Committed, resource)
	if err != nil {
		return nil, nil
	}
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode committed state of %s: %w", resource, err)
	}
	return &s, nil
}

// Stager records staged changes for the commands of one transaction.
type Stager struct {
	cat *resources.Catalog
	tx  *store.Tx
	now func() time.Time
}

// New returns a Stager working through cat's transaction.
func New(cat *resources.Catalog, now func() time.Time) *Stager {
	if now == nil {
		now = time.Now
	}
	return &Stager{cat: cat, tx: cat.Tx(), now: now}
}

// Diff computes a resource's changes against its committed state: effective
// input values and incoming connections.
func (s *Stager) Diff(name string) ([]Change, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	eff, err := s.cat.Effective(name)
	if err != nil {
		return nil, err
	}
	conns, err := s.cat.Incoming(name)
	if err != nil {
		return nil, err
	}
	snap, err := Committed(s.tx, name)
	if err != nil {
		return nil, err
	}
	var old map[string]any
	var oldConns []resources.Connection
	if snap != nil {
		old, oldConns = snap.Inputs, snap.Connections
	}
	return diff(r, old, eff, oldConns, conns), nil
}

func diff(r *resources.Resource, old, cur map[string]any, oldConns, curConns []resources.Connection) []Change {
	out := []Change{}
	for _, d := range r.Base.Inputs {
		o, hadOld := old[d.Name]
		n, hasNew := cur[d.Name]
		hadOld = hadOld && o != nil
		hasNew = hasNew && n != nil
		switch {
		case !hadOld && hasNew:
			out = append(out, Change{Op: OpAdd, Key: d.Name, New: n, Sensitive: d.Sensitive})
		case hadOld && !hasNew:
			out = append(out, Change{Op: OpRemove, Key: d.Name, Old: o, Sensitive: d.Sensitive})
		case hadOld && hasNew && !schema.Equal(o, n):
			out = append(out, Change{Op: OpChange, Key: d.Name, Old: o, New: n, Sensitive: d.Sensitive})
		}
	}
	before, after := connKeys(oldConns), connKeys(curConns)
	in := func(list []string, k string) bool {
		i := sort.SearchStrings(list, k)
		return i < len(list) && list[i] == k
	}
	for _, k := range after {
		if !in(before, k) {
			out = append(out, Change{Op: OpAdd, Key: k, Connection: true})
		}
	}
	for _, k := range before {
		if !in(after, k) {
			out = append(out, Change{Op: OpRemove, Key: k, Connection: true})
		}
	}
	return out
}

// stage writes or refreshes the entry for (resource, action).
func (s *Stager) stage(resource, action, cause string, ts tags.Set, d []Change, affectedBy []string) (*Entry, error) {
	key := Key(resource, action)
	e, err := getEntry(s.tx, key)
	if err != nil {
		seq, err := s.tx.NextSequence(store.Staged)
		if err != nil {
			return nil, err
		}
		e = &Entry{Key: key, Resource: resource, Action: action, Seq: seq}
	}
	e.Cause, e.StagedAt, e.Diff = cause, s.now().UTC(), d
	if ts != nil {
		e.Tags = ts.Clone()
		e.AffectedBy = nil
	} else if len(e.Tags) == 0 {
		e.AffectedBy = mergeSorted(e.AffectedBy, affectedBy)
	}
	if e.Diff == nil {
		e.Diff = []Change{}
	}
	return e, putEntry(s.tx, e)
}

func mergeSorted(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range append(append([]string(nil), a...), b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// Touch stages the resources a command changed (their inputs or incoming
// connections) and then their affected children. A changed resource stages
// run if it was never committed, else update; an update whose diff became
// empty is dropped, since there is nothing left to do.
func (s *Stager) Touch(cause string, names ...string) ([]*Entry, error) {
	var out []*Entry
	for _, n := range names {
		e, err := s.touchOne(n, cause, nil, true)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, e)
		}
	}
	kids, err := s.children(names)
	if err != nil {
		return nil, err
	}
	return append(out, kids...), nil
}

// touchOne restages one resource. direct marks the resource the command
// named (its entry carries its tags); children carry the causes instead.
func (s *Stager) touchOne(name, cause string, by []string, direct bool) (*Entry, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	if r.Removing {
		return nil, nil
	}
	d, err := s.Diff(name)
	if err != nil {
		return nil, err
	}
	snap, err := Committed(s.tx, name)
	if err != nil {
		return nil, err
	}
	var ts tags.Set
	if direct {
		ts = r.Tags
	} else if e, err := getEntry(s.tx, Key(name, ActionRun)); err == nil && len(e.Tags) > 0 {
		ts = e.Tags // a child that was itself created keeps its own tags
	} else if e, err := getEntry(s.tx, Key(name, ActionUpdate)); err == nil && len(e.Tags) > 0 {
		ts = e.Tags
	}
	if snap == nil {
		if !r.HasAction(ActionRun) {
			return nil, nil
		}
		return s.stage(name, ActionRun, cause, ts, d, by)
	}
	if len(d) == 0 {
		return nil, deleteEntry(s.tx, Key(name, ActionUpdate))
	}
	if !r.HasAction(ActionUpdate) {
		// A base without update re-runs run to apply changes.
		return s.stage(name, ActionRun, cause, ts, d, by)
	}
	return s.stage(name, ActionUpdate, cause, ts, d, by)
}

// children restages every resource downstream of names whose effective
// inputs differ from its committed state.
func (s *Stager) children(names []string) ([]*Entry, error) {
	down, err := s.cat.Downstream(names...)
	if err != nil {
		return nil, err
	}
	var out []*Entry
	for _, kid := range down {
		ins, err := s.cat.Incoming(kid)
		if err != nil {
			return nil, err
		}
		var by []string
		for _, c := range ins {
			by = append(by, c.Emitter)
		}
		e, err := s.touchOne(kid, "affected by "+names[0], by, false)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// Remove stages the removal of a resource. A resource that was never
// committed has nothing to undo on any machine, so it is deleted at once
// with its staged entries; otherwise it is marked and stays until the
// removal is committed or discarded.
func (s *Stager) Remove(name string) (*Entry, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	snap, err := Committed(s.tx, name)
	if err != nil {
		return nil, err
	}
	if snap == nil {
		down, err := s.cat.Downstream(name)
		if err != nil {
			return nil, err
		}
		if err := s.dropResource(name); err != nil {
			return nil, err
		}
		_, err = s.Touch("removed "+name, directOnly(s.cat, down)...)
		return nil, err
	}
	for _, a := range []string{ActionRun, ActionUpdate} {
		if err := deleteEntry(s.tx, Key(name, a)); err != nil {
			return nil, err
		}
	}
	cp := *r
	cp.Removing = true
	if err := s.cat.Put(&cp); err != nil {
		return nil, err
	}
	d := []Change{}
	for _, k := range sortedKeys(snap.Inputs) {
		if v := snap.Inputs[k]; v != nil {
			out := Change{Op: OpRemove, Key: k, Old: v, Sensitive: r.Sensitive(k)}
			d = append(d, out)
		}
	}
	return s.stage(name, ActionRemove, "remove", r.Tags, d, nil)
}

// directOnly keeps the names that still exist.
func directOnly(cat *resources.Catalog, names []string) []string {
	var out []string
	for _, n := range names {
		if cat.Exists(n) {
			out = append(out, n)
		}
	}
	return out
}

// dropResource deletes a resource with its connections, staged entries and
// rules.
func (s *Stager) dropResource(name string) error {
	ents, err := ForResource(s.tx, name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := deleteEntry(s.tx, e.Key); err != nil {
			return err
		}
	}
	if _, err := events.RemoveFor(s.tx, name); err != nil {
		return err
	}
	if err := s.tx.Delete(store.Committed, name); err != nil {
		return err
	}
	return s.cat.Delete(name)
}

// StageAction stages any action the base defines, also on committed
// resources with nothing changed (restart, reload...).
func (s *Stager) StageAction(name, action string) (*Entry, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	if !r.HasAction(action) {
		return nil, fmt.Errorf("%w: %s has no action %q (its base %s defines: %v)", ErrUnknownAction, name, action, r.Base.Name, r.Base.ActionNames())
	}
	d := []Change{}
	if action == ActionRun || action == ActionUpdate {
		if d, err = s.Diff(name); err != nil {
			return nil, err
		}
	}
	return s.stage(name, action, "staged by hand", r.Tags, d, nil)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
