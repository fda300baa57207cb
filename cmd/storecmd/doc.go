// Package storecmd holds "solar store": what the store is, and moving it
// between backends.
package storecmd
