package orch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// Pin is what one task of a plan runs with, fixed when the plan was made
// (Process): the base by digest and the values of its inputs, under one
// rule: a task sees the committed state of every resource plus what earlier
// tasks of the same plan apply (its own staged entry for run, update and
// remove, and the updates of resources, nodes included, whose tasks come
// before it). A change staged but not in the plan is never seen. The
// runner feeds the task exactly these values, plus the outputs earlier
// tasks of the run send (Later), on any machine.
type Pin struct {
	Base BaseRef `json:"base"`
	// Inputs holds every input of the base; nil is unset (a script
	// sees "").
	Inputs map[string]any `json:"inputs"`
	// Sensitive lists the inputs masked wherever solar shows them.
	Sensitive []string `json:"sensitive,omitempty"`
	// Later maps an input to the task before this one whose outputs may
	// give it its value: known only when that task runs.
	Later map[string]string `json:"later,omitempty"`
	// Sources maps an input a connection feeds to the emitter's input it
	// comes from ("resource.input", followed through chains): an output
	// that the run sends to that input reaches this task.
	Sources map[string]string `json:"sources,omitempty"`
	// Parts maps an input fed piece by piece (list elements, object keys)
	// to its pieces' sources, in order (pinparts.go).
	Parts map[string][]Part `json:"parts,omitempty"`
	// Node is the transport inputs of the node the task runs on, as the
	// rule above sees them; nil for a task on this machine.
	Node map[string]any `json:"node,omitempty"`
	// Diff is what the task's staged entry changed when the plan was
	// made (staged tasks only): what the operator reviewed.
	Diff []staging.Change `json:"diff,omitempty"`
	// Corrective marks a task whose staged entry drift --stage staged
	// (cause "drift"): it repairs drift rather than applying a change an
	// operator made. Decided when the plan is made, as Diff is.
	Corrective bool `json:"corrective,omitempty"`
}

// BaseRef names the stored base (package bases) a task runs.
type BaseRef struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest"`
}

func pinPrefix(uid string) string  { return "pin/" + uid + "/" }
func pinKey(uid, id string) string { return pinPrefix(uid) + id }
func pinnedKey(uid string) string  { return "pinned/" + uid }

// savePins stores the pins of plan uid, by task id, and marks the plan as
// pinned (plans made before pins were recorded have no mark).
func savePins(tx *store.Tx, uid string, pins map[string]*Pin) error {
	for id, p := range pins {
		raw, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode pin of %s: %w", id, err)
		}
		if err := tx.Put(store.Plans, pinKey(uid, id), raw); err != nil {
			return err
		}
	}
	return tx.Put(store.Plans, pinnedKey(uid), []byte("1"))
}

// Pinned reports whether plan uid recorded its tasks' pins.
func Pinned(tx *store.Tx, uid string) bool { return tx.Has(store.Plans, pinnedKey(uid)) }

// Pins returns the pins of plan uid by task id; nil for a plan made before
// pins were recorded.
func Pins(tx *store.Tx, uid string) (map[string]*Pin, error) {
	if !Pinned(tx, uid) {
		return nil, nil
	}
	out := map[string]*Pin{}
	prefix := pinPrefix(uid)
	err := tx.ForEach(store.Plans, prefix, func(k string, raw []byte) error {
		var p Pin
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("decode pin of %s: %w", k, err)
		}
		out[strings.TrimPrefix(k, prefix)] = &p
		return nil
	})
	return out, err
}
