package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/solarops/solar/internal/fileread"
	"github.com/solarops/solar/orch/handler"
)

// Errors of this package. Errors returned wrap one of these and name the
// node; their messages are meant for the operator as they are.
var (
	// ErrUntrusted means the node has no trusted host key yet.
	ErrUntrusted = fmt.Errorf("node is not trusted (%w)", handler.ErrNeedsOperator)
	// ErrHostKeyChanged means the node offered a host key other than the
	// trusted one.
	ErrHostKeyChanged = fmt.Errorf("host key changed (%w)", handler.ErrNeedsOperator)
	// ErrUnreachable means no SSH connection could be made to the node.
	ErrUnreachable = errors.New("node is unreachable")
	// ErrLogin means the node refused the login, or no key could be used.
	ErrLogin = errors.New("login refused")
	// ErrLost means the connection dropped while an attempt ran on it.
	ErrLost = errors.New("connection lost")
	// ErrNode means the node cannot run attempts: a tool the wrapper needs
	// is missing, or the base could not be unpacked.
	ErrNode = errors.New("node cannot run the action")
)

// nodeError is an error of this package: its message names the node and
// reads as it is; errors.Is sees its kind.
type nodeError struct {
	kind error
	msg  string
}

func (e *nodeError) Error() string { return e.msg }
func (e *nodeError) Unwrap() error { return e.kind }

func nodeErr(kind error, format string, args ...any) error {
	return &nodeError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Node is how to reach one node.
type Node struct {
	Name string // the node resource's name, for messages
	Host string // IPv4, IPv6 or DNS name
	Port int    // 0 is 22
	User string // login; "" is the controller's user name
	// KeyPath is a private key file on the controller; "" means the keys
	// of the ssh-agent at $SSH_AUTH_SOCK, then ~/.ssh/id_ed25519,
	// id_ecdsa and id_rsa.
	KeyPath string
	// HostKey is the trusted host key; nil means untrusted.
	HostKey gossh.PublicKey
}

// NodeOf is the Node a target names (see nodes.Node.Target). A trusted
// key that does not parse reads as no key: the attempt then says to trust
// the node again.
func NodeOf(t handler.Target) *Node {
	n := &Node{Name: t.Name, Host: t.Host, Port: t.Port, User: t.User, KeyPath: t.KeyPath}
	if t.HostKey != "" {
		n.HostKey, _ = ParseKey(t.HostKey)
	}
	return n
}

// Addr is host:port, brackets around an IPv6 address included.
func (n *Node) Addr() string {
	port := n.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(n.Host, strconv.Itoa(port))
}

// Config tunes a Transport. The zero value is ready to use.
type Config struct {
	// Keepalive is how often a connection is checked, and how long an
	// answer may take while nothing else arrives from the node either; 0
	// is 10s. Remote work with no word from the controller for three
	// periods is killed.
	Keepalive time.Duration
	// DialTimeout bounds connecting and logging in; 0 is 15s.
	DialTimeout time.Duration
	// MaxSessions is the most sessions open on one connection; 0 is 10,
	// OpenSSH's default MaxSessions.
	MaxSessions int
	// MaxDials is the most connections being made at once, all nodes
	// together; 0 is 8, below OpenSSH's default MaxStartups of 10.
	MaxDials int
	// Getenv reads the controller's environment (SSH_AUTH_SOCK, HOME,
	// USER); nil is os.Getenv.
	Getenv func(string) string
}

func (c *Config) withDefaults() Config {
	out := *c
	if out.Keepalive <= 0 {
		out.Keepalive = 10 * time.Second
	}
	if out.DialTimeout <= 0 {
		out.DialTimeout = 15 * time.Second
	}
	if out.MaxSessions <= 0 {
		out.MaxSessions = 10
	}
	if out.MaxDials <= 0 {
		out.MaxDials = 8
	}
	if out.Getenv == nil {
		out.Getenv = os.Getenv
	}
	return out
}

// FingerprintOf is the SHA256 fingerprint of a key as OpenSSH prints it.
func FingerprintOf(k gossh.PublicKey) string { return gossh.FingerprintSHA256(k) }

// ParseKey reads a host key in authorized_keys form ("ssh-ed25519 AAAA...").
func ParseKey(text string) (gossh.PublicKey, error) {
	k, _, _, _, err := gossh.ParseAuthorizedKey([]byte(text))
	return k, err
}

// KeyText is a host key in authorized_keys form, without a newline.
func KeyText(k gossh.PublicKey) string {
	b := gossh.MarshalAuthorizedKey(k)
	return string(b[:len(b)-1])
}

// algorithmsFor lists the host key algorithms that use key's type, so that
// negotiation can only pick the trusted key.
func algorithmsFor(k gossh.PublicKey) []string {
	switch k.Type() {
	case gossh.KeyAlgoRSA:
		return []string{gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256, gossh.KeyAlgoRSA}
	}
	return []string{k.Type()}
}

// preferredAlgorithms is what trust asks for when it knows no key yet:
// modern, short keys first.
var preferredAlgorithms = []string{
	gossh.KeyAlgoED25519,
	gossh.KeyAlgoECDSA256, gossh.KeyAlgoECDSA384, gossh.KeyAlgoECDSA521,
	gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256,
}

// clientConfig builds the login of n: strict host key, the node's user and
// keys.
func (cfg *Config) clientConfig(n *Node) (*gossh.ClientConfig, func(), error) {
	if n.HostKey == nil {
		return nil, nil, nodeErr(ErrUntrusted, "node %s (%s) is not trusted: solar node trust %s", n.Name, n.Addr(), n.Name)
	}
	signers, done, err := cfg.signers(n)
	if err != nil {
		return nil, nil, err
	}
	login := n.User
	if login == "" {
		login = controllerUser(cfg.Getenv)
	}
	trusted := n.HostKey
	return &gossh.ClientConfig{
		User:              login,
		Auth:              []gossh.AuthMethod{gossh.PublicKeys(signers...)},
		HostKeyAlgorithms: algorithmsFor(trusted),
		HostKeyCallback: func(_ string, _ net.Addr, offered gossh.PublicKey) error {
			if offered.Type() == trusted.Type() && string(offered.Marshal()) == string(trusted.Marshal()) {
				return nil
			}
			return &hostKeyError{node: n.Name, addr: n.Addr(), want: FingerprintOf(trusted), got: FingerprintOf(offered)}
		},
		Timeout: cfg.DialTimeout,
	}, done, nil
}

// hostKeyError is a node that offered another key than the trusted one.
type hostKeyError struct {
	node, addr, want, got string
}

func (e *hostKeyError) Error() string {
	return fmt.Sprintf("node %s (%s): host key changed: expected %s, offered %s; if the node was reinstalled, check the new key and run solar node trust %s --fingerprint %s",
		e.node, e.addr, e.want, e.got, e.node, e.got)
}

func (e *hostKeyError) Unwrap() error { return ErrHostKeyChanged }

// controllerUser is the name of the user running solar.
func controllerUser(getenv func(string) string) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return getenv("USER")
}

// signers finds the keys to log in with: the node's key file, else the
// agent's keys and the default key files. done releases the agent.
func (cfg *Config) signers(n *Node) ([]gossh.Signer, func(), error) {
	if n.KeyPath != "" {
		s, err := readKey(n.KeyPath)
		if err != nil {
			return nil, nil, nodeErr(ErrLogin, "node %s: ssh_key %s: %v", n.Name, n.KeyPath, err)
		}
		return []gossh.Signer{s}, func() {}, nil
	}
	var signers []gossh.Signer
	done := func() {}
	if sock := cfg.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if c, err := net.Dial("unix", sock); err == nil {
			if s, err := agent.NewClient(c).Signers(); err == nil {
				signers = append(signers, s...)
			}
			done = func() { c.Close() }
		}
	}
	home := cfg.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var problems []string
	for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		s, err := readKey(p)
		if err != nil {
			problems = append(problems, p+": "+err.Error())
			continue
		}
		signers = append(signers, s)
	}
	if len(signers) == 0 {
		done()
		msg := "set the node's ssh_key, load a key into ssh-agent, or create ~/.ssh/id_ed25519"
		for _, p := range problems {
			msg += "; " + p
		}
		return nil, nil, nodeErr(ErrLogin, "node %s: no key to log in with: %s", n.Name, msg)
	}
	return signers, done, nil
}

