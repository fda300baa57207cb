package pg

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/solarops/solar/store/kv"
)

// DefaultSchema is the PostgreSQL schema a URL without ?schema= uses.
const DefaultSchema = "solar"

// redacted replaces a password wherever a location is shown.
const redacted = "xxxxx"

// unparsable is shown instead of a URL too broken to tell where its
// password is.
const unparsable = "(a postgres URL that does not parse)"

// schemaName is what ?schema= accepts: a lower-case identifier that needs no
// quoting and does not start with pg_, which PostgreSQL reserves.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// urlParts is a postgres URL cut where Redact and Open need it, the way pgx
// and libpq cut it: the user part ends at the first '@' that comes before
// any '/', so a password may hold '?', '#' or ':' unencoded. It is cut by
// hand rather than by net/url, which refuses what libpq and pgx accept (a
// host list "h1:5432,h2:5432").
type urlParts struct {
	scheme   string // "postgres" or "postgresql"
	userinfo string // as written, percent-encoded; "" when absent
	hasUser  bool
	rest     string  // hosts, path: up to the query
	params   []param // the query's, in order
	hasQuery bool
}

// param is one key=value of a URL's query.
type param struct {
	rawKey, rawValue string // as written
	key, value       string // decoded
}

var errNotURL = errors.New("not a postgres:// or postgresql:// URL")

// errStrayAt is a '@' past the user part: the sign of a password holding an
// unencoded '/', which makes pgx take the password for a host and a port.
var errStrayAt = errors.New("it has a '@' that does not end its user and password: " +
	"percent-encode a '/' in the password as %2F, and a '@' anywhere after the user part as %40")

func cut(raw string) (urlParts, error) {
	var u urlParts
	p, ok := strings.CutPrefix(raw, "postgresql://")
	u.scheme = "postgresql"
	if !ok {
		p, ok = strings.CutPrefix(raw, "postgres://")
		u.scheme = "postgres"
	}
	if !ok {
		return u, errNotURL
	}
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		u.userinfo, u.hasUser, p = p[:i], true, p[i+1:]
	}
	if strings.IndexByte(p, '@') >= 0 {
		return u, errStrayAt
	}
	p, q, hasQuery := strings.Cut(p, "?")
	u.rest, u.hasQuery = p, hasQuery
	if !hasQuery || q == "" {
		return u, nil
	}
	for _, pair := range strings.Split(q, "&") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.IndexByte(v, '=') >= 0 {
			// Not echoed: a mistyped pair may be a password.
			return u, errors.New("its query does not parse: write each parameter as key=value, percent-encoding '=' and '&' in values")
		}
		dk, err1 := decode(k)
		dv, err2 := decode(v)
		if err1 != nil || err2 != nil {
			return u, errors.New("its query does not parse: a '%' must start a percent-encoded byte such as %25")
		}
		u.params = append(u.params, param{rawKey: k, rawValue: v, key: dk, value: dv})
	}
	return u, nil
}

// decode percent-decodes a part of a URL as pgx does: spaces around it are
// dropped, '+' stays '+'.
func decode(s string) (string, error) {
	return url.PathUnescape(strings.Trim(s, " "))
}

// secretParam reports whether a query parameter may carry a secret:
// password and sslpassword, which pgx and libpq take, and, should a later
// driver add one, anything named like a secret. passfile names a file.
func secretParam(key string) bool {
	k := strings.ToLower(key)
	if k == "passfile" {
		return false
	}
	for _, s := range []string{"pass", "secret", "token"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// get returns the value of the last parameter named key (pgx's "last
// occurrence wins").
func (u urlParts) get(key string) (string, bool) {
	for i := len(u.params) - 1; i >= 0; i-- {
		if u.params[i].key == key {
			return u.params[i].value, true
		}
	}
	return "", false
}

// passwords returns every secret the URL carries, decoded and as written,
// to scrub from error texts.
func (u urlParts) passwords() []string {
	var pw []string
	add := func(raw, dec string) {
		for _, s := range []string{raw, dec, url.QueryEscape(dec), url.PathEscape(dec)} {
			if s != "" && !slices.Contains(pw, s) {
				pw = append(pw, s)
			}
		}
	}
	if _, p, ok := strings.Cut(u.userinfo, ":"); ok && p != "" {
		d, _ := decode(p)
		add(p, d)
	}
	for _, p := range u.params {
		if secretParam(p.key) {
			add(p.rawValue, p.value)
		}
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
	if len(u.params) > 0 {
		b.WriteByte('?')
		for i, p := range u.params {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(p.rawKey + "=" + p.rawValue)
		}
	}
	return b.String()
}

// Redact returns the URL fit to print: a password, in the user part or in
// a parameter that may carry a secret (password, sslpassword...), is
// replaced by "xxxxx". A URL too broken to tell where its password is comes
// back as a fixed string rather than risk showing it.
func Redact(raw string) string {
	u, err := cut(raw)
	if err != nil {
		if errors.Is(err, errNotURL) && !strings.Contains(raw, "@") && !strings.Contains(strings.ToLower(raw), "pass") {
			return raw
		}
		return unparsable
	}
	if user, p, ok := strings.Cut(u.userinfo, ":"); ok && p != "" {
		u.userinfo = user + ":" + redacted
	}
	for i, p := range u.params {
		if secretParam(p.key) {
			u.params[i].rawValue = redacted
		}
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
	if s, ok := u.get("schema"); ok {
		if !schemaName.MatchString(s) || strings.HasPrefix(s, "pg_") {
			return l, fmt.Errorf("%w: schema %q is not a valid name: use lower-case letters, digits and _, at most 63, not starting with pg_", kv.ErrBadLocation, s)
		}
		l.schema = s
		u.params = deleteParam(u.params, "schema")
	}
	l.conn = u.String()
	return l, nil
}

func deleteParam(ps []param, key string) []param {
	var out []param
	for _, p := range ps {
		if p.key != key {
			out = append(out, p)
		}
	}
	return out
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
	msg := e.scrub(fmt.Sprintf("store %s: %s: %v", e.Location, e.Op, e.Err))
	// Scrubbed again once on one line: a secret holding white space may
	// only match then.
	return e.scrub(strings.Join(strings.Fields(msg), " "))
}

func (e *Error) scrub(msg string) string {
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }
