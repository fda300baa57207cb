package staging

import (
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
)

// A list of objects fed field by field (Solar's in:key|tag, one element per
// tag) changes one element at a time: an emitter connected, disconnected or
// changed. Its diff names that element, "servers[web]", rather than
// repeating the whole list before and after.

// elementDiff lists the changes of r's list of objects input d element by
// element, each element known by its tag, from old (fed by oldConns) to cur
// (fed by curConns). False when an element cannot be told by its tag: an
// input not (or not only) fed field by field, or a list whose length is not
// its number of tags (a list of its own); the caller then diffs the whole.
func elementDiff(r *resources.Resource, d resources.InputDef, sensitive bool, old, cur any, oldConns, curConns []resources.Connection) ([]Change, bool) {
	if d.Schema == nil || d.Schema.Kind != schema.List || d.Schema.Elem == nil || d.Schema.Elem.Kind != schema.Object {
		return nil, false
	}
	oldTags, ok := resources.ElementTags(r, oldConns, d.Name)
	if !ok {
		return nil, false
	}
	curTags, ok := resources.ElementTags(r, curConns, d.Name)
	if !ok || len(oldTags) == 0 && len(curTags) == 0 {
		return nil, false
	}
	oldList, ok := old.([]any)
	if !ok && old != nil || len(oldList) != len(oldTags) {
		return nil, false
	}
	curList, ok := cur.([]any)
	if !ok && cur != nil || len(curList) != len(curTags) {
		return nil, false
	}
	if !sameOrder(oldTags, curTags) {
		// Elements moved: a diff by element would not show it.
		return nil, false
	}
	was := make(map[string]any, len(oldTags))
	for i, t := range oldTags {
		was[t] = oldList[i]
	}
	out := []Change{}
	key := func(t string) string { return d.Name + "[" + t + "]" }
	for i, t := range curTags {
		o, had := was[t]
		switch n := curList[i]; {
		case !had:
			out = append(out, Change{Op: OpAdd, Key: key(t), New: n, Sensitive: sensitive})
		case !schema.Equal(o, n):
			out = append(out, Change{Op: OpChange, Key: key(t), Old: o, New: n, Sensitive: sensitive})
		}
		delete(was, t)
	}
	for _, t := range oldTags {
		if o, ok := was[t]; ok {
			out = append(out, Change{Op: OpRemove, Key: key(t), Old: o, Sensitive: sensitive})
		}
	}
	return out, true
}

// sameOrder reports whether the tags a and b share come in the same order.
func sameOrder(a, b []string) bool {
	inB := make(map[string]bool, len(b))
	for _, t := range b {
		inB[t] = true
	}
	inA := make(map[string]bool, len(a))
	var common []string
	for _, t := range a {
		inA[t] = true
		if inB[t] {
			common = append(common, t)
		}
	}
	i := 0
	for _, t := range b {
		if inA[t] {
			if common[i] != t {
				return false
			}
			i++
		}
	}
	return true
}
