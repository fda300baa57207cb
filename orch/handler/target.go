package handler

// Target is how an attempt reaches the node it acts on, as the transports
// and the Ansible handler need it: package nodes makes it from a node
// (nodes.Node.Target), the SSH transport builds its connection from it
// (ssh.NodeOf), and the Ansible handler writes its inventory from it.
type Target struct {
	Name    string // the node's name, for messages and the inventory
	Local   bool   // this machine: ansible_connection=local
	Host    string // address: IPv4, IPv6 or DNS name
	Port    int    // 0 is 22 for the SSH transport
	User    string // login; "" is the controller's user name
	KeyPath string // private key on the controller; "" is ssh's default
	// HostKey is the trusted host key in authorized_keys form ("ssh-ed25519
	// AAAA..."); "" means the node is not trusted yet.
	HostKey string
}
