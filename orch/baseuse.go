package orch

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// BaseUse is what refers to stored bases, by digest: the resources made of
// them, the plans whose tasks are pinned to them, and the history entries
// of committed removals (revert recreates the removed resource with its
// base). A base nothing refers to can go (PruneBases).
type BaseUse struct {
	Resources map[string][]string // digest -> resource names, sorted
	Plans     map[string][]string // digest -> plan uids, sorted
	History   map[string][]string // digest -> history uids (their removed resource), sorted
}

// Used reports whether anything refers to the base of digest.
func (u *BaseUse) Used(digest string) bool {
	return len(u.Resources[digest]) > 0 || len(u.Plans[digest]) > 0 || len(u.History[digest]) > 0
}

// BaseUsers reads what refers to each stored base. It reads every
// resource, every task pin and every history entry: a command's cost, not
// a run's.
func BaseUsers(tx *store.Tx) (*BaseUse, error) {
	u := &BaseUse{Resources: map[string][]string{}, Plans: map[string][]string{}, History: map[string][]string{}}
	list, err := resources.NewCatalog(tx).List(nil)
	if err != nil {
		return nil, err
	}
	for _, r := range list {
		if d := r.Base.Digest; d != "" {
			u.Resources[d] = append(u.Resources[d], r.Name)
		}
	}
	seen := map[string]bool{} // digest\x00uid
	err = tx.ForEach(store.Plans, "pin/", func(k string, raw []byte) error {
		uid, _, _ := strings.Cut(strings.TrimPrefix(k, "pin/"), "/")
		var p struct {
			Base BaseRef `json:"base"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("decode pin %s: %w", k, err)
		}
		if d := p.Base.Digest; d != "" && !seen[d+"\x00"+uid] {
			seen[d+"\x00"+uid] = true
			u.Plans[d] = append(u.Plans[d], uid)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	hist, err := staging.History(tx, 0)
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		if h.Removed != nil && h.Removed.Base.Digest != "" {
			d := h.Removed.Base.Digest
			u.History[d] = append(u.History[d], h.UID)
		}
		// Reverting a committed upgrade puts the old base back.
		if d := upgradedFrom(h.Diff); d != "" {
			u.History[d] = append(u.History[d], h.UID)
		}
	}
	// Discarding a staged upgrade puts the old base back too.
	staged, err := staging.List(tx)
	if err != nil {
		return nil, err
	}
	for _, e := range staged {
		if d := upgradedFrom(e.Diff); d != "" {
			u.Resources[d] = append(u.Resources[d], e.Resource)
		}
	}
	for _, m := range []map[string][]string{u.Resources, u.Plans, u.History} {
		for _, names := range m {
			sort.Strings(names)
		}
	}
	return u, nil
}

// upgradedFrom is the digest of the base an upgrade in diff replaced
// (its base line's Old, NAME@DIGEST), or "".
func upgradedFrom(diff []staging.Change) string {
	for _, c := range diff {
		if c.File && c.Key == staging.BaseKey {
			if old, ok := c.Old.(string); ok {
				if _, d, ok := strings.Cut(old, "@"); ok {
					return d
				}
			}
		}
	}
	return ""
}

// PruneBases removes every stored base that nothing refers to (BaseUsers)
// and returns what it removed, by name then time stored; with dryRun it
// only says what it would remove. Nothing else removes a stored base: a
// base goes by this explicit prune, never as a side effect of a removal.
func PruneBases(tx *store.Tx, dryRun bool) ([]*bases.Info, error) {
	use, err := BaseUsers(tx)
	if err != nil {
		return nil, err
	}
	all, err := bases.List(tx)
	if err != nil {
		return nil, err
	}
	out := []*bases.Info{}
	for _, in := range all {
		if use.Used(in.Digest) {
			continue
		}
		out = append(out, in)
		if !dryRun {
			if err := bases.Delete(tx, in.Digest); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
