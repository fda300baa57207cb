package nodes

import (
	"errors"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/resources"
)

// Target is the node as the transports see it, the one place a node is
// turned into one: the SSH transport connects to it (ssh.NodeOf), the
// Ansible handler writes its inventory from it. A node that is not
// trusted yet has no HostKey.
func (n *Node) Target() handler.Target {
	t := handler.Target{Name: n.Name, Local: !n.SSH(), Host: n.IP, Port: n.Port, User: n.User, KeyPath: n.Key}
	if n.Trusted != nil {
		t.HostKey = n.Trusted.Key
	}
	return t
}

// Remote returns the targets of the nodes among locations whose actions
// run over SSH, by location. A location that names no resource, a
// resource that is not a node, or a node with transport local runs on this
// machine and is left out; any other error reading a node is returned.
func Remote(cat *resources.Catalog, locations []string) (map[string]handler.Target, error) {
	out := map[string]handler.Target{}
	for _, loc := range locations {
		n, err := Get(cat, loc)
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, ErrNotNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n.SSH() {
			out[loc] = n.Target()
		}
	}
	return out, nil
}
