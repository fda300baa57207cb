// Package app is what every solar command shares: the I/O streams, the
// environment, opening the store for exactly one transaction, rendering
// tables and JSON, and the single place where errors become exit codes.
package app
