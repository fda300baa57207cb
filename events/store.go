package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/solarops/solar/store"
)

// Layout of the store.Events bucket (store schema version 2). The rule text
// is the record; the resource index is rebuilt from it on every write.
const (
	// r/<seq> -> canonical rule text. Sequence keys sort numerically, so a
	// prefix scan yields rules in the order they were added.
	rulePrefix = "r/"
	// u/<resource>\x00<seq> -> "". One key per resource a rule names, so
	// ListFor and RemoveFor read only that resource's rules. The NUL ends
	// the name (names never contain it), so "rmq.1" does not match rmq.10.
	// Finding a rule by its text (Has, Remove, duplicates) reads its
	// emitter's rules: version 1 kept a third index for it, t/<text> ->
	// seq, which cost a quarter of the bucket's keys and was the longest
	// of them, to spare reading the handful of rules of one resource.
	usePrefix = "u/"
)

// Catalog answers what exists: whether a resource exists and which actions
// its base defines. The resources package implements it over the store.
type Catalog interface {
	Actions(resource string) (actions []string, ok bool)
}

// Add validates every rule (well formed, resources exist, actions defined by
// their bases) before it writes anything, then stores the rules that are
// not stored yet, in the order given. Duplicates, already stored or repeated
// in rules, are no-ops. It returns how many rules were new.
//
// On a validation error nothing is written. A write error may leave part of
// the batch in tx; the caller rolls back by returning the error from
// store.DB.Update, as every command does.
//
// Pass all the rules of one command in one call: Add writes its batch in
// key order, which bbolt handles in linear time, whereas many small calls
// in one transaction insert index keys out of order and cost quadratic time
// (30,000 rules: about 0.3 s in one call, several seconds in 10,000 calls).
func Add(tx *store.Tx, cat Catalog, rules ...Rule) (added int, err error) {
	return addKnown(tx, cat, newKnown(tx), rules, nil)
}

// addKnown is Add with the rules already stored found through known, and
// their texts when the caller has them (texts[i] is rules[i].String()).
func addKnown(tx *store.Tx, cat Catalog, known *known, rules []Rule, texts []string) (added int, err error) {
	for _, r := range rules {
		if err := check(cat, r); err != nil {
			return 0, err
		}
	}
	recs := make([]write, 0, len(rules))
	index := make([]write, 0, 2*len(rules)) // the two resources
	var batch map[string]bool               // texts of this call, found before they are written
	if len(rules) > 1 {
		batch = make(map[string]bool, len(rules))
	}
	for i, r := range rules {
		var text string
		if texts != nil {
			text = texts[i]
		} else {
			text = r.String()
		}
		if batch[text] {
			continue
		}
		stored, err := known.has(r.Emitter.Resource, text)
		if err != nil {
			return 0, err
		}
		if stored {
			continue
		}
		if batch != nil {
			batch[text] = true
		}
		n, err := tx.NextSequence(store.Events)
		if err != nil {
			return 0, fmt.Errorf("add rule %q: %w", text, err)
		}
		seq := store.SeqKey(n)
		recs = append(recs, write{rulePrefix + seq, []byte(text)})
		index = appendIndex(index, seq, r)
		added++
	}
	// bbolt splits nodes only at commit, so inserting many keys out of
	// order into one transaction moves a growing node's entries on every
	// put. Writing in key order keeps each insert at the end of what this
	// batch wrote, which makes a big batch (a composition) linear. Records
	// are in key order already (fixed-width rising sequence numbers) and
	// sort before the index keys ("r/" < "u/"): only those are sorted.
	slices.SortFunc(index, func(a, b write) int { return strings.Compare(a.key, b.key) })
	for _, w := range slices.Concat(recs, index) {
		if err := tx.Put(store.Events, w.key, w.value); err != nil {
			return 0, fmt.Errorf("add rules: %w", err)
		}
	}
	return added, nil
}

// known answers which rules are stored, for one call: it reads each
// emitter's rules once (a composition asks about thousands of rules of a
// few resources, or of thousands of new resources that have none).
type known struct {
	tx    *store.Tx
	texts map[string]map[string]bool // emitter -> texts of its stored rules; nil when it has none
}

func newKnown(tx *store.Tx) *known { return &known{tx: tx, texts: map[string]map[string]bool{}} }

// has reports whether the rule text, whose emitter is resource, is stored.
func (k *known) has(resource, text string) (bool, error) {
	texts, ok := k.texts[resource]
	if !ok {
		_, rules, err := listFor(k.tx, resource)
		if err != nil {
			return false, err
		}
		for _, r := range rules {
			if r.Emitter.Resource != resource {
				continue
			}
			if texts == nil {
				texts = map[string]bool{}
			}
			texts[r.String()] = true
		}
		k.texts[resource] = texts
	}
	return texts[text], nil
}

type write struct {
	key   string
	value []byte
}

// appendIndex adds the index keys of one rule.
func appendIndex(w []write, seq string, r Rule) []write {
	res, n := resourcesOf(r)
	for _, name := range res[:n] {
		w = append(w, write{useKey(name, seq), []byte{}})
	}
	return w
}

