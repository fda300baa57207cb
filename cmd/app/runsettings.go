package app

import (
	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/internal/actor"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// RunSettings are what tasks run with on this machine, from the
// environment: the SSH settings, the Ansible program, the base cache, the
// clock and who acts. Commands that run tasks (orch run-once, check,
// submit, solar runner, drift) start from them.
func (a *App) RunSettings() (orch.Runner, error) {
	sshCfg, err := a.SSHConfig()
	if err != nil {
		return orch.Runner{}, err
	}
	return orch.Runner{SSH: sshCfg, AnsiblePlaybook: a.Getenv("SOLAR_ANSIBLE_PLAYBOOK"), CacheDir: bases.CacheDir(a.Getenv),
		Now: a.Now, Actor: a.Actor(), Host: actor.Host()}, nil
}

// FleetPath returns the store's location if it has a fleet of runners (a
// PostgreSQL URL), else orch.ErrNoFleet: checked before the store is
// opened, so that a bbolt path is never created by a refused command.
func (a *App) FleetPath() (string, error) {
	path, err := a.StorePath()
	if err != nil {
		return "", err
	}
	if !store.IsURL(path) {
		return "", orch.ErrNoFleet
	}
	return path, nil
}
