package staging

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Snapshot is a resource's committed state: what its actions last ran with.
type Snapshot struct {
	Own    map[string]any `json:"own"`
	Inputs map[string]any `json:"inputs"`
	// Connections are the incoming connections the action ran with: their
	// emitters and mappings only (see snapshotConns).
	Connections []resources.Connection `json:"connections,omitempty"`
	CommittedAt time.Time              `json:"committed_at"`
	// Plan is the plan whose run committed this state; "" before plans
	// recorded it.
	Plan string `json:"plan,omitempty"`
	// Sensitive lists the inputs whose committed values (Inputs) were
	// masked, so that a diff masks an old value that came from a sensitive
	// input after the connection that brought it is gone. It is nil, not
	// empty, in snapshots from before solar recorded it.
	Sensitive []string `json:"sensitive"`
	// Masked lists the own values (Own) marked resources.Resource.Masked:
	// restoring the snapshot restores the marks with the values.
	Masked []string `json:"masked,omitempty"`
}

// snapshotConns keeps of each connection what a snapshot is read for: its
// emitter and mappings (diffs, masking and restoring read nothing else).
// The receiver is the snapshot's own resource, and the order and the rules
// belong to the live connection, which restoring makes anew; the committed
// record of every resource is smaller by them (about 115 of 386 bytes of a
// chained noop resource).
func snapshotConns(conns []resources.Connection) []resources.Connection {
	if len(conns) == 0 {
		return nil
	}
	out := make([]resources.Connection, len(conns))
	for i, c := range conns {
		out[i] = resources.Connection{Emitter: c.Emitter, Mappings: c.Mappings}
	}
	return out
}

// masked returns the inputs whose committed values must be masked (none
// for a nil snapshot). A snapshot that did not record it masks every input
// a connection fed: any of those may have come from a sensitive input.
func (s *Snapshot) masked() map[string]bool {
	out := map[string]bool{}
	switch {
	case s == nil:
	case s.Sensitive != nil:
		for _, k := range s.Sensitive {
			out[k] = true
		}
	default:
		for _, c := range s.Connections {
			for _, m := range c.Mappings {
				out[m.To] = true
			}
		}
		out[sensUnknown] = true
	}
	return out
}

// sensUnknown is set in masked's map, under a key no input has, when the
// snapshot did not record which values were masked: an input the base has
// since dropped, of which nothing else is known, is masked then.
const sensUnknown = "\x00unknown"

// Committed returns the resource's committed snapshot, or nil if it was
// never committed.
func Committed(tx *store.Tx, resource string) (*Snapshot, error) {
	raw, err := tx.Peek(store.Committed, resource)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read committed state of %s: %w", resource, err)
	}
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode committed state of %s: %w", resource, err)
	}
	return &s, nil
}

// Stager records staged changes for the commands of one transaction.
//
// Its writes to the log are buffered and stored in key order (see flush)
// before each exported method returns, so between calls the log read
// through the transaction (List, Select, Get) is up to date.
type Stager struct {
	// Plan is the plan whose run makes the changes (the runner sets it):
	// the entries it stages carry it, so that they do not make the plan
	// stale (orch.Stale).
	Plan string
	// Actor is who acts (internal/actor): the entries this Stager stages
	// carry it as StagedBy, the history it commits as RanBy. Host is the
	// host of a runner that commits (HistoryEntry.RanOn). Both are set by
	// whoever makes the Stager; "" records no one.
	Actor, Host string

	cat     *resources.Catalog
	tx      *store.Tx
	now     func() time.Time
	pending map[string]*Entry // key -> entry to store; nil deletes it
	// storedTags holds the tags of entries read from the store since the
	// last flush (nil: none was stored), so that flush need not decode
	// them again.
	storedTags map[string]storedTags
	// wrote is the committed state commit has just written for resource
	// wroteFor, for the touch that follows it.
	wrote    *Snapshot
	wroteFor string
}

// committed returns the committed snapshot of resource name: the one
// commit has just written, or the stored one.
func (s *Stager) committed(name string) (*Snapshot, error) {
	if s.wrote != nil && s.wroteFor == name {
		return s.wrote, nil
	}
	return Committed(s.tx, name)
}

// New returns a Stager working through cat's transaction.
func New(cat *resources.Catalog, now func() time.Time) *Stager {
	if now == nil {
		now = time.Now
	}
	return &Stager{cat: cat, tx: cat.Tx(), now: now}
}

// By sets the Stager's Actor and returns it, for a command that makes a
// Stager in one expression: staging.New(cat, now).By(who).Touch(...).
func (s *Stager) By(actor string) *Stager {
	s.Actor = actor
	return s
}

