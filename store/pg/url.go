package pg

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/solarops/solar/store/kv"
)

// DefaultSchema is the PostgreSQL schema a URL without ?schema= uses.
const DefaultSchema = "solar"

// redacted replaces a password wherever a location is shown.
const redacted = "xxxxx"

// schemaName is what ?schema= accepts: a lower-case identifier that needs no
// quoting and does not start with pg_, which PostgreSQL reserves.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// urlParts is a postgres URL cut where Redact and Open need it. It is cut by
// hand rather than by net/url, which refuses what libpq and pgx accept (a
// host list "h1:5432,h2:5432").
type urlParts struct {
	scheme   string // "postgres" or "postgresql"
	userinfo string // as written, percent-encoded; "" when absent
	hasUser  bool
	rest     string // hosts, path
	query    url.Values
	rawQuery string
	hasQuery bool
}

var errNotURL = errors.New("not a postgres:// or postgresql:// URL")

func cut(raw string) (urlParts, error) {
	var u urlParts
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return u, errNotURL
	}
	u.scheme = scheme
	rest, _, _ = strings.Cut(rest, "#")
	if r, q, ok := strings.Cut(rest, "?"); ok {
		rest, u.rawQuery, u.hasQuery = r, q, true
		v, err := url.ParseQuery(q)
		if err != nil {
			return u, errors.New("its query does not parse")
		}
		u.query = v
	}
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		u.userinfo, u.hasUser, rest = rest[:at], true, rest[at+1:]
	}
	u.rest = rest
	return u, nil
}

// password returns the password the URL carries, decoded, and as written.
func (u urlParts) passwords() []string {
	var pw []string
	if _, p, ok := strings.Cut(u.userinfo, ":"); ok && p != "" {
		pw = append(pw, p)
		if d, err := url.PathUnescape(p); err == nil && d != p {
			pw = append(pw, d)
		}
	}
	if p := u.query.Get("password"); p != "" {
		pw = append(pw, p, url.QueryEscape(p))
	}
	return pw
}

func (u urlParts) String() string {
	var b strings.Builder
	b.WriteString(u.scheme + "://")
	if u.hasUser {
		b.WriteString(u.userinfo + "@")
	}
	b.WriteString(u.rest)
	if u.hasQuery && len(u.query) > 0 {
		b.WriteString("?" + u.query.Encode())
	}
	return b.String()
}

// Redact returns the URL fit to print: a password, in the user part or in a
// password parameter, is replaced by "xxxxx". A URL too broken to tell where
// its password is comes back as a fixed string rather than risk showing it.
func Redact(raw string) string {
	u, err := cut(raw)
	if err != nil {
		if errors.Is(err, errNotURL) && !strings.Contains(raw, "@") && !strings.Contains(raw, "password") {
			return raw
		}
		return "(a postgres URL that does not parse)"
	}
	if user, p, ok := strings.Cut(u.userinfo, ":"); ok && p != "" {
		u.userinfo = user + ":" + redacted
	}
	if u.query.Has("password") {
		u.query.Set("password", redacted)
	}
	if !u.hasQuery || len(u.query) == 0 {
		return u.String()
	}
	// Keep the query as written when there is nothing to hide in it.
	if !u.query.Has("password") {
		s := u.String()
		return s[:strings.IndexByte(s, '?')+1] + u.rawQuery
	}
	return u.String()
}

// location is a URL taken apart for Open.
type location struct {
	conn    string   // the URL pgx parses: without ?schema=
	schema  string   // validated
	display string   // Redact of the URL as given
	secrets []string // passwords to scrub from any error text
}

func parseLocation(raw string) (location, error) {
	l := location{display: Redact(raw), schema: DefaultSchema}
	u, err := cut(raw)
	if err != nil {
		return l, fmt.Errorf("%w: %w", kv.ErrBadLocation, err)
	}
	l.secrets = u.passwords()
	if s := u.query.Get("schema"); u.query.Has("schema") {
		if !schemaName.MatchString(s) || strings.HasPrefix(s, "pg_") {
			return l, fmt.Errorf("%w: schema %q is not a valid name: use lower-case letters, digits and _, at most 63, not starting with pg_", kv.ErrBadLocation, s)
		}
		l.schema = s
		u.query.Del("schema")
	}
	l.conn = u.String()
	return l, nil
}

// Error is an error of the store at Location, a URL with its password
// redacted; the text of the error it wraps is scrubbed of the password too.
type Error struct {
	Location string
	Op       string // what failed: "connect", "commit", ...
	Err      error
	secrets  []string
}

func (e *Error) Error() string {
	msg := strings.Join(strings.Fields(fmt.Sprintf("store %s: %s: %v", e.Location, e.Op, e.Err)), " ")
	for _, s := range e.secrets {
		if len(s) >= 1 {
			msg = strings.ReplaceAll(msg, s, redacted)
		}
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }
