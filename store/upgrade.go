package store

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/solarops/solar/store/kv"
)

// upgrades[v] brings the records of a store from schema version v-1 to v.
// They run in the transaction that opens an older store read-write, which
// then records SchemaVersion: a store is never left between two versions.
// Each is frozen with the layout it upgrades from; the packages owning the
// buckets read only the newest.
var upgrades = []func(tx kv.Tx) error{
	2: dropRuleTextIndex,
	3: indexRulesByPair,
}

// registered holds the upgrades that a package above store gives
// (RegisterUpgrade), because they need what store cannot import: version
// 4 reads each resource's base directory into the bases bucket (package
// resources registers it, in its init; every program that opens a store
// imports resources).
var registered = map[int]func(tx *Tx) error{}

// RegisterUpgrade gives the upgrade to schema version v, which runs as the
// ones of this file do: in the transaction that opens an older store. It
// is called from an init function; a version registered twice, or one
// this file upgrades itself, panics.
func RegisterUpgrade(v int, fn func(tx *Tx) error) {
	if v < len(upgrades) || v > SchemaVersion || registered[v] != nil {
		panic(fmt.Sprintf("store: upgrade to version %d registered twice or out of range", v))
	}
	registered[v] = fn
}

// upgrade brings a store of schema version from to SchemaVersion.
func upgrade(tx kv.Tx, from int) error {
	for v := from + 1; v <= SchemaVersion; v++ {
		step := func(t kv.Tx) error { return registered[v](&Tx{t: t}) }
		switch {
		case v < len(upgrades):
			step = upgrades[v]
		case registered[v] == nil:
			// A program that never imported the registering package:
			// upgrading without the step would leave the store between
			// two versions.
			return fmt.Errorf("to version %d: this program has no upgrade to it (package resources registers it)", v)
		}
		if err := step(tx); err != nil {
			return fmt.Errorf("to version %d: %w", v, err)
		}
	}
	return nil
}

// dropRuleTextIndex: version 1 kept, besides each rule's record and its
// resource index, t/<rule text> -> sequence in the Events bucket. Version 2
// finds a rule by its text through its emitter's index (package events),
// so those keys go; the rest of the bucket stays as it was.
func dropRuleTextIndex(tx kv.Tx) error {
	var keys []string
	if err := tx.ForEach(Events, "t/", func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(Events, k); err != nil {
			return err
		}
	}
	return nil
}

// indexRulesByPair: versions 1 and 2 indexed each rule of the Events bucket
// under each resource it names, u/<resource>\x00<seq> -> "". Version 3 keys
// the index by the pair of resources a rule names: u/<a>\x00<b> and
// u/<b>\x00<a> (u/<a>\x00<a> for a rule within one resource) both hold the
// sequence keys of the pair's rules, rising, one after the other.
func indexRulesByPair(tx kv.Tx) error {
	const seqLen = 16
	var old []string
	named := map[string][]string{} // seq -> the resources its rule names
	if err := tx.ForEach(Events, "u/", func(k string, _ []byte) error {
		res, seq, ok := strings.Cut(k[len("u/"):], "\x00")
		if !ok || len(seq) != seqLen {
			return Damagedf("rule index key %q is not u/<resource>\\x00<sequence>", k)
		}
		old = append(old, k)
		named[seq] = append(named[seq], res)
		return nil
	}); err != nil {
		return err
	}
	pairs := map[string][]string{} // new key -> its sequence keys
	for seq, res := range named {
		switch len(res) {
		case 1:
			k := "u/" + res[0] + "\x00" + res[0]
			pairs[k] = append(pairs[k], seq)
		case 2:
			for _, k := range []string{"u/" + res[0] + "\x00" + res[1], "u/" + res[1] + "\x00" + res[0]} {
				pairs[k] = append(pairs[k], seq)
			}
		default:
			return Damagedf("rule %s is indexed under %d resources", seq, len(res))
		}
	}
	// Deleted before the new keys go in: a resource's name may look like a
	// sequence key, so an old key may be a new one too.
	for _, k := range old {
		if err := tx.Delete(Events, k); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pairs)) {
		seqs := pairs[k]
		slices.Sort(seqs)
		if err := tx.Put(Events, k, []byte(strings.Join(seqs, ""))); err != nil {
			return err
		}
	}
	return nil
}
