package events

// Kind says how a rule acts on a plan.
type Kind int

const (
	// React rules ("on E.a EVENT S.b") add the subscriber's action to a plan
	// when the emitter's action is in it, and run it when the event matched.
	React Kind = iota
	// After rules ("after E.a S.b") only order two actions already present.
	After
)

// Event is what an emitter's action did.
type Event string

// The events a react rule can name. After rules carry no event.
const (
	Changed Event = "changed" // ran and changed something
	OK      Event = "ok"      // ran and changed nothing
	Success Event = "success" // changed or ok
	Failed  Event = "failed"  // failed after all attempts
	Any     Event = "any"     // finished in any way
)

// Ref names one action of one resource. Resource names may contain dots; the
// action is what follows the last dot of the written form.
type Ref struct {
	Resource string
	Action   string
}

// String renders the ref as "<resource>.<action>".
func (r Ref) String() string { return r.Resource + "." + r.Action }

// Rule is one parsed rule. Its canonical text form is Rule.String; parsing
// that text gives the same Rule.
type Rule struct {
	Kind       Kind
	Emitter    Ref
	Event      Event // empty for After rules
	Subscriber Ref
}
