package ssh

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"

	"github.com/solarops/solar/internal/fileread"
)

// maxBase bounds the size of a base that travels to nodes: bases hold
// scripts and templates, not payloads.
const maxBase = 64 << 20

// maxLinkDepth bounds how many directory links a base may follow, which
// also ends a link that loops.
const maxLinkDepth = 16

// base is a base directory packed for the nodes.
type base struct {
	hash string // hex; names the base in the node's cache
	tar  []byte
}

// baseCache packs each base directory once per Transport.
type baseCache struct {
	mu    sync.Mutex
	packs map[string]*basePack
}

type basePack struct {
	once sync.Once
	b    *base
	err  error
}

func (c *baseCache) get(dir string) (*base, error) {
	c.mu.Lock()
	if c.packs == nil {
		c.packs = map[string]*basePack{}
	}
	p, ok := c.packs[dir]
	if !ok {
		p = &basePack{}
		c.packs[dir] = p
	}
	c.mu.Unlock()
	p.once.Do(func() { p.b, p.err = packBase(dir) })
	return p.b, p.err
}

// packBase makes the tar stream of dir and its content hash. The hash
// covers each entry's path, type, permission bits and content, in path
// order, so any change to a script gives the base a new name on the node.
// Links are followed: the node gets what they point at.
func packBase(dir string) (*base, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := sha256.New()
	size := 0
	var walk func(abs, rel string, depth int) error
	walk = func(abs, rel string, depth int) error {
		entries, err := os.ReadDir(abs)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		slices.Sort(names)
		for _, name := range names {
			p, r := filepath.Join(abs, name), path.Join(rel, name)
			st, err := os.Stat(p) // follows links
			if err != nil {
				return fmt.Errorf("base file %s: %w", p, err)
			}
			mode := st.Mode()
			switch {
			case mode.IsDir():
				if link, _ := os.Lstat(p); link != nil && link.Mode()&os.ModeSymlink != 0 {
					if depth >= maxLinkDepth {
						return fmt.Errorf("base file %s: too many levels of linked directories", p)
					}
					depth++
				}
				fmt.Fprintf(h, "d %s %o\x00", r, mode.Perm())
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: r + "/", Mode: int64(mode.Perm() | 0o700)}); err != nil {
					return err
				}
				if err := walk(p, r, depth); err != nil {
					return err
				}
			case mode.IsRegular():
				// Bounded by what is left of maxBase, so that a huge file
				// is refused before it is read into memory.
				data, err := fileread.Read(p, int64(maxBase-size))
				if errors.Is(err, fileread.ErrTooLarge) {
					return fmt.Errorf("base %s is larger than %d MiB: bases hold scripts, not payloads", dir, maxBase>>20)
				}
				if err != nil {
					return fmt.Errorf("base file %s: %w", p, err)
				}
				size += len(data)
				fmt.Fprintf(h, "f %s %o %d\x00", r, mode.Perm(), len(data))
				h.Write(data)
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: r, Mode: int64(mode.Perm() | 0o600), Size: int64(len(data))}); err != nil {
					return err
				}
				if _, err := tw.Write(data); err != nil {
					return err
				}
			default:
				// Sockets, FIFOs and devices have no place in a base.
			}
		}
		return nil
	}
	if err := walk(dir, "", 0); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &base{hash: hex.EncodeToString(h.Sum(nil)[:16]), tar: buf.Bytes()}, nil
}

// baseUpload makes sure one base is in one node's cache, once per run.
type baseUpload struct {
	done chan struct{}
	err  error
}

// ensureBase puts b into the node's cache, once per run, after an
// attempt found it missing: the guard has swept the node and the wrapper
// looked, so no session is spent on either. Concurrent callers for the
// same base wait for the first.
func (p *pool) ensureBase(ctx context.Context, b *base) error {
	p.mu.Lock()
	u, ok := p.bases[b.hash]
	if !ok {
		u = &baseUpload{done: make(chan struct{})}
		p.bases[b.hash] = u
	}
	p.mu.Unlock()
	if ok {
		select {
		case <-u.done:
			return u.err
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	u.err = p.upload(ctx, b)
	if u.err != nil {
		// The next attempt tries again.
		p.forgetBase(b.hash)
	}
	close(u.done)
	return u.err
}

// forgetBase makes the next attempt check the node's cache again.
func (p *pool) forgetBase(hash string) {
	p.mu.Lock()
	delete(p.bases, hash)
	p.mu.Unlock()
}

// upload puts b into the node's cache (setup.sh), where an attempt found
// it missing, over a connection of its own: on a slow line the upload's
// bytes would hold up, for as long as they take, the heartbeats the
// pool's connections carry to their guards, which would then take the
// controller for gone.
func (p *pool) upload(ctx context.Context, b *base) error {
	c, err := p.connect(false)
	if err != nil {
		return err
	}
	defer c.client.Close()
	stop := context.AfterFunc(ctx, func() { c.client.Close() })
	defer stop()
	go p.keepalive(c)
	s, err := c.client.NewSession()
	if err != nil {
		return p.lostErr(c, err)
	}
	defer s.Close()
	_, err = p.setup(c, s, b.hash, "upload", bytes.NewReader(b.tar))
	return err
}

// setup runs setup.sh with the base's hash and mode in session s of c.
func (p *pool) setup(c *conn, s *gossh.Session, hash, mode string, stdin io.Reader) (string, error) {
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if stdin != nil {
		s.Stdin = stdin
	}
	err := s.Run(shellCommand(setupScript, "solar-setup", hash, mode))
	if err == nil {
		return stdout.String(), nil
	}
	var ee *gossh.ExitError
	if errors.As(err, &ee) {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = fmt.Sprintf("exit status %d", ee.ExitStatus())
		}
		return "", nodeErr(ErrNode, "node %s (%s): cannot put the base into the cache (%s): %s", p.node.Name, p.node.Addr(), mode, msg)
	}
	return "", p.lostErr(c, err)
}
