package staging

// StageRefresh stages a pending refresh: a react subscriber whose emitter
// changed something must run even if the plan that triggered it does not
// get to it. The entry carries the resource's tags so tag selections find
// it; it is committed when the subscriber succeeds.
func (s *Stager) StageRefresh(resource, action, cause string) (*Entry, error) {
	r, err := s.cat.Get(resource)
	if err != nil {
		return nil, err
	}
	if e, err := getEntry(s.tx, Key(resource, action)); err == nil && e.Cause != cause && !isRefresh(e.Cause) {
		return e, nil // already staged for another reason: it will run anyway
	}
	return s.stage(resource, action, cause, r.Tags, []Change{}, nil)
}

func isRefresh(cause string) bool { return len(cause) >= 7 && cause[:7] == "refresh" }