// readKey reads an unencrypted private key file, which the operator names:
// it is read as every private key file is (fileread.PrivateKey: regular,
// bounded, without blocking).
func readKey(path string) (gossh.Signer, error) {
	raw, err := fileread.PrivateKey(path)
	if err != nil {
		return nil, err
	}
	s, err := gossh.ParsePrivateKey(raw)
	var missing *gossh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, errors.New("the key is protected by a passphrase: load it into ssh-agent (ssh-add) and leave ssh_key empty")
	}
	if err != nil {
		if _, _, _, _, perr := gossh.ParseAuthorizedKey(raw); perr == nil {
			return nil, errors.New("this is a public key: give the private key's path (without .pub)")
		}
		return nil, fmt.Errorf("not a private key: %v", err)
	}
	return s, nil
}

// errScanned ends a handshake once the host key has been seen.
var errScanned = errors.New("host key scanned")

// keyFamilies groups the host key algorithms by the key each one uses, in
// preferredAlgorithms order: one handshake per group finds every key a
// server holds.
var keyFamilies = [][]string{
	{gossh.KeyAlgoED25519},
	{gossh.KeyAlgoECDSA256, gossh.KeyAlgoECDSA384, gossh.KeyAlgoECDSA521},
	{gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256},
}

// ScanHostKey connects to node name at addr and returns the host key it offers, without
// logging in. It asks for the key types in preferredAlgorithms order, so a
// server with several keys gives its ed25519 key when it has one.
func ScanHostKey(ctx context.Context, name, addr string, timeout time.Duration) (gossh.PublicKey, error) {
	key, _, err := scanHostKey(ctx, name, addr, timeout, preferredAlgorithms)
	return key, err
}

// ScanHostKeys returns every host key addr offers, one handshake per key
// type, preferred types first: an operator may hold the fingerprint of any
// of them (ssh_host_rsa_key.pub as well as ssh_host_ed25519_key.pub).
func ScanHostKeys(ctx context.Context, name, addr string, timeout time.Duration) ([]gossh.PublicKey, error) {
	var (
		keys  []gossh.PublicKey
		first error
	)
	for _, algs := range keyFamilies {
		key, reached, err := scanHostKey(ctx, name, addr, timeout, algs)
		if err == nil {
			keys = append(keys, key)
			continue
		}
		if !reached {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if len(keys) == 0 {
		return nil, first
	}
	return keys, nil
}

// scanHostKey offers only algs and returns the key the server answers
// with; reached is false when no connection was made at all.
func scanHostKey(ctx context.Context, name, addr string, timeout time.Duration, algs []string) (key gossh.PublicKey, reached bool, err error) {
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, nodeErr(ErrUnreachable, "node %s (%s) is unreachable: %v", name, addr, cleanNetErr(err))
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(timeout))
	cfg := &gossh.ClientConfig{
		User:              "solar-trust",
		HostKeyAlgorithms: algs,
		HostKeyCallback: func(_ string, _ net.Addr, k gossh.PublicKey) error {
			key = k
			return errScanned
		},
	}
	_, _, _, err = gossh.NewClientConn(raw, addr, cfg)
	if key != nil {
		return key, true, nil
	}
	return nil, true, nodeErr(ErrUnreachable, "node %s (%s): ssh handshake failed: %v", name, addr, handshakeReason(err))
}

// LoginName is the user a node with no ssh_user logs in as: the
// controller's user.
func (c Config) LoginName() string {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return controllerUser(getenv)
}
