// Package base holds the "solar base" commands, one file per verb: list,
// show, export and prune the bases kept in the store (package bases).
package base
