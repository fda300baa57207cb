package orch

import (
	"errors"

	sshx "github.com/solarops/solar/orch/handler/ssh"

	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/resources"
)

// sshNodes returns the nodes with transport ssh among locations, by name.
// Locations that name no node, or a local one, run here.
func sshNodes(cat *resources.Catalog, locations []string) (map[string]*sshx.Node, error) {
	out := map[string]*sshx.Node{}
	for _, loc := range locations {
		n, err := nodes.Get(cat, loc)
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, nodes.ErrNotNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !n.SSH() {
			continue
		}
		out[loc] = SSHNode(n)
	}
	return out, nil
}

// ansibleTargets returns, by location, how ansible-playbook reaches the
// SSH nodes among locations; any other location is this machine.
func ansibleTargets(cat *resources.Catalog, locations []string) map[string]handler.AnsibleTarget {
	out := map[string]handler.AnsibleTarget{}
	for _, loc := range locations {
		n, err := nodes.Get(cat, loc)
		if err != nil || !n.SSH() {
			continue
		}
		t := handler.AnsibleTarget{Name: n.Name, Host: n.IP, Port: n.Port, User: n.User, KeyPath: n.Key}
		if n.Trusted != nil {
			t.HostKey = n.Trusted.Key
		}
		out[loc] = t
	}
	return out
}

// SSHNode is the SSH transport's view of a node.
func SSHNode(n *nodes.Node) *sshx.Node {
	sn := &sshx.Node{Name: n.Name, Host: n.IP, Port: n.Port, User: n.User, KeyPath: n.Key}
	if n.Trusted != nil {
		// A damaged key reads as no key: the task says to trust again.
		sn.HostKey, _ = sshx.ParseKey(n.Trusted.Key)
	}
	return sn
}
