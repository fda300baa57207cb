package events

import "github.com/solarops/solar/store"

// DefaultRules returns the dependency rules a connection from emitter to
// receiver implies (SPEC section 4): the receiver runs and updates after the
// emitter, and is removed before it. A rule is left out when either base
// lacks the action, since it could never order anything.
func DefaultRules(cat Catalog, emitter, receiver string) []Rule {
	ea, _ := cat.Actions(emitter)
	ra, _ := cat.Actions(receiver)
	has := func(list []string, a string) bool {
		for _, x := range list {
			if x == a {
				return true
			}
		}
		return false
	}
	var out []Rule
	for _, p := range []struct {
		from, to string
		action   string
	}{{emitter, receiver, "run"}, {emitter, receiver, "update"}, {receiver, emitter, "remove"}} {
		if has(ea, p.action) && has(ra, p.action) {
			out = append(out, Rule{Kind: After, Emitter: Ref{p.from, p.action}, Subscriber: Ref{p.to, p.action}})
		}
	}
	return out
}

// Pair is an emitter and a receiver that were connected.
type Pair struct{ Emitter, Receiver string }

// AddDefaults adds the default rules of the given connections that are not
// stored yet, in one batch (one sorted write, which matters for ten
// thousand connections), and returns for each pair the canonical texts of
// the rules it added: the rules that connection owns.
func AddDefaults(tx *store.Tx, cat Catalog, pairs ...Pair) ([][]string, error) {
	var fresh []Rule
	owned := make([][]string, len(pairs))
	seen := map[Rule]bool{}
	for i, p := range pairs {
		for _, r := range DefaultRules(cat, p.Emitter, p.Receiver) {
			if seen[r] || Has(tx, r) {
				continue
			}
			seen[r] = true
			fresh = append(fresh, r)
			owned[i] = append(owned[i], r.String())
		}
	}
	if _, err := Add(tx, cat, fresh...); err != nil {
		return nil, err
	}
	return owned, nil
}
