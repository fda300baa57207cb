package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// A location that is neither a postgres URL nor plainly a file path is
// refused rather than taken as a bbolt file: taken as a path, a mistyped
// URL would be printed whole, its password with it, in the error saying
// its directory does not exist.
var (
	// schemeLike is "scheme:/" or "scheme:\": a URL of some scheme.
	schemeLike = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):[/\\]`)
	// userinfoLike is "user:password@": a URL without its scheme.
	userinfoLike = regexp.MustCompile(`^[^/\s:@]+:[^/\s@]*@`)
	// keywordLike is libpq's key=value connection string.
	keywordLike = regexp.MustCompile(`(?i)^(host|hostaddr|port|dbname|user|password|passfile|sslmode|sslpassword|service)\s*=|(?i)\s(password|sslpassword)\s*=`)
	// cleanScheme is a scheme that may be quoted back: no secret fits.
	cleanScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]{0,19}$`)
)

// nearPostgres lists what a mistyped "postgres" scheme tends to be besides
// near misses of the word, which nearWord catches.
var nearPostgres = []string{"pg", "pgsql", "psql", "postgre"}

// CheckLocation returns nil for a postgres:// or postgresql:// URL and for
// what can only be a bbolt path, and an error wrapping ErrBadLocation for
// a location that looks like a URL or a connection string but is not one
// solar accepts: another or a mistyped scheme (POSTGRES://, postgress://,
// postgresql:/), leading white space, a user:password@ without a scheme,
// libpq's key=value form. The error never shows the location past its
// scheme. A path that starts with / or ./ is always a file.
func CheckLocation(location string) error {
	if IsURL(location) || strings.HasPrefix(location, "/") || strings.HasPrefix(location, "./") {
		return nil
	}
	t := strings.TrimLeftFunc(location, unicode.IsSpace)
	switch {
	case t != location && (IsURL(t) || suspicious(t) != ""):
		return fmt.Errorf("%w %s: it starts with white space: remove it", ErrBadLocation, shown(t))
	case IsURL(strings.ToLower(t)):
		return fmt.Errorf("%w %s: the scheme must be lower case, postgres:// or postgresql://", ErrBadLocation, shown(t))
	}
	if why := suspicious(t); why != "" {
		return fmt.Errorf("%w %s: it %s, not a postgres:// or postgresql:// URL nor a file path: "+
			"fix the URL, or start a bbolt file's path with ./", ErrBadLocation, shown(t), why)
	}
	return nil
}

// suspicious says what a location that is not an accepted URL looks like,
// or "" when it may be a file path.
func suspicious(t string) string {
	lower := strings.ToLower(t)
	if head, _, ok := strings.Cut(lower, ":"); ok && !strings.ContainsAny(head, "/\\") && nearWord(head) {
		return "looks like a mistyped postgres URL"
	}
	if i := strings.IndexAny(lower, ":/"); i > 0 && strings.HasPrefix(lower[i:], "//") && nearWord(lower[:i]) {
		return "looks like a postgres URL missing its ':'"
	}
	switch {
	case schemeLike.MatchString(t):
		return "looks like a URL"
	case userinfoLike.MatchString(t):
		return "looks like a URL without its scheme"
	case keywordLike.MatchString(t):
		return "looks like a key=value connection string"
	}
	return ""
}

// nearWord reports whether w is "postgres" or "postgresql" mistyped: at
// most two edits away, or a usual abbreviation.
func nearWord(w string) bool {
	for _, n := range nearPostgres {
		if w == n {
			return true
		}
	}
	return editDistance(w, "postgres") <= 2 || editDistance(w, "postgresql") <= 2
}

// editDistance is Levenshtein's distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// shown is what may be shown of a refused location: its scheme, when it
// has one that holds no secret, and nothing of the rest.
func shown(location string) string {
	t := strings.TrimLeftFunc(location, unicode.IsSpace)
	head, tail, ok := strings.Cut(t, ":")
	if ok && cleanScheme.MatchString(head) && (strings.HasPrefix(tail, "/") || strings.HasPrefix(tail, "\\") || nearWord(strings.ToLower(head))) {
		return strconv.Quote(head + ":…")
	}
	return "(not shown: it may hold a password)"
}
