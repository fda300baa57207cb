package main

import (
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/solarops/solar/internal/pgtest"
)

// TestScriptsPostgresFaults runs testdata/pgfault/*.txtar, scripts that
// crash or reconfigure the PostgreSQL server under a run: each has a server
// of its own ($SOLAR_DB a database on it), which it drives with
//
//	pgcrash           stop the server as a crash does (pg_ctl stop -m immediate)
//	pgstart           start it again
//	pgset NAME VALUE  change a server setting (ALTER SYSTEM) and reload
func TestScriptsPostgresFaults(t *testing.T) {
	t.Parallel()
	probe, err := pgtest.StartServer()
	if err != nil {
		pgtest.SkipOrFail(t, err)
	}
	_ = probe.Stop()
	var servers sync.Map // work dir -> *pgtest.Server
	p := scriptParams(t, "postgres", func(e *testscript.Env) error {
		srv, err := pgtest.StartServer()
		if err != nil {
			return err
		}
		e.Defer(func() { _ = srv.Stop() })
		servers.Store(e.WorkDir, srv)
		u, err := srv.NewDatabase("solar")
		if err != nil {
			return err
		}
		e.Setenv("SOLAR_DB", u)
		return nil
	})
	p.Dir = "testdata/pgfault"
	server := func(ts *testscript.TestScript) *pgtest.Server {
		srv, ok := servers.Load(ts.Getenv("WORK"))
		if !ok {
			ts.Fatalf("no server for this script")
		}
		return srv.(*pgtest.Server)
	}
	p.Cmds["pgcrash"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: pgcrash")
		}
		ts.Check(server(ts).Crash())
	}
	p.Cmds["pgstart"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: pgstart")
		}
		ts.Check(server(ts).Start())
	}
	p.Cmds["pgset"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: pgset NAME VALUE")
		}
		ts.Check(server(ts).Set(args[0], args[1]))
	}
	testscript.Run(t, p)
}
