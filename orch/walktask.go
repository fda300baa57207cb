package orch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
)

// This file turns what a plan says about a task into the walker's typed
// values, so that package walk never learns of events.

// triggerOf is the walker's predicate for a plan edge: the final statuses
// of its predecessor on which the rule that made it fires. An after edge,
// and a react edge whose event matches no result, only order (zero).
// events.Event.Matches stays the one definition of what an event means.
func triggerOf(e *planner.Edge) walk.Trigger {
	if e.Kind != planner.EdgeReact {
		return 0
	}
	var on walk.Trigger
	if e.Event.Matches(events.ResultChanged) {
		on |= walk.OnSuccess
	}
	if e.Event.Matches(events.ResultOK) {
		on |= walk.OnNoop
	}
	if e.Event.Matches(events.ResultFailed) {
		on |= walk.OnError
	}
	return on
}

// ErrBadSema means an entry of a task's sema list is not "name:count" with
// a non-empty name and a count of at least 1, or names one semaphore
// twice. The run then ends before any task starts. (resources refuses such
// entries when they are set; a record written otherwise still gets here.)
var ErrBadSema = errors.New("bad semaphore")

// taskLimits appends the limits of task id, of resource, to dst: its
// resource's, its node's if it runs on one, and its semaphores unless it
// cannot run. It is the one place a sema entry is parsed.
func taskLimits(dst []walk.Limit, id, resource string, info *taskInfo, perNode int) ([]walk.Limit, error) {
	// Two actions of one resource never overlap: a resource is one
	// thing on one machine, and its scripts assume they run alone.
	dst = append(dst, walk.Limit{Kind: walk.LimitResource, Name: resource, Count: 1})
	if info.location != "" {
		dst = append(dst, walk.Limit{Kind: walk.LimitNode, Name: info.location, Count: max(perNode, 1)})
	}
	if info.problem != "" {
		return dst, nil
	}
	first := len(dst)
	for _, s := range info.semaList {
		l, ok := parseSema(s)
		if !ok {
			return dst[:first], fmt.Errorf("%w: task %q has semaphore %q: want name:count with a count of at least 1", ErrBadSema, id, s)
		}
		dst = append(dst, l)
	}
	// A base lists a few semaphores: comparing every pair costs less
	// than sorting them. The smallest name named twice is the one told.
	semas, twice := dst[first:], ""
	for i := range semas {
		for j := i + 1; j < len(semas); j++ {
			if semas[i].Name == semas[j].Name && (twice == "" || semas[i].Name < twice) {
				twice = semas[i].Name
			}
		}
	}
	if twice != "" {
		return dst[:first], fmt.Errorf("%w: task %q names semaphore %q twice", ErrBadSema, id, twice)
	}
	return dst, nil
}

// maxLimits is the most limits taskLimits gives a task.
func maxLimits(info *taskInfo) int {
	n := 1 + len(info.semaList)
	if info.location != "" {
		n++
	}
	return n
}

// parseSema parses a sema entry, "name:count".
func parseSema(s string) (walk.Limit, bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return walk.Limit{}, false
	}
	count, err := strconv.Atoi(s[i+1:])
	if err != nil || count < 1 {
		return walk.Limit{}, false
	}
	return walk.Limit{Kind: walk.LimitSema, Name: s[:i], Count: count}, true
}