// done stores the pending writes once an exported method's work has
// succeeded. After a failure they are left: the caller rolls the
// transaction back.
func (s *Stager) done(err error) error {
	if err != nil {
		return err
	}
	return s.flush()
}

// Diff computes a resource's changes against its committed state: effective
// input values and incoming connections.
func (s *Stager) Diff(name string) ([]Change, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	snap, err := Committed(s.tx, name)
	if err != nil {
		return nil, err
	}
	d, _, err := s.diffOf(r, snap)
	return d, err
}

// diffOf computes r's diff against snap (nil: never committed) and returns
// r's incoming connections with it.
func (s *Stager) diffOf(r *resources.Resource, snap *Snapshot) ([]Change, []resources.Connection, error) {
	eff, err := s.cat.Effective(r.Name)
	if err != nil {
		return nil, nil, err
	}
	conns, err := s.cat.Incoming(r.Name)
	if err != nil {
		return nil, nil, err
	}
	var old map[string]any
	var oldConns []resources.Connection
	if snap != nil {
		old, oldConns = snap.Inputs, snap.Connections
	}
	sens, err := s.cat.SensitiveInputs(r.Name)
	if err != nil {
		return nil, nil, err
	}
	return diff(r, snap.masked(), sens, old, eff, oldConns, conns), conns, nil
}

