package resources

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/orch/handler"
)

// A base may give an action a batch script (meta.yaml):
//
//	actions:
//	  run: run.sh
//	batch:
//	  run: run_batch.sh
//	batch_max: 100
//
// Tasks of that action of resources of the same base (by digest), on one
// node, ready at the same moment, may then run together: the batch script
// runs once for all of them (package orch, docs/bases.md). The script is a
// file of the base like any other, so it is part of the base's digest.

// loadBatch checks and sets the base's batch scripts (batch) and their
// bound (batchMax, nil when unset), whose files are in c. Errors name the
// base, the action and the file; shown is the meta.yaml as errors show it.
func (b *Base) loadBatch(c *bases.Content, batch map[string]string, batchMax *int, shown string) error {
	if batchMax != nil {
		if len(batch) == 0 {
			return fmt.Errorf("%w: %s: base %s has batch_max but no batch scripts (batch: {ACTION: SCRIPT})", ErrBase, shown, b.Name)
		}
		if *batchMax < 2 {
			return fmt.Errorf("%w: %s: base %s: batch_max %d: want at least 2 (leave it out for no bound)", ErrBase, shown, b.Name, *batchMax)
		}
		b.BatchMax = *batchMax
	}
	if len(batch) == 0 {
		return nil
	}
	actions := make([]string, 0, len(batch))
	for a := range batch {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, action := range actions {
		script := batch[action]
		if _, ok := b.Actions[action]; !ok {
			return fmt.Errorf("%w: %s: base %s: batch script %s is for action %q, which is not an action of the base", ErrBase, shown, b.Name, script, action)
		}
		// A batch script speaks the shell protocol's batch form; an
		// Ansible play or a noop base has no such thing.
		if b.Handler != handler.ShellName {
			return fmt.Errorf("%w: %s: base %s: action %q cannot be batched: its handler is %s (only shell actions batch)", ErrBase, shown, b.Name, action, b.Handler)
		}
		if script == "" {
			return fmt.Errorf("%w: %s: base %s: batch for action %q has no script", ErrBase, shown, b.Name, action)
		}
		if _, ok := c.File(path.Clean(filepath.ToSlash(script))); !ok {
			return fmt.Errorf("%w: %s: base %s: batch for action %q: script %s does not exist", ErrBase, shown, b.Name, action, script)
		}
	}
	b.Batch = batch
	return nil
}

// BatchScript returns the base's batch script for action, if it has one.
func (b *Base) BatchScript(action string) (string, bool) {
	s, ok := b.Batch[action]
	return s, ok
}
