package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/solarops/solar/store"
)

// IO holds a command's streams. Data goes to Out, progress and diagnostics
// to Err.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrTTY is true when Err is a terminal (live progress lines).
	ErrTTY bool
	// OutTTY is true when Out is a terminal (colour in tables).
	OutTTY bool
	// InTTY is true when In is a terminal that a command may ask on.
	InTTY bool
}

// App is the environment a command runs in. Tests build one with buffers.
type App struct {
	IO     IO
	Getenv func(string) string
	// DBFlag is the value of the global --db flag.
	DBFlag string
	// LockWait bounds the wait for another solar process.
	LockWait time.Duration
	Now      func() time.Time
	// warned is set once a command said that the store lacks some bases.
	warned bool
}

// New returns an App on the process's real streams and environment.
func New(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *App {
	a := &App{IO: IO{In: stdin, Out: stdout, Err: stderr}, Getenv: getenv, Now: time.Now}
	if f, ok := stderr.(*os.File); ok {
		a.IO.ErrTTY = isTerminal(f)
	}
	if f, ok := stdout.(*os.File); ok {
		a.IO.OutTTY = isTerminal(f)
	}
	if f, ok := stdin.(*os.File); ok {
		a.IO.InTTY = isTerminal(f)
	}
	return a
}

// isTerminal asks the terminal driver: a character device such as
// /dev/null is not a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Color reports whether stderr may use colour: a terminal, NO_COLOR unset.
func (a *App) Color() bool {
	return a.Getenv("NO_COLOR") == "" && a.IO.ErrTTY
}

// ColorOut reports whether stdout may use colour.
func (a *App) ColorOut() bool {
	return a.Getenv("NO_COLOR") == "" && a.IO.OutTTY
}

// Paint colours a task status for a terminal when on: ERROR red, SUCCESS
// green, INPROGRESS yellow, SKIPPED dim; others, and everything when off,
// as they are.
func Paint(status string, on bool) string {
	if !on {
		return status
	}
	code := ""
	switch status {
	case "ERROR", "check failed":
		code = "31"
	case "SUCCESS", "would change":
		code = "32"
	case "INPROGRESS":
		code = "33"
	case "SKIPPED", "would not run":
		code = "2"
	}
	if code == "" {
		return status
	}
	return "\033[" + code + "m" + status + "\033[0m"
}

// StorePath resolves where the store lives.
func (a *App) StorePath() (string, error) {
	return store.Path(a.DBFlag, a.Getenv)
}

// Open opens the store for writing. The caller closes it. Only the default
// location's directories are created: a path given with --db or $SOLAR_DB
// whose directory does not exist is most likely a typo.
func (a *App) Open() (*store.DB, error) {
	return a.open(false)
}

func (a *App) open(readOnly bool) (*store.DB, error) {
	p, err := a.StorePath()
	if err != nil {
		return nil, err
	}
	return a.OpenAt(p, readOnly, a.DBFlag != "" || a.Getenv("SOLAR_DB") != "")
}

// OpenAt opens the store at location (a bbolt path or a postgres:// URL).
// A read-only open never creates a store; given means the location came
// from the user, so a missing directory is their typo, not ours to create.
func (a *App) OpenAt(p string, readOnly, given bool) (*store.DB, error) {
	wait, err := a.lockWait()
	if err != nil {
		return nil, err
	}
	// A mistyped URL is refused before it could be taken for a path and
	// printed whole.
	if err := store.CheckLocation(p); err != nil {
		return nil, err
	}
	if !readOnly && given && !store.IsURL(p) {
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			return nil, Usagef("store directory %s does not exist (from --db or $SOLAR_DB); create it or fix the path", filepath.Dir(p))
		}
	}
	db, err := store.Open(p, store.Options{LockWait: wait, ReadOnly: readOnly})
	if errors.Is(err, store.ErrNoStore) {
		return nil, Usagef("no store at %s: nothing has been created there yet (check --db or $SOLAR_DB)", store.Redact(p))
	}
	if err == nil {
		a.noteStore(db, p)
		a.warnMissingBases(db)
	}
	return db, err
}

// noteStore tells the user, on stderr, what opening the store did that
// they may not expect: it made a new store (a mistyped path or ?schema=
// would otherwise look like a store that lost everything), or it found a
// store file others can read that is not theirs to make private.
func (a *App) noteStore(db *store.DB, location string) {
	if db.Created() {
		fmt.Fprintf(a.IO.Err, "created a new store at %s\n", Escape(store.Redact(location)))
	}
	if m := db.Exposed(); m != 0 {
		fmt.Fprintf(a.IO.Err, "solar: warning: store %s has mode %04o: others can read its secrets and it is not yours to tighten; ask its owner to run chmod 600 on it\n", Escape(store.Redact(location)), m)
	}
}

// lockWait is how long to wait for another solar process: LockWait, else
// $SOLAR_LOCK_WAIT, else the store's default.
func (a *App) lockWait() (time.Duration, error) {
	if a.LockWait != 0 {
		return a.LockWait, nil
	}
	v := a.Getenv("SOLAR_LOCK_WAIT")
	if v == "" {
		return store.DefaultLockWait, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, Usagef("SOLAR_LOCK_WAIT=%q is not a duration such as 5s or 1m", v)
	}
	if d == 0 {
		d = time.Nanosecond // no wait at all: one try
	}
	return d, nil
}

// Update runs fn in one read-write transaction of the store.
func (a *App) Update(fn func(tx *store.Tx) error) error {
	db, err := a.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(fn)
}

// View runs fn in one read-only transaction of the store, under a shared
// lock: readers do not wait for each other. A missing store is an error,
// never created.
func (a *App) View(fn func(tx *store.Tx) error) error {
	db, err := a.open(true)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(fn)
}
