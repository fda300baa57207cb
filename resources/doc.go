// Package resources owns bases, resources, connections and compositions.
//
// A base is a directory with meta.yaml and action scripts; LoadBase reads it
// into a Base. A resource is an instance of a base with its own input values
// and tags; the Resource record keeps a snapshot of its base so that the
// store alone describes it. Connections make a receiver's input follow an
// emitter's effective value, transitively; Catalog.Effective computes those
// values, computable inputs (computable.go: expressions of
// github.com/expr-lang/expr compiled once per base, evaluated with the
// effective values, bounded) included; a mapping sets a whole input, one
// element of a list, one key of an object, or one field of a tagged element
// of a list of objects (Solar's in:key|tag, ElementTags;
// docs/connections.md); Catalog.Backtrack says where each value comes from.
// Compositions create many resources, connections and rules at once.
// Catalog.Upgrade gives a resource a new base: inputs added take their
// defaults, inputs dropped lose their values unless a connection uses them.
//
// The base's files are kept in the store by digest (package bases); a
// resource made by an earlier solar whose directory was gone when the store
// was upgraded (upgrade.go, schema version 4, registered here) has none:
// CheckBase refuses it and MissingBases lists such resources.
//
// The package works inside a caller's store transaction and never commits or
// prints: the CLI decides what to show, staging decides what to record.
package resources
