package pg

import (
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://alice:s3cret@db.example:5432/solar?sslmode=require", "postgres://alice:xxxxx@db.example:5432/solar?sslmode=require"},
		{"postgresql://alice@db/solar", "postgresql://alice@db/solar"},
		{"postgres://alice:p%40ss@h1:5432,h2:5432/solar", "postgres://alice:xxxxx@h1:5432,h2:5432/solar"},
		{"postgres://db/solar?user=alice&password=s3cret&schema=team_a", "postgres://db/solar?user=alice&password=xxxxx&schema=team_a"},
		{"postgres:///solar?host=/run/postgresql", "postgres:///solar?host=/run/postgresql"},
		{"postgres://alice:s3cret@db/solar?bad=%zz", "(a postgres URL that does not parse)"},
		// pgx and libpq end the user part at the first '@' before any '/':
		// a password may hold '?', '#' and ':' unencoded.
		{"postgres://u:pw?LEAK#x:y@host/solar", "postgres://u:xxxxx@host/solar"},
		// An unencoded '/' leaves a '@' past the user part: pgx would take
		// the password for a host's port. Too broken to show.
		{"postgres://u:pw-LEAK-1/x@host/solar", "(a postgres URL that does not parse)"},
		{"postgres://u:pw/LEAK?x=1@host/solar", "(a postgres URL that does not parse)"},
		{"postgres://host/solar?user=a@LEAK", "(a postgres URL that does not parse)"},
		// Every parameter that may carry a secret, its key percent-encoded
		// or not.
		{"postgres://db/solar?sslpassword=LEAK&sslmode=require", "postgres://db/solar?sslpassword=xxxxx&sslmode=require"},
		{"postgres://db/solar?pass%77ord=LEAK", "postgres://db/solar?pass%77ord=xxxxx"},
		{"postgres://db/solar?password=LEAK&password=LEAK2", "postgres://db/solar?password=xxxxx&password=xxxxx"},
		{"postgres://db/solar?api_token=LEAK", "postgres://db/solar?api_token=xxxxx"},
		{"postgres://db/solar?passfile=/home/me/.pgpass", "postgres://db/solar?passfile=/home/me/.pgpass"},
		{"postgres://db/solar?password", "(a postgres URL that does not parse)"},
		{"postgres://db/solar?password=a=LEAK", "(a postgres URL that does not parse)"},
		{"/var/lib/solar.db", "/var/lib/solar.db"},
		{"alice:s3cret@db", "(a postgres URL that does not parse)"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseLocation(t *testing.T) {
	for _, c := range []struct {
		in, conn, schema, err string
	}{
		{"postgres://db/solar", "postgres://db/solar", "solar", ""},
		{"postgres://db/solar?schema=team_a&sslmode=disable", "postgres://db/solar?sslmode=disable", "team_a", ""},
		{"postgres://db/solar?schema=team_a", "postgres://db/solar", "team_a", ""},
		{"postgres://db/solar?schema=Team", "", "", "not a valid name"},
		{"postgres://db/solar?schema=a-b", "", "", "not a valid name"},
		{"postgres://db/solar?schema=pg_catalog", "", "", "not a valid name"},
		{"postgres://db/solar?schema=", "", "", "not a valid name"},
		{"mysql://db/solar", "", "", "not a postgres"},
		{"postgres://db/solar?schema=team_b&schema=team_a", "postgres://db/solar", "team_a", ""},
		{"postgres://u:p?w@db/solar?schema=team_a", "postgres://u:p?w@db/solar", "team_a", ""},
		{"postgres://u:pw/x@db/solar", "", "", "percent-encode a '/' in the password as %2F"},
	} {
		l, err := parseLocation(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseLocation(%q): err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || l.conn != c.conn || l.schema != c.schema {
			t.Errorf("parseLocation(%q) = %q %q %v, want %q %q", c.in, l.conn, l.schema, err, c.conn, c.schema)
		}
	}
}

// TestRedactNeverShowsASecret: whatever the shape of the URL, no secret
// of it (here every one spells LEAK) is shown.
func TestRedactNeverShowsASecret(t *testing.T) {
	for _, u := range []string{
		"postgres://u:LEAK/x@host/solar", "postgres://u:LEAK?x@host/solar", "postgres://u:LEAK#x@host/solar",
		"postgresql://u:LEAK@host/solar?sslpassword=LEAK", "postgres://host/solar?password=LEAK",
		"postgres://host/solar?PASSWORD=LEAK", "postgres://host/solar?x=1&sslpassword=LEAK&y=2",
		"postgres://u:LE%41K@host/solar", "postgres://u:LEAK:more@host/solar", "postgres://u:LEAK@@host/solar",
		"postgres://host/solar?password=%zzLEAK", "postgres://host/solar?password==LEAK",
	} {
		if got := Redact(u); strings.Contains(got, "LEAK") || strings.Contains(got, "LE%41K") {
			t.Errorf("Redact(%q) = %q", u, got)
		}
		if _, err := parseLocation(u); err != nil && strings.Contains(err.Error(), "LEAK") {
			t.Errorf("parseLocation(%q): %v", u, err)
		}
	}
}

func TestErrorHidesThePassword(t *testing.T) {
	l, _ := parseLocation("postgres://alice:p%40ss@db/solar?password=other&sslpassword=key%20pass")
	e := &Error{Location: l.display, Op: "connect", Err: errors.New("server said\n  p@ss and p%40ss and other, key  pass and key%20pass"), secrets: l.secrets}
	msg := e.Error()
	for _, pw := range []string{"p@ss", "p%40ss", "other", "key pass", "key  pass", "key%20pass"} {
		if strings.Contains(msg, pw) {
			t.Errorf("%q shows password %q", msg, pw)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%q is not one line", msg)
	}
}
