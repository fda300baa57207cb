// Package tags owns the tag language: the tags a resource carries and the
// tag expressions operators use to select resources and staged changes.
//
// A tag is key=value; a bare label is shorthand for label= (empty value), so
// "env1" and "env1=" are the same tag. Every resource also carries
// resource=NAME; callers add it (see ResourceKey), this package never does.
//
// Keys match [A-Za-z0-9_][A-Za-z0-9_.:/-]*. Values may hold any character
// except ',', '&', '|', '(', ')', '!', '*' and whitespace, because those
// characters separate tags on a command line or build expressions; an empty
// value is allowed.
//
// Expressions combine terms with '!' (not), '&' (and), '|' (or) and
// parentheses, in that order of precedence. A term is written exactly like a
// tag, or as k=* to mean "key present, any value". Whitespace may appear
// between tokens but not inside a term, so "env = 1" is rejected rather than
// guessed at.
//
// Expr.Match is allocation-free: it runs once per staged entry, and plans
// are built from hundreds of thousands of them.
package tags
