// Command solar is the solar orchestrator's command-line interface: it
// stages changes to resources, plans them into an action graph and runs it.
// All the work is in package cmd; main only turns its result into the exit
// status.
package main
