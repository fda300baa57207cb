package staging

import (
	"fmt"
	"slices"
	"strings"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
)

// BaseKey is the key of the file line that stands for the base as a
// whole: its Old and New are NAME@DIGEST (Old nil when the old base's
// files were not stored). Every other file line's key is a path inside
// the base, which is never ".".
const BaseKey = "."

// Upgrade stages what upgrading a resource's base changed; u is what
// resources.Catalog.Upgrade, in the same transaction, did. A committed
// resource stages update (run for a base without update) whose diff lists,
// before the input changes, the base line and the files that differ from
// the committed state: an earlier upgrade not yet committed is merged in,
// and an upgrade back to the committed base lists none. A resource never
// committed restages its run (nothing ran with the old files). The file
// lines stay with the entry while other changes restage it, and go to
// history with its commit. It refuses, wrapping ErrUnknownAction, a base
// without an action the resource has staged or a rule names.
func (s *Stager) Upgrade(u *resources.Upgrade) ([]*Entry, error) {
	out, err := s.upgrade(u)
	if err != nil {
		return nil, err
	}
	return out, s.done(nil)
}

func (s *Stager) upgrade(u *resources.Upgrade) ([]*Entry, error) {
	r, err := s.cat.Get(u.Name)
	if err != nil {
		return nil, err
	}
	if err := s.refuseLostActions(r); err != nil {
		return nil, err
	}
	snap, err := s.committed(u.Name)
	if err != nil {
		return nil, err
	}
	var files []Change
	if snap != nil {
		files = fileChanges(u)
		action := ActionRun
		if r.HasAction(ActionUpdate) {
			action = ActionUpdate
		}
		old, err := s.entry(Key(u.Name, action))
		if err != nil {
			return nil, err
		}
		if old != nil {
			files = mergeFiles(fileLines(old.Diff), files)
		}
	}
	return s.touch(reason{cause: "upgrade", files: files, setFiles: true}, []string{u.Name})
}

// refuseLostActions refuses a base that lacks an action r has staged (other
// than remove, which every resource has) or a rule names.
func (s *Stager) refuseLostActions(r *resources.Resource) error {
	// ForResource reads the store, which must hold this Stager's writes.
	if err := s.flush(); err != nil {
		return err
	}
	ents, err := ForResource(s.tx, r.Name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Action != ActionRemove && !r.HasAction(e.Action) {
			return fmt.Errorf("%w: %s is staged and base %s has no action %q; discard it first (solar ch discard %s)",
				ErrUnknownAction, e.Key, r.Base.Name, e.Action, e.Key)
		}
	}
	rules, err := events.ListFor(s.tx, r.Name)
	if err != nil {
		return err
	}
	for _, rule := range rules {
		for _, ref := range []events.Ref{rule.Emitter, rule.Subscriber} {
			if ref.Resource == r.Name && !r.HasAction(ref.Action) {
				return fmt.Errorf("%w: rule %q names %s and base %s has no action %q; remove the rule first (solar event remove)",
					ErrUnknownAction, rule.String(), ref, r.Base.Name, ref.Action)
			}
		}
	}
	return nil
}

// fileChanges renders u's base and files as diff lines: the base line
// first, then the files by path.
func fileChanges(u *resources.Upgrade) []Change {
	if u.Unchanged {
		return nil
	}
	base := Change{Op: OpChange, Key: BaseKey, File: true, New: u.New.Name + "@" + u.New.Digest}
	if u.OldFiles {
		base.Old = u.Old.Name + "@" + u.Old.Digest
	}
	out := []Change{base}
	for _, d := range u.Files {
		c := Change{Op: OpChange, Key: d.Path, File: true}
		switch d.Op {
		case bases.Added:
			c.Op = OpAdd
		case bases.Removed:
			c.Op = OpRemove
		}
		if d.Old != "" {
			c.Old = d.Old
		}
		if d.New != "" {
			c.New = d.New
		}
		out = append(out, c)
	}
	return out
}

// fileLines returns the file lines of d; nil if it has none.
func fileLines(d []Change) []Change {
	var out []Change
	for _, c := range d {
		if c.File {
			out = append(out, c)
		}
	}
	return out
}

// mergeFiles returns the file lines from the state before earlier to the
// state after later: per key, earlier's Old and later's New. An entry
// back where it was is no change, and when the base line is, nothing is.
func mergeFiles(earlier, later []Change) []Change {
	if len(earlier) == 0 {
		return later
	}
	type span struct{ from, to any }
	spans := map[string]*span{}
	var keys []string
	for _, list := range [][]Change{earlier, later} {
		for _, c := range list {
			if sp, ok := spans[c.Key]; ok {
				sp.to = c.New
				continue
			}
			spans[c.Key] = &span{from: c.Old, to: c.New}
			keys = append(keys, c.Key)
		}
	}
	if b := spans[BaseKey]; b != nil && b.from != nil && b.from == b.to {
		return nil
	}
	slices.SortFunc(keys, func(x, y string) int {
		switch {
		case x == y:
			return 0
		case x == BaseKey:
			return -1
		case y == BaseKey:
			return 1
		}
		return strings.Compare(x, y)
	})
	out := []Change{}
	for _, k := range keys {
		sp := spans[k]
		c := Change{Op: OpChange, Key: k, File: true, Old: sp.from, New: sp.to}
		switch {
		case k == BaseKey:
		case sp.from == nil && sp.to == nil, sp.from == sp.to:
			continue
		case sp.from == nil:
			c.Op = OpAdd
		case sp.to == nil:
			c.Op = OpRemove
		}
		out = append(out, c)
	}
	return out
}

// formatFile renders a file line: "+ path", "- path", "~ path", and the
// base line as "~ base: NAME@SHORT >> NAME@SHORT".
func formatFile(c Change) string {
	if c.Key == BaseKey {
		old := "(files not stored)"
		if c.Old != nil {
			old = shortRef(c.Old)
		}
		return "~ base: " + old + " >> " + shortRef(c.New)
	}
	switch c.Op {
	case OpAdd:
		return "+ " + c.Key
	case OpRemove:
		return "- " + c.Key
	}
	return "~ " + c.Key
}

// shortRef renders NAME@DIGEST with the digest shortened.
func shortRef(v any) string {
	ref := fmt.Sprint(v)
	i := strings.LastIndexByte(ref, '@')
	if i < 0 {
		return ref
	}
	return ref[:i+1] + bases.Short(ref[i+1:])
}

// oldBase returns the digest of the base a staged upgrade replaced, from
// the base line of d; "" if d has none or the old files were not stored.
func oldBase(d []Change) string {
	for _, c := range d {
		if c.File && c.Key == BaseKey {
			ref, _ := c.Old.(string)
			if i := strings.LastIndexByte(ref, '@'); i >= 0 {
				return ref[i+1:]
			}
			return ""
		}
	}
	return ""
}

// restoreBase puts back the base that the upgrade whose lines d holds
// replaced (what discarding the staged upgrade, or reverting its commit,
// does); what names the entry for errors. A base no longer stored cannot
// be put back: the error says how to upgrade back by hand.
func (s *Stager) restoreBase(resource, what string, d []Change) error {
	if fileLines(d) == nil {
		return nil
	}
	digest := oldBase(d)
	if digest == "" {
		return fmt.Errorf("%w: %s: the base it replaced was not stored and cannot be put back; upgrade from its directory instead (solar resource upgrade %s DIR)",
			ErrNotRevertible, what, resource)
	}
	r, err := s.cat.Get(resource)
	if err != nil || r.Base.Digest == digest {
		return err
	}
	b, err := s.cat.StoredBase(digest)
	if err != nil {
		return fmt.Errorf("%w: %s: the base it replaced cannot be put back (%v); upgrade from its directory instead (solar resource upgrade %s DIR)",
			ErrNotRevertible, what, err, resource)
	}
	// The values and connections are the committed ones once restore has
	// run; the base alone is put back here, without Upgrade's checks of
	// values against it.
	cp := *r
	cp.Base = *b
	return s.cat.Put(&cp)
}

// reversed returns the file lines of d the other way round: what undoing
// that upgrade changes.
func reversed(d []Change) []Change {
	var out []Change
	for _, c := range fileLines(d) {
		c.Old, c.New = c.New, c.Old
		switch c.Op {
		case OpAdd:
			c.Op = OpRemove
		case OpRemove:
			c.Op = OpAdd
		}
		out = append(out, c)
	}
	return out
}

// revertFiles gives why the file lines of undoing h's upgrade, merged with
// those staged since; why itself when h upgraded nothing.
func (s *Stager) revertFiles(why reason, h *HistoryEntry) (reason, error) {
	back := reversed(h.Diff)
	if back == nil {
		return why, nil
	}
	r, err := s.cat.Get(h.Resource)
	if err != nil {
		return why, err
	}
	action := ActionRun
	if r.HasAction(ActionUpdate) {
		action = ActionUpdate
	}
	old, err := s.entry(Key(h.Resource, action))
	if err != nil {
		return why, err
	}
	if old != nil {
		back = mergeFiles(fileLines(old.Diff), back)
	}
	why.files, why.setFiles = back, true
	return why, nil
}

// dropped lists the committed values of inputs r's base no longer has, by
// name. A value is masked if it was when committed, or if the snapshot
// does not say which were (sensUnknown).
func dropped(r *resources.Resource, oldSens map[string]bool, old map[string]any) []Change {
	var out []Change
	for _, k := range sortedKeys(old) {
		if _, ok := r.Base.Input(k); ok || old[k] == nil {
			continue
		}
		out = append(out, Change{Op: OpRemove, Key: k, Old: old[k], Sensitive: oldSens[k] || oldSens[sensUnknown]})
	}
	return out
}
