// Package invalid marks the errors that mean "the user gave bad input":
// a name that does not exist, a value that does not parse, a request that
// cannot be honoured as written. Every such sentinel of a domain package
// is made with New, so that it wraps ErrInput and one errors.Is tells the
// CLI to exit 2 (invalid input, nothing was changed) whatever the package.
// Typed errors that unwrap to one of these sentinels are covered too.
//
// The package imports nothing of solar's: any package may import it
// without inverting the layers.
package invalid
