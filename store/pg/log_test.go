package pg_test

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

// TestValuesStayOutOfStatementText: on a server that logs every statement
// (log_statement=all) but not their parameters (log_parameter_max_length=0,
// as docs/team-store.md advises), a secret value written to and read from
// the store reaches the log in no form: values travel as bind parameters,
// never spliced into a statement's text, in every query mode the URL may
// choose; the one mode that would splice them is refused. With the
// server's default log_parameter_max_length the secret is logged, as the
// docs say.
func TestValuesStayOutOfStatementText(t *testing.T) {
	srv, err := pgtest.StartServer()
	if err != nil {
		pgtest.SkipOrFail(t, err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	db, err := srv.NewDatabase("logged")
	if err != nil {
		t.Fatal(err)
	}
	exec1(t, db, "ALTER DATABASE logged SET log_statement = 'all'")
	exec1(t, db, "ALTER DATABASE logged SET log_parameter_max_length = 0")
	logFile := filepath.Join(srv.Dir, "log")

	use := func(u, secret string) {
		t.Helper()
		s := open(t, u, opts())
		if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "k-"+secret[:6], []byte("password="+secret)) }); err != nil {
			t.Fatal(err)
		}
		if err := s.View(func(tx kv.Tx) error {
			v, err := tx.Get("one", "k-"+secret[:6])
			if !strings.Contains(string(v), secret) {
				t.Errorf("read back %q %v", v, err)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	// logged waits until the log holds want (the server writes it a
	// moment after it runs the statement) and returns the log.
	logged := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), want) {
				return string(b)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server log has no %q after 30s", want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	forms := func(secret string) []string {
		return []string{secret, hex.EncodeToString([]byte(secret)), hex.EncodeToString([]byte("password=" + secret))[:24]}
	}

	for i, mode := range []string{"", "cache_statement", "cache_describe", "describe_exec", "exec"} {
		secret := "S3CRET" + strings.Repeat("x", i) + "-value"
		u := db + "&schema=s" + strings.ReplaceAll(mode, "_", "")
		if mode != "" {
			u += "&default_query_exec_mode=" + mode
		}
		use(u, secret)
		// The statements of this store are in the log...
		log := logged(`INSERT INTO "s` + strings.ReplaceAll(mode, "_", "") + `".kv`)
		// ...its secret is not.
		for _, f := range forms(secret) {
			if strings.Contains(log, f) {
				t.Errorf("mode %q: the server log holds %q", mode, f)
			}
		}
	}

	simple := db + "&schema=simple&default_query_exec_mode=simple_protocol"
	s, err := pg.Open(simple, opts())
	if !errors.Is(err, kv.ErrBadLocation) || !strings.Contains(err.Error(), "bind parameters") {
		t.Errorf("a URL asking for the simple protocol: %v, want refused", err)
	}
	if err == nil {
		// What refusing it prevents: the value in the statement's text.
		s.Close()
		secret := "S3CRET-simple-value"
		use(simple, secret)
		if log := logged(`INSERT INTO "simple".kv`); strings.Contains(log, hex.EncodeToString([]byte("password="+secret))) {
			t.Errorf("the simple protocol spliced the secret into a logged statement")
		}
	}

	// What the docs warn of: bind parameters are logged when the server
	// logs statements with their parameters, as it does by default.
	exec1(t, db, "ALTER DATABASE logged RESET log_parameter_max_length")
	secret := "S3CRET-logged-value"
	use(db+"&schema=withparams", secret)
	logged(hex.EncodeToString([]byte("password=" + secret)))
}
