package store

import (
	"fmt"

	"github.com/solarops/solar/store/kv"
)

// upgrades[v] brings the records of a store from schema version v-1 to v.
// They run in the transaction that opens an older store read-write, which
// then records SchemaVersion: a store is never left between two versions.
// Each is frozen with the layout it upgrades from; the packages owning the
// buckets read only the newest.
var upgrades = []func(tx kv.Tx) error{
	2: dropRuleTextIndex,
}

// upgrade brings a store of schema version from to SchemaVersion.
func upgrade(tx kv.Tx, from int) error {
	for v := from + 1; v <= SchemaVersion; v++ {
		if err := upgrades[v](tx); err != nil {
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
