package apptest

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// Env is an App whose streams are buffers and whose store (bbolt, in a
// temp dir, created empty) is its own.
type Env struct {
	App      *app.App
	In       *bytes.Buffer
	Out, Err *bytes.Buffer
	// DB is the store's path, as --db gives it.
	DB string
	// Replace, when set, rewrites what a Step printed before it is compared
	// (a temp dir or the repository's path into a fixed word).
	Replace func(string) string
}

// Now is the clock of every Env's App: tests compare what commands print.
var Now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// getenv is the environment of every test App: empty but for the actor,
// Actor, so that what commands record and show of it is known.
func getenv(k string) string {
	if k == "SOLAR_ACTOR" {
		return Actor
	}
	return ""
}

// Actor is who the commands of a test App act as ($SOLAR_ACTOR).
const Actor = "tester@test"

// New returns an Env with an empty store. Its App sees no environment
// variable but $SOLAR_ACTOR (Actor): no $SOLAR_DB, no colour, no terminal.
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, DB: filepath.Join(t.TempDir(), "solar.db")}
	e.App = &app.App{IO: app.IO{In: e.In, Out: e.Out, Err: e.Err}, Getenv: getenv,
		DBFlag: e.DB, LockWait: time.Second, Now: func() time.Time { return Now }}
	db, err := e.App.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Making the store said so; a test compares what its commands print.
	e.Reset()
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

// Step is one command of a session of commands on one Env: its run
// function called with the Env's App, what it must print on stdout and
// stderr (after Env.Replace), and the error it must return (errors.Is;
// nil for none).
type Step struct {
	Name     string
	Run      func() error
	Out, Err string
	WantErr  error
}

// Steps runs steps in order, emptying the buffers between them. They are
// not subtests: each depends on those before it, so none may be run alone.
func (e *Env) Steps(t *testing.T, steps []Step) {
	t.Helper()
	for _, s := range steps {
		e.Reset()
		err := s.Run()
		if !errors.Is(err, s.WantErr) { // errors.Is(err, nil) holds for nil only
			t.Errorf("%s: error %v, want %v", s.Name, err, s.WantErr)
		}
		out, errOut := e.Out.String(), e.Err.String()
		if e.Replace != nil {
			out, errOut = e.Replace(out), e.Replace(errOut)
		}
		if out != s.Out {
			t.Errorf("%s: stdout:\n%s\nwant:\n%s", s.Name, out, s.Out)
		}
		if errOut != s.Err {
			t.Errorf("%s: stderr:\n%s\nwant:\n%s", s.Name, errOut, s.Err)
		}
	}
}

// Resources is the absolute path of the repository's testdata/resources,
// the bases the end-to-end tests use too.
func Resources(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("apptest: cannot locate its own source")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "resources")
}

// Create makes resource name from the base in dir with values ("k=v") and
// stages its creation, as "solar resource create" does.
func (e *Env) Create(t testing.TB, name, dir string, values ...string) {
	t.Helper()
	vals, err := resources.ParseValues(values)
	if err != nil {
		t.Fatal(err)
	}
	base, err := resources.LoadBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = e.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if _, err := cat.Create(resources.CreateSpec{Name: name, Base: base, Values: vals}, false); err != nil {
			return err
		}
		_, err := staging.New(cat, e.App.Now).By(e.App.Actor()).Touch("create", name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ParseCase is one command line of a command and the options its runF
// must get (as a value, see Parser); a nil Want means the command refuses
// the line itself as a usage error (exit 2) without calling runF. It is
// an alias of an unnamed struct so that tables of cases may be written
// without field names, as tables of a package's own struct are.
type ParseCase = struct {
	Name  string
	Parse func(...string) (any, error)
	Args  []string
	Want  any
}

// CheckParse runs each case as a subtest.
func CheckParse(t *testing.T, cases []ParseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := tc.Parse(tc.Args...)
			if tc.Want == nil {
				if app.ExitCode(err) != app.ExitInvalid || got != nil {
					t.Fatalf("parse %q = %+v, %v; want a usage error", tc.Args, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := Diff(tc.Want, got); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
		})
	}
}
