package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/solarops/solar/cmd"
	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
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
	t.Parallel()
	testscript.Run(t, scriptParams(t, "bbolt", func(e *testscript.Env) error {
		e.Setenv("SOLAR_DB", filepath.Join(e.WorkDir, "solar.db"))
		return nil
	}))
}

// postgresScripts are the scripts that run a second time on a PostgreSQL
// store: the session of SPEC section 0, staging, planning, runs, crashes
// and resumes, control and live edits, locking, and the team store's own.
var postgresScripts = []string{
	"spec_session", "ch_staging", "ch_process", "orch_run", "orch_crash", "orch_control",
	"orch_live_edits", "orch_two_plans", "composition", "connections", "stale_plans", "team_store",
	"remote_resume", "review_stale", "review_pinned",
	"no_dead_ends",
	"orch_exit_stopped", "orch_attempts_life",
	"store_new_notice", "actors",
	"fleet_basic",
	"drift_pg",
	"resource_action",
	"orch_noop",
	"orch_rates_shared", "fleet_rates",
}

// TestScriptsPostgres runs postgresScripts with $SOLAR_DB a fresh database
// of a real PostgreSQL server (internal/pgtest).
func TestScriptsPostgres(t *testing.T) {
	t.Parallel()
	srv, err := pgtest.StartServer()
	if err != nil {
		pgtest.SkipOrFail(t, err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	p := scriptParams(t, "postgres", func(e *testscript.Env) error {
		name := strings.ToLower(strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, filepath.Base(e.WorkDir)))
		u, err := srv.NewDatabase("s_" + name)
		if err != nil {
			return err
		}
		e.Setenv("SOLAR_DB", u)
		e.Setenv("PGSERVER", srv.URL("postgres"))
		return nil
	})
	for _, name := range postgresScripts {
		p.Files = append(p.Files, filepath.Join("testdata", "script", name+".txtar"))
	}
	p.Dir = ""
	testscript.Run(t, p)
}

// scriptParams are the parameters every script run shares; setup names
// the store, of the backend named (the conditions [bbolt] and [postgres]).
func scriptParams(t *testing.T, backend string, setup func(*testscript.Env) error) testscript.Params {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	servers := &sshServers{t: t, byName: map[string]*sshdtest.Server{}}
	return testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("RES", filepath.Join(repo, "testdata", "resources"))
			e.Setenv("EXAMPLES", filepath.Join(repo, "testdata", "examples"))
			e.Setenv("SOLAR_LOCK_WAIT", "2s")
			e.Setenv("NO_COLOR", "1")
			// Each script's own base cache: HOME is /no-home there.
			e.Setenv("SOLAR_CACHE_DIR", filepath.Join(e.WorkDir, ".solar-cache"))
			return setup(e)
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
			"waitfile":   cmdWaitfile,
			"waitstate":  cmdWaitstate,
			"countlines": cmdCountlines,
			"nosecret":   cmdNosecret,
			"nooverlap":  cmdNooverlap,
			"sshd":       servers.start,
			"stopsshd":   servers.stop,
			"sshdlog":    servers.log,
			"damage":     cmdDamage,
			"alive":      cmdAlive,
			"groupgone":  cmdGroupGone,
			"watchdog":   cmdWatchdog,
			"snapstore":  cmdSnapstore,
			"cmpstore":   cmdCmpstore,
			"unpin":      cmdUnpin,
			"starts":     cmdStarts,
			"overlap":    cmdOverlap,
		},
		Condition: func(cond string) (bool, error) {
			if prog, ok := strings.CutPrefix(cond, "need:"); ok {
				// [need:PROG] is [exec:PROG] that CI turns into a failure.
				_, err := exec.LookPath(prog)
				if err != nil && os.Getenv("SOLAR_TEST_REQUIRE_ALL") == "1" {
					return false, fmt.Errorf("%s is required (SOLAR_TEST_REQUIRE_ALL=1): %v", prog, err)
				}
				return err == nil, nil
			}
			if cond == "postgres" || cond == "bbolt" {
				// [postgres]: the store is a PostgreSQL database.
				return cond == backend, nil
			}
			if cond != "sshd" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			_, err := os.Stat("/usr/sbin/sshd")
			ok := err == nil && os.Geteuid() == 0
			if !ok && os.Getenv("SOLAR_TEST_REQUIRE_ALL") == "1" {
				return false, errors.New("sshd and root are required (SOLAR_TEST_REQUIRE_ALL=1): apt-get install openssh-server")
			}
			return ok, nil
		},
		RequireExplicitExec: true,
	}
}

