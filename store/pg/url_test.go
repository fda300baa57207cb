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
		{"postgres://db/solar?user=alice&password=s3cret&schema=team_a", "postgres://db/solar?password=xxxxx&schema=team_a&user=alice"},
		{"postgres:///solar?host=/run/postgresql", "postgres:///solar?host=/run/postgresql"},
		{"postgres://alice:s3cret@db/solar?bad=%zz", "(a postgres URL that does not parse)"},
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

func TestErrorHidesThePassword(t *testing.T) {
	l, _ := parseLocation("postgres://alice:p%40ss@db/solar?password=other")
	e := &Error{Location: l.display, Op: "connect", Err: errors.New("server said\n  p@ss and p%40ss and other"), secrets: l.secrets}
	msg := e.Error()
	for _, pw := range []string{"p@ss", "p%40ss", "other"} {
		if strings.Contains(msg, pw) {
			t.Errorf("%q shows password %q", msg, pw)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%q is not one line", msg)
	}
}
