package events

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/solarops/solar/store"
)

// Layout of the store.Events bucket (store schema version 3). The rule text
// is the record; the pair index is rebuilt from it on every write.
const (
	// r/<seq> -> canonical rule text. Sequence keys sort numerically, so a
	// prefix scan yields rules in the order they were added.
	rulePrefix = "r/"
	// u/<resource>\x00<other> -> the sequence keys (store.SeqKey, rising,
	// one after the other) of the rules naming both resource and other:
	// other is resource itself for a rule between two of its own actions.
	// Both keys of a pair hold the same list. ListFor and RemoveFor read
	// only the resource's pairs, and a rule is found by its text (Has,
	// Remove, duplicates) among the few rules of its pair. The NUL ends the
	// name (names never contain it), so "rmq.1" does not match rmq.10.
	//
	// A connection's three default rules take five keys: version 1 took
	// twelve (a u/<resource>\x00<seq> key per resource a rule names, and
	// t/<text> -> seq), most of a composition's keys.
	pairPrefix = "u/"
	seqLen     = 16 // of a store.SeqKey
)

// pairKey is the index key of the rules naming resource and other.
func pairKey(resource, other string) string { return pairPrefix + resource + "\x00" + other }

// pairOf returns the two resources a rule names, the emitter first (the
// same one twice for a rule within one resource).
func pairOf(r Rule) (string, string) { return r.Emitter.Resource, r.Subscriber.Resource }

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

// addKnown is Add with the rules already stored found through known. A
// caller that has the rules' texts (texts[i] is rules[i].String()) passes
// them, and then knows the rules to be distinct.
func addKnown(tx *store.Tx, cat Catalog, known *known, rules []Rule, texts []string) (added int, err error) {
	for _, r := range rules {
		if err := check(cat, r); err != nil {
			return 0, err
		}
	}
	recs := make([]write, 0, len(rules))
	var batch map[string]bool // texts of this call, found before they are written
	if len(rules) > 1 && texts == nil {
		batch = make(map[string]bool, len(rules))
	}
	fresh := map[[2]string][]string{} // sequence keys added per pair, in the pair's order
	var order [][2]string             // the pairs of fresh, in the order first seen
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
		stored, err := known.has(r, text)
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
		p := known.pair(pairOf(r))
		if _, ok := fresh[p]; !ok {
			order = append(order, p)
		}
		fresh[p] = append(fresh[p], seq)
		added++
	}
	index := make([]write, 0, 2*len(order))
	for _, p := range order {
		old, err := known.stored(p)
		if err != nil {
			return 0, err
		}
		value := make([]byte, 0, seqLen*(len(old)+len(fresh[p])))
		for _, seq := range slices.Concat(old, fresh[p]) {
			value = append(value, seq...)
		}
		index = append(index, write{pairKey(p[0], p[1]), value})
		if p[0] != p[1] {
			index = append(index, write{pairKey(p[1], p[0]), value})
		}
	}
	// bbolt splits nodes only at commit, so inserting many keys out of
	// order into one transaction moves a growing node's entries on every
	// put. Writing in key order keeps each insert at the end of what this
	// batch wrote, which makes a big batch (a composition) linear. Records
	// are in key order already (fixed-width rising sequence numbers) and
	// sort before the index keys ("r/" < "u/"): only those are sorted, on
	// another core while the records are written.
	var wg sync.WaitGroup
	wg.Go(func() { slices.SortFunc(index, func(a, b write) int { return strings.Compare(a.key, b.key) }) })
	err = put(tx, recs)
	wg.Wait()
	if err == nil {
		err = put(tx, index)
	}
	if err != nil {
		return 0, err
	}
	return added, nil
}

// put writes ws in the events bucket, in their order.
func put(tx *store.Tx, ws []write) error {
	for _, w := range ws {
		if err := tx.Put(store.Events, w.key, w.value); err != nil {
			return fmt.Errorf("add rules: %w", err)
		}
	}
	return nil
}

type write struct {
	key   string
	value []byte
}

// known answers which rules are stored, for one call: it reads each pair's
// rules once (a composition asks about the rules of many pairs, a few
// each).
type known struct {
	tx    *store.Tx
	rules map[[2]string][]storedRule // by pair (see pair)
}

// storedRule is a rule of a pair as stored.
type storedRule struct{ seq, text string }

func newKnown(tx *store.Tx) *known { return &known{tx: tx, rules: map[[2]string][]storedRule{}} }

// pair returns the pair of resources a and b in the order known keeps it:
// the two keys of a pair hold the same rules, so one read answers both.
func (k *known) pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// load returns the rules stored for pair p.
func (k *known) load(p [2]string) ([]storedRule, error) {
	if rules, ok := k.rules[p]; ok {
		return rules, nil
	}
	seqs, rules, err := pairRules(k.tx, pairKey(p[0], p[1]))
	if err != nil {
		return nil, err
	}
	var out []storedRule
	for i, r := range rules {
		out = append(out, storedRule{seqs[i], r.String()})
	}
	k.rules[p] = out
	return out, nil
}

// has reports whether the rule r, whose text is text, is stored.
func (k *known) has(r Rule, text string) (bool, error) {
	rules, err := k.load(k.pair(pairOf(r)))
	if err != nil {
		return false, err
	}
	for _, s := range rules {
		if s.text == text {
			return true, nil
		}
	}
	return false, nil
}

// stored returns the sequence keys stored for pair p.
func (k *known) stored(p [2]string) ([]string, error) {
	rules, err := k.load(p)
	if err != nil {
		return nil, err
	}
	seqs := make([]string, len(rules))
	for i, s := range rules {
		seqs[i] = s.seq
	}
	return seqs, nil
}

// pairSeqs splits the value of the index key key into sequence keys.
func pairSeqs(key string, v []byte) ([]string, error) {
	if len(v)%seqLen != 0 {
		return nil, store.Damagedf("rule index %q holds %d bytes, not sequence keys of %d", key, len(v), seqLen)
	}
	seqs := make([]string, 0, len(v)/seqLen)
	for i := 0; i < len(v); i += seqLen {
		seqs = append(seqs, string(v[i:i+seqLen]))
	}
	return seqs, nil
}

// pairRules returns the rules the index key key lists, with their sequence
// keys, in the order they were added.
func pairRules(tx *store.Tx, key string) (seqs []string, rules []Rule, err error) {
	v, err := tx.Get(store.Events, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if seqs, err = pairSeqs(key, v); err != nil {
		return nil, nil, err
	}
	rules, err = records(tx, key, seqs)
	return seqs, rules, err
}

// records reads the rules of the sequence keys seqs, which the index key
// key lists.
func records(tx *store.Tx, key string, seqs []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(seqs))
	for _, seq := range seqs {
		v, err := tx.Get(store.Events, rulePrefix+seq)
		if err != nil {
			return nil, fmt.Errorf("events bucket is corrupt: index %q names a missing rule: %w", key, err)
		}
		r, err := decode(rulePrefix+seq, v)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
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

// Remove deletes one rule. It returns an error wrapping ErrNoRule if the
// rule is not stored.
func Remove(tx *store.Tx, r Rule) error {
	text := r.String()
	e, s := pairOf(r)
	seqs, rules, err := pairRules(tx, pairKey(e, s))
	if err != nil {
		return fmt.Errorf("remove rule %q: %w", text, err)
	}
	i := slices.Index(rules, r)
	if i < 0 {
		return fmt.Errorf("%w %q", ErrNoRule, text)
	}
	if err := tx.Delete(store.Events, rulePrefix+seqs[i]); err != nil {
		return fmt.Errorf("remove rule %q: %w", text, err)
	}
	rest := []byte(strings.Join(slices.Delete(seqs, i, i+1), ""))
	for _, key := range slices.Compact([]string{pairKey(e, s), pairKey(s, e)}) {
		if len(rest) == 0 {
			err = tx.Delete(store.Events, key)
		} else {
			err = tx.Put(store.Events, key, rest)
		}
		if err != nil {
			return fmt.Errorf("remove rule %q: %w", text, err)
		}
	}
	return nil
}

// Has reports whether the rule is stored. A store that cannot be read
// answers false; the transaction's next read reports why.
func Has(tx *store.Tx, r Rule) bool {
	_, rules, err := pairRules(tx, pairKey(pairOf(r)))
	return err == nil && slices.Contains(rules, r)
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
	seqs, _, err := pairsOf(tx, resource)
	if err != nil {
		return nil, err
	}
	// Each pair's rules are in order; together, they are in sequence
	// order once sorted (fixed-width keys).
	slices.Sort(seqs)
	return records(tx, pairPrefix+resource, seqs)
}

// pairsOf returns the sequence keys of the rules naming resource, pair by
// pair, and the other resource of each pair (others[i] for seqs[i]).
func pairsOf(tx *store.Tx, resource string) (seqs, others []string, err error) {
	prefix := pairPrefix + resource + "\x00"
	err = tx.ForEach(store.Events, prefix, func(key string, v []byte) error {
		list, err := pairSeqs(key, v)
		if err != nil {
			return err
		}
		for _, seq := range list {
			seqs = append(seqs, seq)
			others = append(others, key[len(prefix):])
		}
		return nil
	})
	return seqs, others, err
}

// RemoveFor deletes every rule naming resource, as when the resource itself
// is removed, and returns how many it deleted.
func RemoveFor(tx *store.Tx, resource string) (int, error) {
	// Collect first: the bucket must not change under ForEach.
	seqs, others, err := pairsOf(tx, resource)
	if err != nil {
		return 0, err
	}
	for i, seq := range seqs {
		if err := tx.Delete(store.Events, rulePrefix+seq); err != nil {
			return 0, fmt.Errorf("remove the rules of %s: %w", resource, err)
		}
		if i > 0 && others[i] == others[i-1] {
			continue
		}
		for _, key := range slices.Compact([]string{pairKey(resource, others[i]), pairKey(others[i], resource)}) {
			if err := tx.Delete(store.Events, key); err != nil {
				return 0, fmt.Errorf("remove the rules of %s: %w", resource, err)
			}
		}
	}
	return len(seqs), nil
}
