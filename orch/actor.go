package orch

// runHost is the host a run's records name as the runner's: Runner.Host,
// else this machine's name (the one its runner record carries).
func (r *Runner) runHost() string {
	if r.Host != "" {
		return r.Host
	}
	return hostname
}