// cmdWaitfile is "waitfile PATH [TIMEOUT]": poll until PATH exists, failing
// after TIMEOUT (default 10s). Scripts use it to act while a background run
// is at a known point, instead of sleeping for a guessed time.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile PATH [TIMEOUT]")
	}
	timeout := 10 * time.Second
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			ts.Fatalf("waitfile: bad timeout %q", args[1])
		}
		timeout = d
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s does not exist after %s", args[0], timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdWaitstate is "waitstate PLAN TASK STATUS": poll the store ($SOLAR_DB)
// until task TASK of plan PLAN ("last" works) has status STATUS, failing
// after 10s. On PostgreSQL a runner records that a task started a moment
// after it starts (docs/team-store.md): scripts wait for the record where
// they depend on it.
func cmdWaitstate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitstate PLAN TASK STATUS")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		db, err := store.Open(ts.Getenv("SOLAR_DB"), store.Options{LockWait: 10 * time.Second})
		if err != nil {
			ts.Fatalf("waitstate: %v", err)
		}
		var got orch.Status
		err = db.View(func(tx *store.Tx) error {
			uid, err := orch.Resolve(tx, args[0])
			if err != nil {
				return err
			}
			rec, err := orch.Load(tx, uid)
			if err != nil {
				return err
			}
			states, err := orch.States(tx, rec)
			got = states[args[1]].Status
			return err
		})
		db.Close()
		if err != nil {
			ts.Fatalf("waitstate: %v", err)
		}
		if string(got) == args[2] {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitstate: %s of plan %s is %s after 10s, want %s", args[1], args[0], got, args[2])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdCountlines is "countlines PATH REGEX MIN [MAX]": the number of lines of
// PATH matching REGEX is between MIN and MAX (MAX defaults to MIN). A
// missing file has no lines. The bases' actions.log files make it a count
// of how often an action ran.
func cmdCountlines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: countlines PATH REGEX MIN [MAX]")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("countlines: %v", err)
	}
	lo, err := strconv.Atoi(args[2])
	if err != nil {
		ts.Fatalf("countlines: bad MIN %q", args[2])
	}
	hi := lo
	if len(args) == 4 {
		if hi, err = strconv.Atoi(args[3]); err != nil {
			ts.Fatalf("countlines: bad MAX %q", args[3])
		}
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		ts.Fatalf("countlines: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && re.MatchString(line) {
			n++
		}
	}
	if n < lo || n > hi {
		ts.Fatalf("countlines: %d lines of %s match %q, want %d to %d", n, args[0], args[1], lo, hi)
	}
}

// cmdNosecret is "nosecret FILE": the content of FILE (a secret that only
// a file on disk should hold, without its final newline) appears neither in
// the last command's stdout nor in its stderr.
func cmdNosecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nosecret FILE")
	}
	secret := strings.TrimSuffix(ts.ReadFile(args[0]), "\n")
	if len(secret) < 4 {
		ts.Fatalf("nosecret: %s holds %d bytes: too short to be a secret worth looking for", args[0], len(secret))
	}
	for _, stream := range []string{"stdout", "stderr"} {
		if strings.Contains(ts.ReadFile(stream), secret) {
			ts.Fatalf("nosecret: the content of %s appears in %s", args[0], stream)
		}
	}
}

