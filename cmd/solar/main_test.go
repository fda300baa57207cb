package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/solarops/solar/cmd"
)

// TestMain lets the test binary act as the real solar binary inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"solar": func() { os.Exit(cmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) },
	})
}

// TestScripts runs every testdata/script/*.txtar end to end against the real
// binary and a fresh store in the script's work directory.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("SOLAR_DB", filepath.Join(e.WorkDir, "solar.db"))
			e.Setenv("RES", filepath.Join(repo, "testdata", "resources"))
			e.Setenv("EXAMPLES", filepath.Join(repo, "testdata", "examples"))
			e.Setenv("SOLAR_LOCK_WAIT", "2s")
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exit N PROG ARGS...: run PROG and require exit status N.
			"exit": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: exit N program [args...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exit: bad status %q", args[0])
				}
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("exit: %v", err)
				}
				if (got == want) == neg {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
		},
		RequireExplicitExec: true,
	})
}
