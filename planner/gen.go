package planner

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/solarops/solar/events"
)

// GenShapes names the shapes GenInput knows, for benchmarks that range over
// them.
var GenShapes = []string{"chain", "fanout", "layered", "connect", "independent"}

// GenInput makes a synthetic Input of n resources r0..r<n-1>, each with one
// staged "run" entry (in index order) and about three rules, in the shapes
// SPEC section 10 measures:
//
//   - chain: r<i> triggers r<i+1> (changed) and r<i+2> (success) and must
//     run before r<i+3> (after);
//   - fanout: r0 triggers every middle resource, each of which triggers the
//     sink r<n-1> on changed and on failed;
//   - layered: layers of 100 resources, each triggering three distinct
//     resources of the next layer, chosen by a fixed-seed random source;
//   - connect: r<i> connected to r<i+1> with the default rules of
//     "solar connect" (after-rules on run, update and remove), so that
//     only order, no reaction, links the staged entries.
//
// The result depends only on shape and n. It panics on an unknown shape or
// n < 3, which are programming errors in a benchmark.
func GenInput(shape string, n int) Input {
	if n < 3 {
		panic(fmt.Sprintf("planner.GenInput: n = %d, want at least 3", n))
	}
	refs := make([]events.Ref, n)
	in := Input{Entries: make([]Entry, n), Rules: make([]events.Rule, 0, 3*n)}
	for i := range refs {
		refs[i] = events.Ref{Resource: "r" + strconv.Itoa(i), Action: "run"}
		in.Entries[i] = Entry{Key: refs[i].String(), Resource: refs[i].Resource, Action: refs[i].Action}
	}
	on := func(e, s int, ev events.Event) {
		in.Rules = append(in.Rules, events.Rule{Kind: events.React, Emitter: refs[e], Event: ev, Subscriber: refs[s]})
	}
	after := func(e, s int) {
		in.Rules = append(in.Rules, events.Rule{Kind: events.After, Emitter: refs[e], Subscriber: refs[s]})
	}
	switch shape {
	case "independent":
		// No rules at all: every task may run at once.
	case "chain":
		for i := range n {
			if i+1 < n {
				on(i, i+1, events.Changed)
			}
			if i+2 < n {
				on(i, i+2, events.Success)
			}
			if i+3 < n {
				after(i, i+3)
			}
		}
	case "fanout":
		sink := n - 1
		for i := 1; i < sink; i++ {
			on(0, i, events.Changed)
			on(i, sink, events.Changed)
			on(i, sink, events.Failed)
		}
	case "layered":
		const width = 100
		rng := rand.New(rand.NewPCG(uint64(n), 42))
		for i := range n {
			next := (i/width + 1) * width
			if next >= n {
				break
			}
			span := min(width, n-next)
			var picked [3]int
			for k := 0; k < min(3, span); {
				s := next + rng.IntN(span)
				if k > 0 && picked[0] == s || k > 1 && picked[1] == s {
					continue
				}
				picked[k] = s
				on(i, s, events.Changed)
				k++
			}
		}
	case "connect":
		for i := range n - 1 {
			r, next := refs[i], refs[i+1]
			in.Rules = append(in.Rules,
				events.Rule{Kind: events.After, Emitter: r, Subscriber: next},
				events.Rule{Kind: events.After, Emitter: events.Ref{Resource: r.Resource, Action: "update"}, Subscriber: events.Ref{Resource: next.Resource, Action: "update"}},
				events.Rule{Kind: events.After, Emitter: events.Ref{Resource: next.Resource, Action: "remove"}, Subscriber: events.Ref{Resource: r.Resource, Action: "remove"}})
		}
	default:
		panic(fmt.Sprintf("planner.GenInput: unknown shape %q (want one of %v)", shape, GenShapes))
	}
	return in
}
