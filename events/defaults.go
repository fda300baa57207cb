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

// AddDefaults adds the default rules of a connection that are not stored
// yet and returns their canonical texts: the rules the connection owns.
func AddDefaults(tx *store.Tx, cat Catalog, emitter, receiver string) ([]string, error) {
	var fresh []Rule
	for _, r := range DefaultRules(cat, emitter, receiver) {
		if !Has(tx, r) {
			fresh = append(fresh, r)
		}
	}
	if _, err := Add(tx, cat, fresh...); err != nil {
		return nil, err
	}
	out := make([]string, len(fresh))
	for i, r := range fresh {
		out[i] = r.String()
	}
	return out, nil
}