// check tells the operator the first thing wrong with r, naming the rule and
// the word.
func check(cat Catalog, r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	for _, ref := range [...]Ref{r.Emitter, r.Subscriber} {
		actions, ok := cat.Actions(ref.Resource)
		if !ok {
			return fmt.Errorf("rule %q: %w %q", r.String(), ErrUnknownResource, ref.Resource)
		}
		if !slices.Contains(actions, ref.Action) {
			return fmt.Errorf("rule %q: %w %q: resource %q defines %s",
				r.String(), ErrUnknownAction, ref.Action, ref.Resource, listActions(actions))
		}
	}
	return nil
}

func listActions(actions []string) string {
	if len(actions) == 0 {
		return "no actions"
	}
	sorted := slices.Sorted(slices.Values(actions))
	return strings.Join(sorted, ", ")
}

// resourcesOf lists the distinct resources a rule names: one when a rule
// links two actions of the same resource.
func resourcesOf(r Rule) (names [2]string, n int) {
	if r.Emitter.Resource == r.Subscriber.Resource {
		return [2]string{r.Emitter.Resource}, 1
	}
	return [2]string{r.Emitter.Resource, r.Subscriber.Resource}, 2
}

func useKey(resource, seq string) string { return usePrefix + resource + "\x00" + seq }

// Remove deletes one rule. It returns an error wrapping ErrNoRule if the
// rule is not stored.
func Remove(tx *store.Tx, r Rule) error {
	text := r.String()
	seq, err := find(tx, r)
	if err != nil {
		return fmt.Errorf("remove rule %q: %w", text, err)
	}
	if seq == "" {
		return fmt.Errorf("%w %q", ErrNoRule, text)
	}
	return remove(tx, seq, text, r)
}

// find returns the sequence key of a stored rule, or "" when it is not
// stored, reading its emitter's rules.
func find(tx *store.Tx, r Rule) (string, error) {
	seqs, rules, err := listFor(tx, r.Emitter.Resource)
	if err != nil {
		return "", err
	}
	for i, stored := range rules {
		if stored == r {
			return seqs[i], nil
		}
	}
	return "", nil
}

func remove(tx *store.Tx, seq, text string, r Rule) error {
	res, n := resourcesOf(r)
	keys := [3]string{rulePrefix + seq}
	for i, name := range res[:n] {
		keys[1+i] = useKey(name, seq)
	}
	for _, k := range keys[:1+n] {
		if err := tx.Delete(store.Events, k); err != nil {
			return fmt.Errorf("remove rule %q: %w", text, err)
		}
	}
	return nil
}

// Has reports whether the rule is stored. A store that cannot be read
// answers false; the transaction's next read reports why.
func Has(tx *store.Tx, r Rule) bool {
	seq, err := find(tx, r)
	return err == nil && seq != ""
}

// List returns all rules in the order they were added.
func List(tx *store.Tx) ([]Rule, error) {
	var rules []Rule
	err := tx.ForEach(store.Events, rulePrefix, func(key string, v []byte) error {
		r, err := decode(key, v)
		if err != nil {
			return err
		}
		rules = append(rules, r)
		return nil
	})
	return rules, err
}

// decode parses a stored rule; a failure means the bucket was written by
// something other than this package.
func decode(key string, v []byte) (Rule, error) {
	r, err := Parse(string(v))
	if err != nil {
		return Rule{}, store.Damagedf("rule record %q does not parse: %v", key, err)
	}
	return r, nil
}

// ListFor returns the rules naming resource as emitter or subscriber, in the
// order they were added.
func ListFor(tx *store.Tx, resource string) ([]Rule, error) {
	_, rules, err := listFor(tx, resource)
	return rules, err
}

// listFor returns the sequence keys of resource's rules alongside them.
func listFor(tx *store.Tx, resource string) (seqs []string, rules []Rule, err error) {
	prefix := usePrefix + resource + "\x00"
	err = tx.ForEach(store.Events, prefix, func(key string, _ []byte) error {
		seq := key[len(prefix):]
		v, err := tx.Get(store.Events, rulePrefix+seq)
		if err != nil {
			return fmt.Errorf("events bucket is corrupt: index %q names a missing rule: %w", key, err)
		}
		r, err := decode(rulePrefix+seq, v)
		if err != nil {
			return err
		}
		seqs = append(seqs, seq)
		rules = append(rules, r)
		return nil
	})
	return seqs, rules, err
}

// RemoveFor deletes every rule naming resource, as when the resource itself
// is removed, and returns how many it deleted.
func RemoveFor(tx *store.Tx, resource string) (int, error) {
	// Collect first: the bucket must not change under ForEach.
	seqs, rules, err := listFor(tx, resource)
	if err != nil {
		return 0, err
	}
	for i, r := range rules {
		if err := remove(tx, seqs[i], r.String(), r); err != nil {
			return i, err
		}
	}
	return len(rules), nil
}
