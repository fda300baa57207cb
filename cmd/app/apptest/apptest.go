// Package apptest is what the tests of solar's commands share: an app.App
// on buffers with a store of its own, and the execution of one command
// line up to the options it parses into (cli/cli's runF seam).
package apptest

import (
	"bytes"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// Env is an App whose streams are buffers and whose store (bbolt, in a
// temp dir, created empty) is its own.
type Env struct {
	App      *app.App
	In       *bytes.Buffer
	Out, Err *bytes.Buffer
	// DB is the store's path, as --db gives it.
	DB string
}

// Now is the clock of every Env's App: tests compare what commands print.
var Now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// New returns an Env with an empty store. Its App sees no environment
// variable: no $SOLAR_DB, no colour, no terminal.
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, DB: filepath.Join(t.TempDir(), "solar.db")}
	e.App = &app.App{IO: app.IO{In: e.In, Out: e.Out, Err: e.Err}, Getenv: func(string) string { return "" },
		DBFlag: e.DB, LockWait: time.Second, Now: func() time.Time { return Now }}
	db, err := e.App.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return e
}

// Reset empties the buffers, between two commands of one test.
func (e *Env) Reset() {
	e.In.Reset()
	e.Out.Reset()
	e.Err.Reset()
}

// Execute runs c (a command built with a runF that records its options)
// on args, as the root command would, and returns RunE's error. Nothing is
// printed: a wrong flag is the returned error.
func Execute(c *cobra.Command, args ...string) error {
	c.SetArgs(args)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceUsage, c.SilenceErrors = true, true
	return c.Execute()
}

// Parser returns a function that runs a command built by newCmd on a
// command line and returns the options its runF got, as a value (nil when
// RunE failed before calling runF), with RunE's error.
func Parser[O any](newCmd func(*app.App, func(*O) error) *cobra.Command) func(args ...string) (any, error) {
	return func(args ...string) (any, error) {
		var got any
		c := newCmd(&app.App{}, func(o *O) error {
			got = *o
			return nil
		})
		err := Execute(c, args...)
		return got, err
	}
}

// Diff compares options as Parser returns them with want, ignoring the
// App they carry and their funcs (which cannot be compared); "" when
// equal.
func Diff(want, got any) string {
	return cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool {
		sf, ok := p.Last().(cmp.StructField)
		return ok && (sf.Name() == "App" || sf.Type().Kind() == reflect.Func)
	}, cmp.Ignore()))
}
