package staging

import "strings"

// StageRefresh stages a pending refresh: a react subscriber whose emitter
// changed something must run even if the plan that triggered it does not
// get to it. The entry carries the resource's tags so tag selections find
// it, is marked Explicit so that no diff going back to empty drops it, and
// is committed when the subscriber succeeds.
func (s *Stager) StageRefresh(resource, action, cause string) (*Entry, error) {
	e, err := s.stageRefresh(resource, action, cause)
	if err != nil {
		return nil, err
	}
	return e, s.done(nil)
}

func (s *Stager) stageRefresh(resource, action, cause string) (*Entry, error) {
	r, err := s.cat.Get(resource)
	if err != nil {
		return nil, err
	}
	old, err := s.entry(Key(resource, action))
	if err != nil {
		return nil, err
	}
	if old != nil && old.Cause != cause && !isRefresh(old.Cause) {
		// Staged for another reason: it will run anyway, but must now stay
		// staged even if its diff goes back to empty.
		if !old.Explicit {
			old.Explicit = true
			s.put(old)
		}
		return old, nil
	}
	e, err := s.stage(resource, action, cause, r.Tags, []Change{}, nil)
	if err != nil {
		return nil, err
	}
	e.Explicit = true // e is pending: flush stores the mark with it
	return e, nil
}

func isRefresh(cause string) bool { return strings.HasPrefix(cause, "refresh") }
