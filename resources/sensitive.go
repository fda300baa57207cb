package resources

import "fmt"

// Sensitivity follows the value: an input whose effective value comes,
// through connections, from a sensitive input is sensitive too, however
// many connections lie between, and is masked wherever the source would be.
// A list or object input that any sensitive source feeds is masked whole.

// SensitiveInputs returns the inputs of resource name that must be masked:
// those its base declares sensitive and those a sensitive input feeds. The
// map is shared with the catalog's cache; do not modify it.
func (c *Catalog) SensitiveInputs(name string) (map[string]bool, error) {
	if m, ok := c.sens[name]; ok {
		return m, nil
	}
	r, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range r.Base.Inputs {
		ok, err := c.sensitiveInput(name, d.Name, 0)
		if err != nil {
			return nil, err
		}
		if ok {
			out[d.Name] = true
		}
	}
	c.sens[name] = out
	return out, nil
}

// sensitiveInput reports whether one input of res is sensitive. Data flows
// between (resource, input) pairs without cycles (checkCycle), so the
// recursion ends; depth only guards a store written by something else.
func (c *Catalog) sensitiveInput(res, input string, depth int) (bool, error) {
	key := res + "\x00" + input
	if v, ok := c.sensIn[key]; ok {
		return v, nil
	}
	if depth > maxDepth {
		return false, fmt.Errorf("%w: connections around %s are too deep or circular", ErrCycle, res)
	}
	r, err := c.Get(res)
	if err != nil {
		return false, err
	}
	if d, ok := r.Base.Input(input); ok && d.Sensitive {
		c.sensIn[key] = true
		return true, nil
	}
	conns, err := c.Incoming(res)
	if err != nil {
		return false, err
	}
	found := false
	for _, conn := range conns {
		for _, m := range conn.Mappings {
			if m.To != input || found {
				continue
			}
			if found, err = c.sensitiveInput(conn.Emitter, m.From, depth+1); err != nil {
				return false, err
			}
		}
	}
	c.sensIn[key] = found
	return found, nil
}
