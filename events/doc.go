// Package events owns the rule language that links actions, and the rule
// store that keeps those rules in the store's Events bucket.
//
// A rule is written in one of two shapes:
//
//	on <emitter>.<action> <event> <subscriber>.<action>    (react)
//	after <emitter>.<action> <subscriber>.<action>         (dependency)
//
// A react rule adds the subscriber's action to a plan when the emitter's
// action is in it, and runs it only if the emitter's result matches the
// event (see Event.Matches). A dependency rule adds no work: it only orders
// two actions that are already in a plan.
//
// Resource names follow the resources package ([a-z0-9][a-z0-9_.-]*) and may
// contain dots, so the action is what follows the last dot of a written ref:
// "rmq.1.cluster_create" is action cluster_create of resource rmq.1. Action
// names match [a-z_][a-z0-9_]* and so never contain a dot, which keeps that
// split unambiguous.
//
// Every Rule has one canonical text, Rule.String, and Parse(r.String())
// returns r again. The store keeps that text, so the bucket stays readable
// and independent of Go's encoding of the struct.
//
// The store keeps rules in the order they were added, because the planner
// follows a resource's rules in that order and plans must be deterministic.
// Add refuses rules naming resources or actions that do not exist (asked
// through a Catalog), and adding a rule that is already stored is a no-op.
package events
