package orch

import (
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
)

// An input may be fed piece by piece: a list one element per connection
// (a str into [str]: haproxy's backends from each web server), an object
// one key per connection. An output an earlier task of the run sends to
// the source of one piece must reach the task as it does for an input fed
// whole (Pin.Sources), or the task runs with the value planned before the
// emitter ran and the plan does not converge: the receiver is staged again
// ("changed while running") for a second plan. Pin.Parts records the
// pieces, and partInputs puts what the run sent into them.

// Part is one piece of an input fed piece by piece, in the order
// connections apply them.
type Part struct {
	// From is the emitter input the piece comes from ("resource.input",
	// followed up connections that feed it whole, as Pin.Sources).
	From string `json:"from"`
	// Key is the object key the piece sets; "" for a list element.
	Key string `json:"key,omitempty"`
	// Tag names the element of a list of objects whose field Key the
	// piece sets (resources.Mapping.ElementTag); "" for an object's key.
	Tag string `json:"tag,omitempty"`
}

// feeds are the sources of a task's inputs (pinner.sources): whole maps
// an input fed whole to its source (Pin.Sources), parts an input fed
// piece by piece to its pieces (Pin.Parts).
type feeds struct {
	whole map[string]string
	parts map[string][]Part
}

// partsOf returns the inputs of r that conns feed only piece by piece, all
// pieces of one kind, with their pieces in order. An input also fed whole,
// or by elements and keys both, is left out: its value does not follow
// from its pieces alone.
func (pn *pinner) partsOf(r *resources.Resource, conns []resources.Connection) map[string][]Part {
	var out map[string][]Part
	mixed := map[string]bool{}
	for _, c := range conns {
		e, err := pn.cat.Get(c.Emitter)
		if err != nil {
			return nil // the pin is what it last ran with (pinner.values)
		}
		for _, m := range c.Mappings {
			isPart := m.Key != "" || appends(r, e, m)
			if !isPart {
				mixed[m.To] = true
				continue
			}
			if out == nil {
				out = map[string][]Part{}
			}
			if ps := out[m.To]; len(ps) > 0 && (ps[0].Key == "") != (m.Key == "") {
				mixed[m.To] = true
			}
			part := Part{From: pn.root(c.Emitter, m.From), Key: m.Key}
			if to, ok := r.Base.Input(m.To); ok && m.Key != "" && to.Schema != nil && to.Schema.Kind == schema.List {
				part.Tag = m.ElementTag(c.Emitter)
			}
			out[m.To] = append(out[m.To], part)
		}
	}
	for k := range mixed {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// partInputs puts into out (a task's pinned inputs, a copy the caller
// owns) what the run sent (by "resource.input") to the sources of the
// pieces of its inputs. A list keeps its planned elements whose source
// sent nothing; one whose planned length is not its number of pieces (an
// emitter had no value then, so gave no element) cannot be matched piece
// to element and stays as planned.
func partInputs(out map[string]any, parts map[string][]Part, sent map[string]any) {
	for in, ps := range parts {
		switch cur := out[in].(type) {
		case []any:
			if ps[0].Tag != "" {
				elementInputs(out, in, cur, ps, sent)
				continue
			}
			if len(cur) != len(ps) {
				continue
			}
			list := make([]any, 0, len(ps))
			for i, p := range ps {
				v, ok := sent[p.From]
				if !ok {
					v = cur[i]
				}
				if v != nil {
					list = append(list, v)
				}
			}
			out[in] = list
		case map[string]any, nil:
			planned, _ := cur.(map[string]any)
			obj := make(map[string]any, len(planned)+len(ps))
			for k, v := range planned {
				obj[k] = v
			}
			changed := false
			for _, p := range ps {
				if v, ok := sent[p.From]; ok {
					changed = true
					if v == nil {
						delete(obj, p.Key)
					} else {
						obj[p.Key] = v
					}
				}
			}
			if changed {
				out[in] = obj
			}
		}
	}
}

// elementInputs puts into list input in (planned as cur) what the run sent
// to the sources of its pieces, fields of elements of a list of objects
// (Part.Tag). Elements come in the order their tags first appear, one per
// tag whatever the emitters hold (resources.ElementTags); a list of another
// length was not made by these pieces and stays as planned.
func elementInputs(out map[string]any, in string, cur []any, ps []Part, sent map[string]any) {
	slot := map[string]int{}
	for _, p := range ps {
		if _, ok := slot[p.Tag]; !ok {
			slot[p.Tag] = len(slot)
		}
	}
	if len(slot) != len(cur) {
		return
	}
	var list []any
	for _, p := range ps {
		v, ok := sent[p.From]
		if !ok {
			continue
		}
		if list == nil {
			list = append([]any(nil), cur...)
		}
		i := slot[p.Tag]
		planned, _ := list[i].(map[string]any)
		elem := make(map[string]any, len(planned)+1)
		for k, x := range planned {
			elem[k] = x
		}
		if v == nil {
			delete(elem, p.Key)
		} else {
			elem[p.Key] = v
		}
		list[i] = elem
	}
	if list != nil {
		out[in] = list
	}
}
