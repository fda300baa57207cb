package nodes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/resources"
)

// A node's transport view is made here only: its inputs as they are, the
// trusted key as text, none when untrusted; a node with transport local
// runs on this machine.
func TestNodeTarget(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFmPqW6vJ3Q1wQ3b6h5kq7nV2m0b4Jm5r9cV3cD0e1fA"
	tests := []struct {
		name string
		node Node
		want handler.Target
	}{
		{"ssh, trusted", Node{Name: "db1", Transport: resources.TransportSSH, IP: "10.0.0.5", Port: 2222, User: "ops", Key: "~/.ssh/k", Trusted: &Trusted{Key: key}},
			handler.Target{Name: "db1", Host: "10.0.0.5", Port: 2222, User: "ops", KeyPath: "~/.ssh/k", HostKey: key}},
		{"ssh, untrusted", Node{Name: "db2", Transport: resources.TransportSSH, IP: "::1", Port: 22},
			handler.Target{Name: "db2", Host: "::1", Port: 22}},
		{"local", Node{Name: "here", Transport: resources.TransportLocal, Port: 22},
			handler.Target{Name: "here", Local: true, Port: 22}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.node.Target()); diff != "" {
				t.Errorf("Target() (-want +got):\n%s", diff)
			}
		})
	}
}
