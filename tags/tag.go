package tags

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/solarops/solar/internal/invalid"
)

// Sentinel errors. Every error this package returns wraps one of them, so
// callers map them to exit codes with errors.Is without parsing messages.
var (
	// ErrInvalidTag: a tag given to Parse or ParseList is malformed, or two
	// tags in one list give the same key different values.
	ErrInvalidTag = invalid.New("invalid tag")

	// ErrBadExpr: a tag expression does not parse. The error returned
	// is an *ExprError, which says where.
	ErrBadExpr = invalid.New("bad tag expression")
)

// ResourceKey is the key of the tag every resource carries, resource=NAME.
const ResourceKey = "resource"

// Set is a resource's tags: key -> value ("" for a bare label).
type Set map[string]string

// Parse parses one tag, "k=v" or a bare "label" (which yields value "").
// The error wraps ErrInvalidTag and names the tag.
func Parse(s string) (key, value string, err error) {
	key, value, reason := splitTag(s)
	if reason != "" {
		return "", "", fmt.Errorf("%w %q: %s", ErrInvalidTag, s, reason)
	}
	return key, value, nil
}

// splitTag does Parse's work and returns the reason s is not a tag instead
// of an error, so the expression lexer can share the rules without paying
// for an error it would reformat anyway.
func splitTag(s string) (key, value, reason string) {
	if s == "" {
		return "", "", "tag is empty"
	}
	n := keyLen(s)
	if n == 0 {
		if s[0] == '=' {
			return "", "", "key is empty"
		}
		r, _ := utf8.DecodeRuneInString(s)
		return "", "", fmt.Sprintf("key must start with a letter, digit or '_', not %q", r)
	}
	key = s[:n]
	if n == len(s) {
		return key, "", ""
	}
	if s[n] != '=' {
		r, _ := utf8.DecodeRuneInString(s[n:])
		return "", "", fmt.Sprintf("%q is not allowed in a key (letters, digits and _ . : / - are)", r)
	}
	value = s[n+1:]
	if m, r := valueLen(value); m != len(value) {
		return "", "", badValueReason(r)
	}
	return key, value, ""
}

// badValueReason explains why rune r ended a value early.
func badValueReason(r rune) string {
	switch r {
	case utf8.RuneError:
		return "value is not valid UTF-8"
	case '*':
		return "'*' is not allowed in a value (k=* is only a wildcard in tag expressions)"
	}
	if unicode.IsControl(r) {
		return fmt.Sprintf("%q is not allowed in a value (control character)", r)
	}
	return fmt.Sprintf("%q is not allowed in a value", r)
}

// isKeyStart and isKeyByte are byte-level because keys are ASCII; any
// non-ASCII byte therefore ends (or refuses to start) a key.
func isKeyStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func isKeyByte(c byte) bool {
	return isKeyStart(c) || c == '.' || c == ':' || c == '/' || c == '-'
}

// keyLen returns the length of the key at the start of s, 0 if none.
func keyLen(s string) int {
	if s == "" || !isKeyStart(s[0]) {
		return 0
	}
	n := 1
	for n < len(s) && isKeyByte(s[n]) {
		n++
	}
	return n
}

// valueLen returns the length of the value at the start of s and the rune
// that ended it (utf8.RuneError for invalid UTF-8; meaningless when the whole
// of s is a value).
func valueLen(s string) (int, rune) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isValueRune(r, size) {
			return i, r
		}
		i += size
	}
	return len(s), 0
}

func isValueRune(r rune, size int) bool {
	if r == utf8.RuneError && size <= 1 {
		return false
	}
	switch r {
	case ',', '&', '|', '(', ')', '!', '*':
		return false
	}
	// Control characters (escape sequences, line breaks) would be printed
	// to terminals as they are, and cannot be typed back.
	return !unicode.IsSpace(r) && !unicode.IsControl(r)
}

// ParseList parses tags given on a command line. Each item may itself be a
// comma-separated list ("env1,role=db"); spaces around each tag are trimmed
// and empty items are ignored, so "env1, role=db," is two tags. Only plain
// spaces are trimmed: a line break, tab or other control character anywhere
// in a tag is an error, never silently dropped. Giving one
// key two different values is an error rather than last-wins, because the
// operator almost certainly mistyped one of them.
func ParseList(items []string) (Set, error) {
	set := Set{}
	for _, item := range items {
		for t := range strings.SplitSeq(item, ",") {
			t = strings.Trim(t, " ")
			if t == "" {
				continue
			}
			k, v, err := Parse(t)
			if err != nil {
				return nil, err
			}
			if old, ok := set[k]; ok && old != v {
				return nil, fmt.Errorf("%w %q: key %q is already given as %q", ErrInvalidTag, t, k, Set{k: old}.String())
			}
			set[k] = v
		}
	}
	return set, nil
}

// Strings renders the set sorted by key, as "k=v", with a bare label as
// "label", so every string round-trips through Parse.
func (s Set) Strings() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = formatTag(k, s[k])
	}
	return out
}

// String renders the set as one comma-separated list that ParseList reads
// back.
func (s Set) String() string {
	return strings.Join(s.Strings(), ",")
}

// Clone returns a copy the caller may modify; a nil set clones to nil.
func (s Set) Clone() Set {
	return maps.Clone(s)
}

func formatTag(k, v string) string {
	if v == "" {
		return k
	}
	return k + "=" + v
}
