package bases

import (
	"fmt"
	"strings"

	"github.com/solarops/solar/store"
)

// MinPrefix is the fewest hex digits of a digest a reference may give.
const MinPrefix = 6

// refError is a bad reference: its message is for the user as it is, and
// it unwraps to ErrUnknown (invalid input).
type refError struct{ msg string }

func (e *refError) Error() string { return e.msg }
func (e *refError) Unwrap() error { return ErrUnknown }

func unknownf(format string, args ...any) error {
	return &refError{msg: fmt.Sprintf(format, args...)}
}

// Found is a stored base a reference names, and how many other bases of
// the same name are stored (a reference by name alone names the newest).
type Found struct {
	*Info
	Others int
}

// Find resolves ref, "NAME" or "NAME@DIGEST", among the stored bases. A
// digest may be given by a prefix of at least MinPrefix hex digits that
// only one stored base of that name has. NAME alone names the base of
// that name stored last: the one a fresh create of its directory made, or
// the last upgrade stored. Errors wrap ErrUnknown and name ref.
func Find(tx *store.Tx, ref string) (*Found, error) {
	name, prefix, byDigest := strings.Cut(ref, "@")
	if name == "" {
		return nil, unknownf("base %q: want NAME or NAME@DIGEST", ref)
	}
	if byDigest && (len(prefix) < MinPrefix || strings.Trim(strings.ToLower(prefix), "0123456789abcdef") != "") {
		return nil, unknownf("base %q: want a digest of at least %d hex digits after @", ref, MinPrefix)
	}
	prefix = strings.ToLower(prefix)
	all, err := List(tx)
	if err != nil {
		return nil, err
	}
	var named, matched []*Info
	for _, in := range all {
		if in.Name != name {
			continue
		}
		named = append(named, in)
		if byDigest && strings.HasPrefix(in.Digest, prefix) {
			matched = append(matched, in)
		}
	}
	switch {
	case len(named) == 0:
		return nil, unknownf("no base named %s; see solar base list", name)
	case !byDigest:
		// List sorts by name then time stored: the last is the newest.
		return &Found{Info: named[len(named)-1], Others: len(named) - 1}, nil
	case len(matched) == 0:
		return nil, unknownf("no base %s has a digest starting with %s; see solar base list", name, prefix)
	case len(matched) > 1:
		return nil, unknownf("base %s: %d digests start with %s; give more digits (see solar base list)", ref, len(matched), prefix)
	}
	return &Found{Info: matched[0], Others: len(named) - 1}, nil
}
