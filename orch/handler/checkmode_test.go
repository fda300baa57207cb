package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkBase is a bundled shell base whose run and update support check mode,
// with inputs for a first run and a way to change them so that a run would
// change something again.
type checkBase struct {
	base      string
	inputs    func(dir string) map[string]any
	sensitive map[string]bool
	// change returns inputs after a real run for which a run would change
	// something again.
	change func(in map[string]any) map[string]any
	// drift, if set, changes the disk after a real run in a way a run
	// would repair (a mode, a missing directory).
	drift func(t *testing.T, work string)
}

// checkBases lists every bundled base with check support;
// TestCheckModeBasesListed keeps it in step with the meta.yaml files.
var checkBases = []checkBase{
	{
		base: "file",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "path": "sub/f.txt", "content": "s3cret\n\n", "mode": "0640"}
		},
		sensitive: map[string]bool{"content": true},
		change:    with("content", "s3cret\n"),
		drift:     chmodDrift("../sub/f.txt"),
	},
	{
		base: "mariadb",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "ip": "127.0.0.1", "port": int64(3306), "root_password": "r00t"}
		},
		sensitive: map[string]bool{"root_password": true},
		change:    with("port", int64(3307)),
		drift: func(t *testing.T, work string) {
			if err := os.Remove(filepath.Join(work, "data")); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		base: "keystone",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "port": int64(5000), "admin_port": int64(35357),
				"db_host": "127.0.0.1", "db_port": int64(3306), "db_password": "pw"}
		},
		sensitive: map[string]bool{"db_password": true},
		change:    with("db_password", "pw2"),
		drift:     chmodDrift("keystone.conf"),
	},
	{
		base: "glance",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "port": int64(9292), "keystone_url": "http://127.0.0.1:5000/v3",
				"db_host": "127.0.0.1", "db_port": int64(3306)}
		},
		change: with("port", int64(9293)),
		drift:  chmodDrift("glance-api.conf"),
	},
	{
		base: "haproxy",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "backends": []any{"ks:127.0.0.1:5000"}, "ports": []any{int64(5000)}}
		},
		change: with("backends", []any{"ks:127.0.0.1:5000", "ks2:127.0.0.2:5000"}),
		drift:  chmodDrift("haproxy.cfg"),
	},
	{
		base: "rabbitmq",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "port": int64(5672), "cluster_name": "rabbit", "erlang_cookie": "c00kie", "join_to": ""}
		},
		sensitive: map[string]bool{"erlang_cookie": true},
		change:    with("erlang_cookie", "c00kie2"),
		drift:     chmodDrift(".erlang.cookie"),
	},
	{
		base: "password",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "length": int64(24), "password": ""}
		},
		sensitive: map[string]bool{"password": true},
		// Emptying the password asks for a new one.
		change: with("password", ""),
	},
	{
		base: "fail",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "fail_times": int64(0), "marker": "m", "seconds": int64(5)}
		},
		change: with("marker", "n"),
		drift:  chmodDrift("marker"),
	},
	{
		base: "pkglist",
		inputs: func(dir string) map[string]any {
			return map[string]any{"dir": dir, "name": "p1", "fail": false}
		},
		change: with("name", "p2"),
		// The package list is the dir's, beside the resource's directory:
		// someone uninstalled everything by hand.
		drift: func(t *testing.T, work string) {
			if err := os.WriteFile(filepath.Join(work, "..", "installed"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	},
}

// with returns a change that sets one input.
func with(name string, v any) func(map[string]any) map[string]any {
	return func(in map[string]any) map[string]any {
		out := make(map[string]any, len(in))
		for k, x := range in {
			out[k] = x
		}
		out[name] = v
		return out
	}
}

// chmodDrift returns a drift that gives a file under the resource's
// directory a mode no base wants.
func chmodDrift(rel string) func(*testing.T, string) {
	return func(t *testing.T, work string) {
		if err := os.Chmod(filepath.Join(work, rel), 0o604); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes every entry under root, root included: path, type,
// mode, modification time and, for a file, its content. A directory's time
// changes when an entry is made or removed in it, even a temporary one.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		desc := fmt.Sprintf("%v %d", info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %q", b)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runner runs one bundled base's actions against one dir.
type runner struct {
	t   *testing.T
	sh  *Shell
	cb  checkBase
	dir string
	n   int // attempts so far, for task names
}

func (r *runner) request(action string, inputs map[string]any, check bool) Request {
	r.n++
	return Request{Resource: "r", Action: action, Task: fmt.Sprintf("r.%s#%d", action, r.n),
		BaseDir: base(r.t, r.cb.base), Script: "actions/" + action + ".sh",
		Inputs: inputs, Sensitive: r.cb.sensitive, Check: check}
}

// run runs action for real and returns what it reported.
func (r *runner) run(action string, inputs map[string]any) Result {
	r.t.Helper()
	res, err := r.sh.Run(context.Background(), r.request(action, inputs, false))
	if err != nil {
		r.t.Fatalf("%s: %v", action, err)
	}
	return res
}

// check runs action in check mode, asserts that it reported want and
// changed nothing under dir, nor put outputs in the result.
func (r *runner) check(action string, inputs map[string]any, want bool) {
	r.t.Helper()
	before := snapshot(r.t, r.dir)
	res, err := r.sh.Run(context.Background(), r.request(action, inputs, true))
	if err != nil {
		r.t.Fatalf("check %s: %v", action, err)
	}
	if res.Changed != want {
		r.t.Errorf("check %s: Changed = %v, want %v", action, res.Changed, want)
	}
	if len(res.Outputs) != 0 {
		r.t.Errorf("check %s: Outputs = %v, want none: a check stores nothing", action, res.Outputs)
	}
	if diff := cmp.Diff(before, snapshot(r.t, r.dir)); diff != "" {
		r.t.Errorf("check %s changed the disk (-before +after):\n%s", action, diff)
	}
}

// TestCheckMode runs run and update of every bundled base with check
// support in check mode around real runs: a check predicts what the next
// real run reports, and never changes a byte, a mode or a time stamp.
func TestCheckMode(t *testing.T) {
	sh := newShell(t)
	for _, cb := range checkBases {
		for _, action := range []string{"run", "update"} {
			t.Run(cb.base+"/"+action, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				r := &runner{t: t, sh: sh, cb: cb, dir: dir}
				in := cb.inputs(dir)

				// (a) fresh: it would change, and makes not even its directory.
				r.check(action, in, true)
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("check left %d entries in a fresh dir", len(left))
				}

				// (b) the real run changes, (c) after which nothing would.
				res := r.run(action, in)
				if !res.Changed {
					t.Fatalf("real %s on a fresh dir: Changed = false", action)
				}
				if pw, ok := res.Outputs["password"]; ok {
					in = with("password", pw)(in) // as the store would
				}
				log := readFile(t, filepath.Join(dir, "r", "actions.log"))
				r.check(action, in, false)
				if again := r.run(action, in); again.Changed {
					t.Errorf("real %s after the check: Changed = true; the check predicted false", action)
				}

				// (d) a changed input: it would change again.
				r.check(action, cb.change(in), true)

				if cb.drift != nil {
					cb.drift(t, filepath.Join(dir, "r"))
					r.check(action, in, true)
					if again := r.run(action, in); !again.Changed {
						t.Errorf("real %s after drift: Changed = false; the check predicted true", action)
					}
					r.check(action, in, false)
				}

				// Checks are not actions: actions.log has only the real runs.
				got := readFile(t, filepath.Join(dir, "r", "actions.log"))
				if n := strings.Count(got, "\n") - strings.Count(log, "\n"); n != 1+btoi(cb.drift != nil) {
					t.Errorf("actions.log grew by %d lines after the first run, want one a real run:\n%s", n, got)
				}
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCheckModeFailure covers the failure paths: a check that fails (bad
// input, or fail_times) writes nothing either, not even the "failed" line
// of actions.log, and a fail check counts no attempt.
func TestCheckModeFailure(t *testing.T) {
	sh := newShell(t)
	t.Run("bad input", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := &runner{t: t, sh: sh, cb: checkBases[slices.IndexFunc(checkBases, func(c checkBase) bool { return c.base == "glance" })], dir: dir}
		in := r.cb.inputs(dir)
		r.run("run", in)
		before := snapshot(t, dir)
		_, err := sh.Run(context.Background(), r.request("run", with("port", int64(0))(in), true))
		if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "input port must be a port number (1-65535), got '0'") {
			t.Errorf("check with port 0: err = %v, want the input named", err)
		}
		if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
			t.Errorf("failed check changed the disk (-before +after):\n%s", diff)
		}
	})
	t.Run("fail_times", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := &runner{t: t, sh: sh, cb: checkBases[slices.IndexFunc(checkBases, func(c checkBase) bool { return c.base == "fail" })], dir: dir}
		in := with("fail_times", int64(1))(r.cb.inputs(dir))
		for range 2 { // the same each time: nothing is counted
			_, err := sh.Run(context.Background(), r.request("run", in, true))
			if !errors.Is(err, ErrFailed) || err.Error() != "exit status 1: r run: failing as asked (check of attempt 1)" {
				t.Fatalf("check: err = %v", err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("failed check left %d entries in a fresh dir", len(left))
			}
		}
		if _, err := sh.Run(context.Background(), r.request("run", in, false)); err == nil {
			t.Fatal("first real attempt succeeded; want it to fail as asked")
		}
		// The next real attempt succeeds, so the check does too.
		r.check("run", in, true)
		r.run("run", in)
		r.check("run", in, false)
	})
}

// TestCheckModeRemove runs remove in check mode, which no base lists
// under check: yet solar_wipe honours SOLAR_CHECK, and so do the
// removes built on it, so listing them later is safe.
func TestCheckModeRemove(t *testing.T) {
	sh := newShell(t)
	for _, cb := range checkBases {
		t.Run(cb.base, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := &runner{t: t, sh: sh, cb: cb, dir: dir}
			in := cb.inputs(dir)
			r.check("remove", in, false)
			r.run("run", in)
			if cb.base == "password" {
				// password writes nothing but its log: nothing to remove.
				r.check("remove", in, false)
				return
			}
			r.check("remove", in, true)
			r.run("remove", in)
			r.check("remove", in, false)
		})
	}
}
