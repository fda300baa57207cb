// Package schema owns the little type language resource bases use to declare
// their inputs (SPEC section 2) and the validation of input values against it.
//
// A schema is one of str, int, float, bool, [T] (list of T) or {k: T, ...}
// (object with known keys), each optionally followed by "!" meaning required.
// Parse turns the text into a *Schema; Schema.String renders the canonical
// text, which Parse reads back unchanged.
//
// Schema.Check is the single gate a value passes before solar stores it: it
// accepts what the YAML and JSON decoders produce and returns the value in
// canonical form (string, int64, float64, bool, []any, map[string]any, or nil),
// so the rest of solar compares, renders and hands values to actions without
// caring where they came from. Format and Equal work on canonical values only.
//
// There are no implicit defaults: a value that is neither given by the
// resource nor defaulted by the base is nil, whatever its kind, and a nil
// field of an object is the same as an absent one.
package schema
