package orch

import (
	"errors"
	"fmt"
	"os"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// runBases is what one run knows of the bases its tasks run: each digest
// is read from the store and verified once, and written into the machine's
// base cache (bases.Materialize) once, whatever the number of tasks that
// use it. The scripts run from there: a runner never reads the directory
// a base was created from, which may be on another machine or gone.
//
// It lives for one prepare, inside the transaction that claims the plan.
type runBases struct {
	tx       *store.Tx
	root     string // the base cache of this machine (Runner.CacheDir)
	byDigest map[string]*runBase
}

// runBase is one base of the run, by digest.
type runBase struct {
	content *bases.Content // nil when problem is set
	dir     string         // its directory in the cache, once materialized
	parsed  *resources.Base
	problem string // why none of its tasks may run
}

func newRunBases(tx *store.Tx, root string) *runBases {
	return &runBases{tx: tx, root: root, byDigest: map[string]*runBase{}}
}

// get returns the base of that digest, read and verified once; name names
// it in problems.
func (rb *runBases) get(name, digest string) *runBase {
	if b, ok := rb.byDigest[digest]; ok {
		return b
	}
	b := &runBase{}
	rb.byDigest[digest] = b
	c, err := bases.Get(rb.tx, name, digest)
	switch {
	case errors.Is(err, bases.ErrCorrupt):
		b.problem = fmt.Sprintf("base %s@%s does not match its digest; nothing of it ran", name, bases.Short(digest))
	case errors.Is(err, bases.ErrUnknown):
		b.problem = fmt.Sprintf("base %s@%s is not in the store; nothing of it ran", name, bases.Short(digest))
	case err != nil:
		b.problem = fmt.Sprintf("base %s@%s cannot be read: %v; nothing of it ran", name, bases.Short(digest), err)
	default:
		b.content = c
	}
	return b
}

// dir returns the directory of the base of that digest in the cache,
// materialized on first use, or the problem that keeps its tasks from
// running.
func (rb *runBases) dir(name, digest string) (string, string) {
	b := rb.get(name, digest)
	if b.problem != "" || b.dir != "" {
		return b.dir, b.problem
	}
	dir, err := bases.Materialize(b.content, rb.root)
	if err != nil {
		b.problem = fmt.Sprintf("base %s@%s cannot be written to this machine's base cache: %v; nothing of it ran", name, bases.Short(digest), err)
		return "", b.problem
	}
	b.dir = dir
	return dir, ""
}

// base returns the base a pin names, as its stored meta.yaml says (the
// resource's own base when its digest is that one): a plan runs the
// actions, handler and inputs it was made with, whatever the resource's
// base is now. It returns the problem that keeps its tasks from running
// instead when there is one.
func (rb *runBases) base(res *resources.Resource, ref BaseRef) (*resources.Base, string) {
	if ref.Digest == res.Base.Digest {
		return &res.Base, ""
	}
	b := rb.get(ref.Name, ref.Digest)
	if b.problem != "" {
		return nil, b.problem
	}
	if b.parsed == nil {
		parsed, err := resources.FromContent(b.content, ref.Name, res.Base.Dir, ref.Name+"@"+bases.Short(ref.Digest))
		if err != nil {
			b.problem = fmt.Sprintf("base %s@%s cannot be read: %v; nothing of it ran", ref.Name, bases.Short(ref.Digest), err)
			return nil, b.problem
		}
		b.parsed = parsed
	}
	return b.parsed, ""
}

// noDigest is the problem of a task whose resource records no stored base:
// a store from before bases were stored, whose directory was not read
// into it.
func noDigest(res *resources.Resource) string {
	return fmt.Sprintf("resource %s has no stored base (its record predates bases kept in the store); nothing of it ran: solar resource upgrade %s DIR stores its base", res.Name, res.Name)
}

// cacheDir is the run's base cache: Runner.CacheDir, else the
// environment's (bases.CacheDir).
func (r *Runner) cacheDir() string {
	if r.CacheDir != "" {
		return r.CacheDir
	}
	return bases.CacheDir(os.Getenv)
}
