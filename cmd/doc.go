// Package cmd assembles solar's cobra command tree. Each noun has its own
// package below (resource, connection, events, ch, orch, node, storecmd)
// with one file per verb; each verb's NewCmdX(app, runF) binds its flags and
// arguments into an Options struct and calls a plain run function, or runF
// when given one. A verb's tests use both seams (cmd/app/apptest): runF to
// check what a command line parses into, the run function with buffers to
// check what it prints. Run functions render: what they show is computed
// by a domain package, in one store transaction. Main is the only entry
// point and the only place an error becomes an exit status. For measuring
// solar itself, Main writes a CPU profile of the command to the file
// $SOLAR_CPUPROFILE names (not in the help; docs/performance.md).
package cmd
