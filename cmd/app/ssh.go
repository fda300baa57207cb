package app

import (
	"time"

	sshx "github.com/solarops/solar/orch/handler/ssh"
)

// SSHConfig is how commands reach SSH nodes: $SOLAR_SSH_KEEPALIVE sets the
// keepalive period (default 10s; remote work with no word from solar for
// three periods is killed) and $SOLAR_SSH_TIMEOUT bounds connecting and
// logging in (default 15s).
func (a *App) SSHConfig() (sshx.Config, error) {
	cfg := sshx.Config{Getenv: a.Getenv}
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"SOLAR_SSH_KEEPALIVE", &cfg.Keepalive}, {"SOLAR_SSH_TIMEOUT", &cfg.DialTimeout}} {
		text := a.Getenv(v.name)
		if text == "" {
			continue
		}
		d, err := time.ParseDuration(text)
		if err != nil || d <= 0 {
			return cfg, Usagef("$%s is %q; want a duration such as 10s", v.name, text)
		}
		*v.dst = d
	}
	return cfg, nil
}
