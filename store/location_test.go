package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
)

// TestMistypedURLsAreRefused: a location that looks like a URL, or like a
// connection string, but is not one solar accepts is refused as a bad
// location, never taken for a bbolt path; neither the error nor Redact
// shows its secret (every one here spells LEAK), and nothing is created.
func TestMistypedURLsAreRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct{ loc, want string }{
		{"POSTGRES://u:LEAK@host/solar", "must be lower case"},
		{"Postgresql://u:LEAK@host/solar", "must be lower case"},
		{" postgres://u:LEAK@host/solar", "starts with white space"},
		{"\tpostgresql://u:LEAK@host/solar", "starts with white space"},
		{"postgress://u:LEAK@host/solar", "mistyped postgres URL"},
		{"postgresql:/u:LEAK@host/solar", "mistyped postgres URL"},
		{"postgres:u:LEAK@host/solar", "mistyped postgres URL"},
		{"postgre://u:LEAK@host/solar", "mistyped postgres URL"},
		{"posgres://u:LEAK@host/solar", "mistyped postgres URL"},
		{"pg://u:LEAK@host/solar", "mistyped postgres URL"},
		{"psql://u:LEAK@host/solar", "mistyped postgres URL"},
		{"postgres//u:LEAK@host/solar", "missing its ':'"},
		{"mysql://u:LEAK@host/solar", "looks like a URL"},
		{"http:\\\\u:LEAK@host", "looks like a URL"},
		{"u:LEAK@host/solar", "without its scheme"},
		{"host=db password=LEAK", "key=value connection string"},
		{"dbname=solar sslpassword=LEAK", "key=value connection string"},
	} {
		err := store.CheckLocation(c.loc)
		if !errors.Is(err, store.ErrBadLocation) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "LEAK") {
			t.Errorf("CheckLocation(%q) = %v, want a bad location, %q, no LEAK", c.loc, err, c.want)
		}
		_, err = store.Open(c.loc, store.Options{})
		if !errors.Is(err, store.ErrBadLocation) || strings.Contains(err.Error(), "LEAK") {
			t.Errorf("Open(%q) = %v, want a bad location without LEAK", c.loc, err)
		}
		if _, err := store.OpenLocks(c.loc, store.LockOptions{}); !errors.Is(err, store.ErrBadLocation) {
			t.Errorf("OpenLocks(%q) = %v, want a bad location", c.loc, err)
		}
		if r := store.Redact(c.loc); strings.Contains(r, "LEAK") {
			t.Errorf("Redact(%q) = %q", c.loc, r)
		}
	}
	if left, _ := filepath.Glob("*"); len(left) > 0 {
		t.Errorf("refused locations created %q", left)
	}
}

// TestMalformedURLsShowNoPassword: a postgres URL whose password holds an
// unencoded '/' (pgx would read it as a host and port), or whose query
// carries a secret, is refused or opened without ever showing it.
func TestMalformedURLsShowNoPassword(t *testing.T) {
	for _, loc := range []string{
		"postgres://u:pw-LEAK-1/x@host/solar",
		"postgresql://u:LEAK/x?y=1@host/solar",
		"postgres://host/solar?user=me@LEAK",
		"postgres://host/solar?password",
		"postgres://host/solar?password=%zLEAK",
	} {
		_, err := store.Open(loc, store.Options{})
		if !errors.Is(err, store.ErrBadLocation) || strings.Contains(err.Error(), "LEAK") {
			t.Errorf("Open(%q) = %v, want a bad location without LEAK", loc, err)
		}
		if r := store.Redact(loc); strings.Contains(r, "LEAK") {
			t.Errorf("Redact(%q) = %q", loc, r)
		}
	}
	if r := store.Redact("postgres://u@h/solar?sslpassword=LEAK&password=LEAK"); strings.Contains(r, "LEAK") {
		t.Errorf("Redact = %q", r)
	}
}

// TestFilePathsStayFiles: names that merely resemble a URL are still bbolt
// files, and ./ or / makes any name one.
func TestFilePathsStayFiles(t *testing.T) {
	for _, loc := range []string{
		"solar.db", "postgres.db", "postgres/solar.db", "backup-2026-01-01.db", "a b.db", "team:a.db",
		"./postgres://x", "/var/lib/solar/solar.db", "./u:pw@host", "./host=db",
	} {
		if err := store.CheckLocation(loc); err != nil {
			t.Errorf("CheckLocation(%q) = %v, want a file path", loc, err)
		}
		if r := store.Redact(loc); r != loc {
			t.Errorf("Redact(%q) = %q", loc, r)
		}
	}
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "postgres.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(filepath.Join(dir, "postgres.db")); err != nil {
		t.Error(err)
	}
}
