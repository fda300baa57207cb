package orch

import (
	sshx "github.com/solarops/solar/orch/handler/ssh"

	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/resources"
)

// wireTransports completes the run's handlers once every location of its
// plan is known: the attempts of this machine, ansible-playbook's
// included, run on the run's Local (r.local, settled when the run ends:
// r.settle); the SSH nodes among locations (nodes.Remote) get the run's
// SSH connections (r.transport), and the Ansible handler their targets.
// Any other location runs here.
func (r *Runner) wireTransports(cat *resources.Catalog, locations []string, shell *handler.Shell, ansible *handler.Ansible) error {
	remote, err := nodes.Remote(cat, locations)
	if err != nil {
		return err
	}
	if r.local == nil {
		r.local = &handler.Local{}
	}
	if shell.Transport == nil {
		shell.Transport = r.local
	}
	ansible.Local = r.local
	if len(remote) == 0 {
		return nil
	}
	sshNodes := make(map[string]*sshx.Node, len(remote))
	for loc, t := range remote {
		sshNodes[loc] = sshx.NodeOf(t)
	}
	r.transport = sshx.New(sshNodes, shell.Transport, r.SSH)
	shell.Transport = r.transport
	ansible.Target = func(loc string) (handler.Target, error) {
		if t, ok := remote[loc]; ok {
			return t, nil
		}
		return handler.Target{Name: "localhost", Local: true}, nil
	}
	return nil
}

// settle removes what the run's attempts left on this machine, and the
// run's private directories, before the run returns (handler.Local.Settle).
func (r *Runner) settle() {
	if r.local != nil {
		r.local.Settle()
	}
}
