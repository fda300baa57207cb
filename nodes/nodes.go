package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// Errors of this package; the errors returned wrap one of them and name the
// node.
var (
	// ErrNotNode means the resource exists but its base is not a node.
	ErrNotNode = invalid.New("not a node")
	// ErrLocal means the node runs its actions on this machine, so there is
	// no host to trust or check.
	ErrLocal = invalid.New("node uses transport local")
	// ErrFingerprint means a key's fingerprint is not the one the operator
	// expected.
	ErrFingerprint = invalid.New("fingerprint mismatch")
)

// nodeError has a message of its own and unwraps to its kind.
type nodeError struct {
	kind error
	msg  string
}

func (e *nodeError) Error() string { return e.msg }
func (e *nodeError) Unwrap() error { return e.kind }

// Errorf returns an error whose message is format's and which wraps kind,
// one of this package's sentinels.
func Errorf(kind error, format string, args ...any) error {
	return &nodeError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Node is one node resource, as a transport needs it.
type Node struct {
	Name      string
	Transport string // resources.TransportLocal or resources.TransportSSH
	IP        string
	Port      int
	User      string // "" is the controller's user name
	Key       string // private key file on the controller; "" is the agent and default keys
	// Trusted is the host key trusted for the node; nil when none is.
	Trusted *Trusted
}

// SSH reports whether the node's actions run over SSH.
func (n *Node) SSH() bool { return n.Transport == resources.TransportSSH }

// Addr is ip:port, with brackets around an IPv6 address.
func (n *Node) Addr() string { return net.JoinHostPort(n.IP, strconv.Itoa(n.Port)) }

// Trusted is a host key an operator accepted for a node.
type Trusted struct {
	Key         string    `json:"key"`         // authorized_keys form: "ssh-ed25519 AAAA..."
	Fingerprint string    `json:"fingerprint"` // "SHA256:..."
	Address     string    `json:"address"`     // where the key was seen
	At          time.Time `json:"at"`
	// By is the actor (internal/actor) who trusted the key, at At; "" in
	// records written before actors.
	By string `json:"by,omitempty"`
}

// Get reads the node named name. It fails with resources.ErrNotFound for an
// unknown resource and ErrNotNode for one that is not a node.
func Get(cat *resources.Catalog, name string) (*Node, error) {
	r, err := cat.Get(name)
	if err != nil {
		return nil, err
	}
	if !r.Base.Node {
		return nil, Errorf(ErrNotNode, "%s is not a node (its base %s does not say node: true); solar node list shows the nodes", name, r.Base.Name)
	}
	eff, err := cat.Effective(name)
	if err != nil {
		return nil, err
	}
	n := FromValues(name, eff)
	if n.Trusted, err = GetTrusted(cat.Tx(), name); err != nil {
		return nil, err
	}
	return n, nil
}

// FromValues is node name as the transport inputs vals say (its effective
// values, or those a plan pinned), with no trusted key.
func FromValues(name string, vals map[string]any) *Node {
	n := &Node{Name: name, Transport: resources.TransportLocal, Port: 22}
	if s, ok := vals[resources.TransportInput].(string); ok && s != "" {
		n.Transport = s
	}
	n.IP, _ = vals[resources.IPInput].(string)
	switch p := vals[resources.SSHPortInput].(type) {
	case int64:
		if p > 0 {
			n.Port = int(p)
		}
	case float64: // values decoded from JSON as they are, a plan's pins
		if p > 0 && p == float64(int(p)) {
			n.Port = int(p)
		}
	}
	n.User, _ = vals[resources.SSHUserInput].(string)
	n.Key, _ = vals[resources.SSHKeyInput].(string)
	return n
}

// GetCommitted reads node name as its actions last ran with (its committed
// state, staging.Committed): a change staged on it and not run yet is not
// seen. A node never committed is read as it is now (Get).
func GetCommitted(cat *resources.Catalog, name string) (*Node, error) {
	n, err := Get(cat, name)
	if err != nil {
		return nil, err
	}
	snap, err := staging.Committed(cat.Tx(), name)
	if err != nil || snap == nil {
		return n, err
	}
	c := FromValues(name, snap.Inputs)
	c.Trusted = n.Trusted
	return c, nil
}

// List returns every node, by name.
func List(cat *resources.Catalog) ([]*Node, error) { return list(cat, Get) }

// ListCommitted returns every node, by name, each as GetCommitted reads
// it.
func ListCommitted(cat *resources.Catalog) ([]*Node, error) { return list(cat, GetCommitted) }

func list(cat *resources.Catalog, get func(*resources.Catalog, string) (*Node, error)) ([]*Node, error) {
	all, err := cat.List(nil)
	if err != nil {
		return nil, err
	}
	var out []*Node
	for _, r := range all {
		if !r.Base.Node {
			continue
		}
		n, err := get(cat, r.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// GetTrusted returns the key trusted for node name, or nil.
func GetTrusted(tx *store.Tx, name string) (*Trusted, error) {
	raw, err := tx.Get(store.HostKeys, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var t Trusted
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("host key record of node %s is damaged: %w (run solar node trust %s again)", name, err, name)
	}
	return &t, nil
}

// Trust records t as the key of node name, replacing any earlier one.
func Trust(tx *store.Tx, name string, t Trusted) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return tx.Put(store.HostKeys, name, raw)
}
