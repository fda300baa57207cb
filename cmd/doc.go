// Package cmd assembles solar's cobra command tree. Each noun has its own
// package below (resource, connection, events, ch, orch) with one file per
// verb; each verb binds its flags into an Options struct and calls a plain
// run function that tests can call directly. Main is the only entry point
// and the only place an error becomes an exit status.
package cmd