// cmdNooverlap is "nooverlap REGEX": in the last stdout, which must be the
// output of "orch report --json", no two tasks whose id matches REGEX ran
// at the same time. "! nooverlap REGEX" asserts that some two did, which
// shows that a limit was what kept them apart.
func cmdNooverlap(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: nooverlap REGEX")
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		ts.Fatalf("nooverlap: %v", err)
	}
	var report struct {
		Tasks []struct {
			ID    string    `json:"id"`
			Start time.Time `json:"start"`
			End   time.Time `json:"end"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &report); err != nil {
		ts.Fatalf("nooverlap: stdout is not a report: %v", err)
	}
	type span struct {
		id         string
		start, end time.Time
	}
	var spans []span
	for _, t := range report.Tasks {
		if !re.MatchString(t.ID) {
			continue
		}
		if t.Start.IsZero() || t.End.IsZero() {
			ts.Fatalf("nooverlap: task %s has no start or end: did it run?", t.ID)
		}
		spans = append(spans, span{t.ID, t.Start, t.End})
	}
	if len(spans) < 2 {
		ts.Fatalf("nooverlap: %d tasks match %q, want at least 2", len(spans), args[0])
	}
	var overlap string
	for i := range spans {
		for j := i + 1; j < len(spans) && overlap == ""; j++ {
			a, b := spans[i], spans[j]
			if a.start.Before(b.end) && b.start.Before(a.end) {
				overlap = a.id + " and " + b.id
			}
		}
	}
	switch {
	case overlap != "" && !neg:
		ts.Fatalf("nooverlap: %s ran at the same time", overlap)
	case overlap == "" && neg:
		ts.Fatalf("nooverlap: no two tasks matching %q ran at the same time", args[0])
	}
}

// sshServers starts real sshd processes for scripts. They are stopped when
// the script ends.
type sshServers struct {
	t      *testing.T
	mu     sync.Mutex
	byName map[string]*sshdtest.Server // by script work dir and name
}

// start is "sshd NAME IP": start an sshd on IP and set NAME_IP, NAME_PORT,
// NAME_USER, NAME_KEY (client key file) and NAME_FP (host key fingerprint),
// NAME upper-cased, and SHARED, a directory the login user may write.
func (s *sshServers) start(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 || (len(args) == 3 && args[2] != "rsa") {
		ts.Fatalf("usage: sshd NAME IP [rsa]")
	}
	opts := sshdtest.Options{IP: args[1]}
	if len(args) == 3 {
		// "rsa": an RSA host key ($NAME_FP) and an ed25519 one, which
		// clients prefer, borrowed from a server started for it.
		ed := sshdtest.Start(s.t, sshdtest.Options{IP: args[1]})
		ed.Stop()
		opts.HostKeyType, opts.Extra = "rsa", "HostKey "+ed.HostKeyFile
	}
	srv := sshdtest.Start(s.t, opts)
	ts.Defer(srv.Stop)
	s.mu.Lock()
	s.byName[ts.Getenv("WORK")+"\x00"+args[0]] = srv
	s.mu.Unlock()
	p := strings.ToUpper(args[0]) + "_"
	ts.Setenv(p+"IP", srv.IP)
	ts.Setenv(p+"PORT", strconv.Itoa(srv.Port))
	ts.Setenv(p+"USER", srv.User)
	ts.Setenv(p+"KEY", srv.ClientKey)
	ts.Setenv(p+"FP", srv.Fingerprint())
	shared := ts.MkAbs("shared")
	if err := os.MkdirAll(shared, 0o777); err != nil {
		ts.Fatalf("sshd: %v", err)
	}
	sshdtest.Reachable(s.t, ts.MkAbs("."))
	if err := os.Chmod(shared, 0o777); err != nil {
		ts.Fatalf("sshd: %v", err)
	}
	ts.Setenv("SHARED", shared)
}

// stop is "stopsshd NAME": the node goes down.
func (s *sshServers) stop(ts *testscript.TestScript, neg bool, args []string) {
	s.named(ts, neg, "stopsshd", args).Stop()
}

// log is "sshdlog NAME": what the node's sshd logged, on stdout.
func (s *sshServers) log(ts *testscript.TestScript, neg bool, args []string) {
	_, _ = io.WriteString(ts.Stdout(), s.named(ts, neg, "sshdlog", args).LogText())
}

// named is the server that command's one argument names in this script.
func (s *sshServers) named(ts *testscript.TestScript, neg bool, command string, args []string) *sshdtest.Server {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: %s NAME", command)
	}
	s.mu.Lock()
	srv := s.byName[ts.Getenv("WORK")+"\x00"+args[0]]
	s.mu.Unlock()
	if srv == nil {
		ts.Fatalf("%s: no server %s", command, args[0])
	}
	return srv
}

// cmdSnapstore is "snapstore NAME": remember the store ($SOLAR_DB) as it is
// now, for cmpstore: a bbolt file byte for byte, a PostgreSQL store as its
// export.
func cmdSnapstore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: snapstore NAME")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), storeImage(ts), 0o600))
}

// cmdCmpstore is "cmpstore NAME": the store is as snapstore NAME saw it.
func cmdCmpstore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: cmpstore NAME")
	}
	before, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if !bytes.Equal(before, storeImage(ts)) {
		ts.Fatalf("cmpstore: the store changed since snapstore %s", args[0])
	}
}

func storeImage(ts *testscript.TestScript) []byte {
	loc := ts.Getenv("SOLAR_DB")
	if !store.IsURL(loc) {
		raw, err := os.ReadFile(loc)
		ts.Check(err)
		return raw
	}
	db, err := store.Open(loc, store.Options{ReadOnly: true})
	ts.Check(err)
	defer db.Close()
	var buf bytes.Buffer
	ts.Check(db.View(func(tx *store.Tx) error { return store.Export(tx, &buf) }))
	return buf.Bytes()
}
