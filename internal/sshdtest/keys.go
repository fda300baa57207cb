package sshdtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/crypto/ssh"
)

// newKey generates a private key of kind: "ed25519", "ecdsa" (P-256) or
// "rsa" (2048 bits, the smallest size OpenSSH still accepts).
func newKey(kind string) (crypto.Signer, error) {
	switch kind {
	case "ed25519":
		_, key, err := ed25519.GenerateKey(rand.Reader)
		return key, err
	case "ecdsa":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("unknown key type %q: use ed25519, ecdsa or rsa", kind)
}

// encodeKey returns key in the OpenSSH private key format, unencrypted, as
// ssh-keygen writes it and both sshd and ssh read it.
func encodeKey(key crypto.Signer, comment string) ([]byte, error) {
	block, err := ssh.MarshalPrivateKey(key, comment)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(block), nil
}

// writeKey generates a key of kind, writes it to path (0600, which ssh
// demands of a private key) and returns its public half. path must not
// exist yet.
func writeKey(path, kind, comment string) (ssh.PublicKey, error) {
	key, err := newKey(kind)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	data, err := encodeKey(key, comment)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	return pub, f.Close()
}

// readPublic returns the public half of the private key file at path.
func readPublic(path string) (ssh.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return signer.PublicKey(), nil
}

// hostKeyMu keeps two servers of one process that share a HostKeyDir from
// both generating its key.
var hostKeyMu sync.Mutex

// hostKey returns the host key of kind kept in dir, named as in /etc/ssh,
// generating it the first time. A key being written is linked into place
// whole, so another process never reads half of it.
func hostKey(dir, kind string) (path string, pub ssh.PublicKey, err error) {
	hostKeyMu.Lock()
	defer hostKeyMu.Unlock()
	path = filepath.Join(dir, "ssh_host_"+kind+"_key")
	pub, err = readPublic(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return path, pub, err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d", filepath.Base(path), os.Getpid()))
	os.Remove(tmp) // left by a dead process that had our pid
	defer os.Remove(tmp)
	if _, err := writeKey(tmp, kind, "sshdtest host key"); err != nil {
		return "", nil, err
	}
	// Link fails if the name exists: whoever got there first wins and
	// every server uses its key.
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, err
	}
	pub, err = readPublic(path)
	return path, pub, err
}