// diff lists what changed in r's inputs and connections. oldSens and sens
// name the inputs whose old and new values are masked (their own, or fed by
// a sensitive input); a change shows neither value if either is.
func diff(r *resources.Resource, oldSens, sens map[string]bool, old, cur map[string]any, oldConns, curConns []resources.Connection) []Change {
	out := []Change{}
	known := 0 // keys of old that are inputs of r's base
	for _, d := range r.Base.Inputs {
		o, hadOld := old[d.Name]
		n, hasNew := cur[d.Name]
		if hadOld {
			known++
		}
		hadOld = hadOld && o != nil
		hasNew = hasNew && n != nil
		if ch, ok := elementDiff(r, d, oldSens[d.Name] || sens[d.Name], o, n, oldConns, curConns); ok {
			out = append(out, ch...)
			continue
		}
		switch {
		case !hadOld && hasNew:
			out = append(out, Change{Op: OpAdd, Key: d.Name, New: n, Sensitive: sens[d.Name]})
		case hadOld && !hasNew:
			out = append(out, Change{Op: OpRemove, Key: d.Name, Old: o, Sensitive: oldSens[d.Name] || sens[d.Name]})
		case hadOld && hasNew && !schema.Equal(o, n):
			out = append(out, Change{Op: OpChange, Key: d.Name, Old: o, New: n, Sensitive: oldSens[d.Name] || sens[d.Name]})
		}
	}
	if known < len(old) {
		// Inputs an upgraded base no longer has (see upgrade.go).
		out = append(out, dropped(r, oldSens, old)...)
	}
	if len(oldConns) == 0 && len(curConns) == 0 {
		return out
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

// sameDiff reports whether two diffs list the same changes. Values read
// back from the store are float64 where fresh ones are int64, so values
// compare with schema.Equal.
func sameDiff(a, b []Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Op != y.Op || x.Key != y.Key || x.Connection != y.Connection || x.Sensitive != y.Sensitive ||
			!schema.Equal(x.Old, y.Old) || !schema.Equal(x.New, y.New) {
			return false
		}
	}
	return true
}

// reason says why resources are restaged.
type reason struct {
	cause string
	// child marks a resource restaged because a change reached it through
	// connections; otherwise it is one a command changed itself.
	child bool
	// changed holds, for children, every resource the command may have
	// changed: the named ones and everything downstream of them.
	changed map[string]bool
	// by holds, for children, causes known already (a child restaged
	// after a commit or a discard keeps its causes).
	by []string
	// files are the file lines of an upgrade (see upgrade.go) when
	// setFiles; otherwise a resource keeps those its entry has.
	files    []Change
	setFiles bool
}

// again is the reason to restage e's resource after e was committed or
// discarded: an affected child stays one, with its causes.
func again(e *Entry, cause string) reason {
	if len(e.Tags) == 0 && len(e.AffectedBy) > 0 {
		return reason{cause: cause, child: true, by: e.AffectedBy}
	}
	return reason{cause: cause}
}

// stage writes or refreshes the entry for (resource, action). A
// resource's own entry copies its tags (ts); a child entry (ts nil) has
// none and accumulates its causes.
func (s *Stager) stage(resource, action, cause string, ts tags.Set, d []Change, by []string) (*Entry, error) {
	key := Key(resource, action)
	e, err := s.entry(key)
	if err != nil {
		return nil, err
	}
	if e == nil {
		seq, err := s.tx.NextSequence(store.Staged)
		if err != nil {
			return nil, err
		}
		e = &Entry{Key: key, Resource: resource, Action: action, Seq: seq}
	}
	e.Cause, e.StagedAt, e.Diff, e.Plan, e.StagedBy = cause, s.now().UTC(), d, s.Plan, s.Actor
	if ts != nil {
		e.Tags = ts.Clone()
		e.AffectedBy = nil
	} else {
		e.AffectedBy = mergeSorted(e.AffectedBy, by)
	}
	if e.Diff == nil {
		e.Diff = []Change{}
	}
	s.put(e)
	return e, nil
}

func mergeSorted(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append(append(make([]string, 0, len(a)+len(b)), a...), b...)
	sort.Strings(out)
	return slices.Compact(out)
}

// Touch stages the resources a command changed (their inputs or incoming
// connections) and then their affected children. A changed resource stages
// run if it was never committed, else update; an update whose diff became
// empty is dropped, since there is nothing left to do, unless the operator
// staged it by hand.
func (s *Stager) Touch(cause string, names ...string) ([]*Entry, error) {
	out, err := s.touch(reason{cause: cause}, names)
	if err != nil {
		return nil, err
	}
	return out, s.done(nil)
}

func (s *Stager) touch(why reason, names []string) ([]*Entry, error) {
	if len(names) > 1 {
		names = unique(names)
	}
	var out []*Entry
	for _, n := range names {
		e, err := s.touchOne(n, why)
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

// unique drops repeated names, keeping the first of each.
func unique(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// touchOne restages one resource: run if it was never committed, else
// update (run for a base without update). A committed resource back at
// its committed state has nothing left to do and its entry goes, unless it
// was staged by hand. A child whose diff this change did not alter is left
// as it is.
func (s *Stager) touchOne(name string, why reason) (*Entry, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	if r.Removing {
		return nil, nil // its remove entry says all that is left to do
	}
	snap, err := s.committed(name)
	if err != nil {
		return nil, err
	}
	action := ActionRun
	if snap != nil && r.HasAction(ActionUpdate) {
		action = ActionUpdate
	}
	if !r.HasAction(action) {
		return nil, nil
	}
	d, conns, err := s.diffOf(r, snap)
	if err != nil {
		return nil, err
	}
	old, err := s.entry(Key(name, action))
	if err != nil {
		return nil, err
	}
	files := why.files
	if !why.setFiles && old != nil {
		files = fileLines(old.Diff)
	}
	if snap != nil && len(files) > 0 {
		d = append(slices.Clip(files), d...)
	}
	if snap != nil && len(d) == 0 && (old == nil || !old.Explicit) {
		if old != nil {
			s.drop(old.Key)
		}
		return nil, nil
	}
	if !why.child {
		return s.stage(name, action, why.cause, r.Tags, d, nil)
	}
	if old != nil && sameDiff(old.Diff, d) {
		return nil, nil
	}
	by := append(causes(conns, d, why.changed), why.by...)
	if len(by) == 0 {
		// Nothing feeds a changed input from a changed emitter; name
		// every changed emitter rather than leave the entry unreachable
		// by tag.
		for _, c := range conns {
			if why.changed[c.Emitter] {
				by = append(by, c.Emitter)
			}
		}
	}
	cause := why.cause
	if len(by) > 0 {
		cause = "affected by " + strings.Join(by, ", ")
	}
	if old != nil && len(old.Tags) > 0 {
		// Staged for its own sake too (created, updated): it stays the
		// resource's own entry, selected by the resource's tags.
		return s.stage(name, action, cause, r.Tags, d, nil)
	}
	return s.stage(name, action, cause, nil, d, by)
}

// causes returns the emitters among changed whose connections feed an
// input the diff lists: the resources whose change reached this one.
func causes(conns []resources.Connection, d []Change, changed map[string]bool) []string {
	var out []string
	for _, c := range conns {
		if !changed[c.Emitter] {
			continue
		}
		for _, m := range c.Mappings {
			if slices.ContainsFunc(d, func(ch Change) bool { return !ch.Connection && inputOf(ch.Key) == m.To }) {
				out = append(out, c.Emitter)
				break
			}
		}
	}
	return out
}

// inputOf is the input a diff key names: key itself, or the list of an
// element key "servers[web]" (elementDiff).
func inputOf(key string) string {
	if i := strings.IndexByte(key, '['); i > 0 && strings.HasSuffix(key, "]") {
		return key[:i]
	}
	return key
}

// children restages every resource downstream of names whose effective
// inputs differ from its committed state.
func (s *Stager) children(names []string) ([]*Entry, error) {
	down, err := s.cat.Downstream(names...)
	if err != nil || len(down) == 0 {
		return nil, err
	}
	changed := make(map[string]bool, len(names)+len(down))
	for _, n := range names {
		changed[n] = true
	}
	for _, n := range down {
		changed[n] = true
	}
	why := reason{cause: "affected by " + names[0], child: true, changed: changed}
	var out []*Entry
	for _, kid := range down {
		e, err := s.touchOne(kid, why)
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
// with its staged entries, rules and connections, and Remove returns nil;
// otherwise it is marked and stays until the removal is committed or
// discarded.
func (s *Stager) Remove(name string) (*Entry, error) {
	e, err := s.remove(name)
	if err != nil {
		return nil, err
	}
	return e, s.done(nil)
}

func (s *Stager) remove(name string) (*Entry, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	snap, err := Committed(s.tx, name)
	if err != nil {
		return nil, err
	}
	if snap == nil {
		return nil, s.deleteResource(name, "removed "+name)
	}
	// The removal supersedes any pending run or update.
	s.drop(Key(name, ActionRun))
	s.drop(Key(name, ActionUpdate))
	if !r.Removing {
		cp := *r
		cp.Removing = true
		if err := s.cat.Put(&cp); err != nil {
			return nil, err
		}
	}
	sens, err := s.cat.SensitiveInputs(name)
	if err != nil {
		return nil, err
	}
	oldSens := snap.masked()
	d := []Change{}
	for _, k := range sortedKeys(snap.Inputs) {
		if v := snap.Inputs[k]; v != nil {
			d = append(d, Change{Op: OpRemove, Key: k, Old: v, Sensitive: oldSens[k] || sens[k]})
		}
	}
	return s.stage(name, ActionRemove, "remove", r.Tags, d, nil)
}

// deleteResource deletes a resource with its staged entries, rules,
// committed state, connections and trusted host key, then restages the resources it fed:
// their connected inputs fall back to their own values.
func (s *Stager) deleteResource(name, cause string) error {
	rcvs, err := s.cat.Receivers(name)
	if err != nil {
		return err
	}
	// ForResource reads the store, which must hold this Stager's writes.
	if err := s.flush(); err != nil {
		return err
	}
	ents, err := ForResource(s.tx, name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		s.drop(e.Key)
	}
	if _, err := events.RemoveFor(s.tx, name); err != nil {
		return err
	}
	if err := s.tx.Delete(store.Committed, name); err != nil {
		return err
	}
	// The host key trusted for a node goes with it: left behind, it would
	// be trusted for whatever machine a later node of that name is. The
	// record is package nodes', which imports this one, so it is deleted
	// here, where every removal ends.
	if err := s.tx.Delete(store.HostKeys, name); err != nil {
		return err
	}
	if err := s.cat.Delete(name); err != nil {
		return err
	}
	_, err = s.touch(reason{cause: cause}, rcvs)
	return err
}

// StageAction stages any action the base defines, also on committed
// resources with nothing changed (restart, reload...). The entry is marked
// Explicit.
func (s *Stager) StageAction(name, action string) (*Entry, error) {
	e, err := s.stageAction(name, action)
	if err != nil {
		return nil, err
	}
	return e, s.done(nil)
}

func (s *Stager) stageAction(name, action string) (*Entry, error) {
	r, err := s.cat.Get(name)
	if err != nil {
		return nil, err
	}
	if r.Removing && action != ActionRemove {
		return nil, fmt.Errorf("%w: %s is staged for removal; discard that first (solar ch discard %s)", ErrUnknownAction, name, Key(name, ActionRemove))
	}
	if !r.HasAction(action) {
		return nil, fmt.Errorf("%w: %s has no action %q (its base %s defines: %s)", ErrUnknownAction, name, action, r.Base.Name, strings.Join(r.Base.ActionNames(), ", "))
	}
	d := []Change{}
	if action == ActionRun || action == ActionUpdate {
		snap, err := Committed(s.tx, name)
		if err != nil {
			return nil, err
		}
		if d, _, err = s.diffOf(r, snap); err != nil {
			return nil, err
		}
	}
	e, err := s.stage(name, action, "staged by hand", r.Tags, d, nil)
	if err != nil {
		return nil, err
	}
	e.Explicit = true // e is pending: flush stores the mark with it
	return e, nil
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
