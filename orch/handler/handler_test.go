package handler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testGrace keeps the SIGTERM-to-SIGKILL wait short in tests.
const testGrace = 200 * time.Millisecond

// newShell returns a Shell whose attempts keep their private dirs in a
// test temp dir, and checks at cleanup that every attempt removed its own.
func newShell(t *testing.T) *Shell {
	t.Helper()
	tmp := t.TempDir()
	local := &Local{}
	t.Cleanup(func() {
		local.Settle()
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			t.Errorf("attempt left %s behind in its temp dir", e.Name())
		}
	})
	return &Shell{Transport: local, TempDir: tmp, KillGrace: testGrace}
}

// settle settles the Local sh runs its attempts on: its own, or the one
// shared by handlers given none.
func settle(sh *Shell) {
	if l, ok := sh.Transport.(*Local); ok {
		l.Settle()
		return
	}
	defaultLocal.Settle()
}

// newRequest writes body as actions/run.sh of a fresh base dir and returns
// a request for it.
func newRequest(t *testing.T, body string) Request {
	t.Helper()
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "actions", "run.sh"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return Request{Resource: "res", Action: "run", Task: "res.run#0", BaseDir: base, Script: "actions/run.sh"}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// alive reports whether pid is a live process. A zombie is dead: where pid
// 1 does not reap orphans, a killed child stays one forever.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// aliveAfterKill reports whether pid is still alive a moment after the
// attempt ended: SIGKILL is delivered asynchronously, so a process it was
// sent to may take a scheduling round to die.
func aliveAfterKill(t *testing.T, pid int) bool {
	t.Helper()
	for i := 0; i < 50; i++ {
		if !alive(t, pid) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func readPids(t *testing.T, name string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(readFile(t, name)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("%s holds no pid", name)
	}
	return pids
}

func TestEnvironment(t *testing.T) {
	t.Setenv("SOLAR_TEST_PARENT", "inherited")
	t.Setenv("SOLAR_INPUT_STALE", "from the executor")
	t.Setenv("SOLAR_TASK", "stale.run#9")
	t.Setenv("SOLAR_DB", "/kept/solar.db")

	tests := []struct {
		name    string
		input   string
		value   any
		envName string
		want    string
	}{
		{"string", "host", "db.example", "SOLAR_INPUT_HOST", "db.example"},
		{"string is raw", "motd", "it's \"quoted\"\n$(touch pwned) `touch pwned` \\ ; | end", "SOLAR_INPUT_MOTD", "it's \"quoted\"\n$(touch pwned) `touch pwned` \\ ; | end"},
		{"empty string", "empty", "", "SOLAR_INPUT_EMPTY", ""},
		{"int", "port", int64(3306), "SOLAR_INPUT_PORT", "3306"},
		{"negative int", "offset", int64(-12), "SOLAR_INPUT_OFFSET", "-12"},
		{"float", "ratio", 1.5, "SOLAR_INPUT_RATIO", "1.5"},
		{"whole float", "weight", float64(3), "SOLAR_INPUT_WEIGHT", "3"},
		{"large float", "huge", 1e21, "SOLAR_INPUT_HUGE", "1e+21"},
		{"true", "on", true, "SOLAR_INPUT_ON", "true"},
		{"false", "off", false, "SOLAR_INPUT_OFF", "false"},
		{"nil", "unset", nil, "SOLAR_INPUT_UNSET", ""},
		{"list", "backends", []any{"a:1", int64(2), 2.5, true, nil}, "SOLAR_INPUT_BACKENDS", `["a:1",2,2.5,true,null]`},
		{"empty list", "ports", []any{}, "SOLAR_INPUT_PORTS", `[]`},
		{"object", "settings", map[string]any{"port": int64(80), "host": "<h&st>", "tags": []any{"x"}, "sub": map[string]any{}},
			"SOLAR_INPUT_SETTINGS", `{"host":"<h&st>","port":80,"sub":{},"tags":["x"]}`},
		{"dash in name", "my-input", "x", "SOLAR_INPUT_MY_INPUT", "x"},
		{"dot in name", "a.b", "y", "SOLAR_INPUT_A_B", "y"},
		{"upper case in name", "Mixed9", "z", "SOLAR_INPUT_MIXED9", "z"},
		{"non-ASCII in name", "café", "w", "SOLAR_INPUT_CAF_", "w"},
		{"underscores and digits", "_db_2", "v", "SOLAR_INPUT__DB_2", "v"},
	}
	req := newRequest(t, "env -0 >env.out\npwd >pwd.out\n")
	req.Resource, req.Action, req.Task, req.Location = "haproxy", "reload", "haproxy.reload#1", "node1"
	req.Inputs = map[string]any{}
	for _, tt := range tests {
		req.Inputs[tt.input] = tt.value
	}
	res, err := newShell(t).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Changed || res.Outputs != nil {
		t.Errorf("no result file: got Changed=%v Outputs=%v, want true and nil", res.Changed, res.Outputs)
	}
	env := map[string]string{}
	inputVars := 0
	for kv := range strings.SplitSeq(strings.TrimSuffix(readFile(t, filepath.Join(req.BaseDir, "env.out")), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("%s is set twice", k)
		}
		env[k] = v
		if strings.HasPrefix(k, "SOLAR_INPUT_") {
			inputVars++
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EnvName(tt.input); got != tt.envName {
				t.Errorf("EnvName(%q) = %q, want %q", tt.input, got, tt.envName)
			}
			got, ok := env[tt.envName]
			if !ok {
				t.Fatalf("%s is not set", tt.envName)
			}
			if got != tt.want {
				t.Errorf("%s = %q, want %q", tt.envName, got, tt.want)
			}
		})
	}
	t.Run("one variable per input", func(t *testing.T) {
		if inputVars != len(tests) {
			t.Errorf("%d SOLAR_INPUT_* variables, want %d (stale ones must go)", inputVars, len(tests))
		}
	})
	t.Run("protocol and parent variables", func(t *testing.T) {
		want := map[string]string{
			"SOLAR_RESOURCE":    "haproxy",
			"SOLAR_ACTION":      "reload",
			"SOLAR_TASK":        "haproxy.reload#1",
			"SOLAR_LOCATION":    "node1",
			"SOLAR_TEST_PARENT": "inherited",
			"SOLAR_DB":          "/kept/solar.db",
			"PATH":              os.Getenv("PATH"),
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s = %q, want %q", k, env[k], v)
			}
		}
		for _, k := range []string{"SOLAR_INPUTS", "SOLAR_RESULT"} {
			if !filepath.IsAbs(env[k]) {
				t.Errorf("%s = %q, want an absolute path", k, env[k])
			}
		}
	})
	t.Run("working directory is the base dir", func(t *testing.T) {
		if got := strings.TrimSpace(readFile(t, filepath.Join(req.BaseDir, "pwd.out"))); got != req.BaseDir {
			t.Errorf("pwd = %q, want %q", got, req.BaseDir)
		}
	})
	t.Run("inputs never reach a command line", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(req.BaseDir, "pwned")); err == nil {
			t.Error("a string input was run as a command")
		}
	})
}

func TestInputsFile(t *testing.T) {
	sh := newShell(t)
	req := newRequest(t, `
cp "$SOLAR_INPUTS" inputs.copy
stat -c %a "$SOLAR_INPUTS" >inputs.mode
stat -c %a "$(dirname "$SOLAR_INPUTS")" >dir.mode
printf %s "$SOLAR_INPUTS" >inputs.path
printf %s "$SOLAR_RESULT" >result.path
if [ -e "$SOLAR_RESULT" ]; then echo present; else echo absent; fi >result.state
`)
	req.Inputs = map[string]any{
		"port":     int64(3306),
		"ratio":    0.25,
		"name":     "a <b> & \"c\"\n",
		"on":       true,
		"none":     nil,
		"backends": []any{"x", int64(1)},
		"settings": map[string]any{"k": "v"},
	}
	req.Sensitive = map[string]bool{"name": true}
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	file := func(name string) string { return readFile(t, filepath.Join(req.BaseDir, name)) }
	inputsPath, resultPath := file("inputs.path"), file("result.path")
	tests := []struct{ what, got, want string }{
		{"inputs file", file("inputs.copy"),
			`{"backends":["x",1],"name":"a <b> & \"c\"\n","none":null,"on":true,"port":3306,"ratio":0.25,"settings":{"k":"v"}}`},
		{"inputs file mode", strings.TrimSpace(file("inputs.mode")), "600"},
		{"private dir mode", strings.TrimSpace(file("dir.mode")), "700"},
		{"result file before the script writes it", strings.TrimSpace(file("result.state")), "absent"},
		{"result file's dir", filepath.Dir(resultPath), filepath.Dir(inputsPath)},
		{"private dir's parent", filepath.Dir(filepath.Dir(inputsPath)), sh.TempDir},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	t.Run("private dir removed", func(t *testing.T) {
		settle(sh)
		if _, err := os.Stat(filepath.Dir(inputsPath)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after the attempt (stat: %v)", filepath.Dir(inputsPath), err)
		}
	})
	t.Run("no inputs is an empty object", func(t *testing.T) {
		req := newRequest(t, `cp "$SOLAR_INPUTS" inputs.copy`)
		if _, err := sh.Run(context.Background(), req); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := readFile(t, filepath.Join(req.BaseDir, "inputs.copy")); got != "{}" {
			t.Errorf("inputs file = %q, want {}", got)
		}
	})
}

func TestDefaultTempDir(t *testing.T) {
	runtime, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	tests := []struct {
		name, xdg, want string
	}{
		{"XDG_RUNTIME_DIR when set", runtime, runtime},
		{"TMPDIR without XDG_RUNTIME_DIR", "", tmp},
		{"TMPDIR when XDG_RUNTIME_DIR is gone", filepath.Join(runtime, "gone"), tmp},
		{"TMPDIR when XDG_RUNTIME_DIR is relative", "run", tmp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_RUNTIME_DIR", tt.xdg)
			req := newRequest(t, `printf %s "$SOLAR_INPUTS" >inputs.path`)
			if _, err := (&Shell{}).Run(context.Background(), req); err != nil {
				t.Fatalf("Run: %v", err)
			}
			inputs := readFile(t, filepath.Join(req.BaseDir, "inputs.path"))
			if got := filepath.Dir(filepath.Dir(inputs)); got != tt.want {
				t.Errorf("private dir made in %s, want %s", got, tt.want)
			}
			defaultLocal.Settle()
			if _, err := os.Stat(filepath.Dir(inputs)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("private dir %s not removed", filepath.Dir(inputs))
			}
		})
	}
}

func TestResultFile(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name        string
		content     *string // nil: the script writes no result file
		wantChanged bool
		wantOutputs map[string]any
		wantErr     string // part of the message of an ErrBadResult
	}{
		{name: "no file", content: nil, wantChanged: true},
		{name: "empty file", content: str(""), wantChanged: true},
		{name: "blank file", content: str(" \n"), wantChanged: true},
		{name: "empty object", content: str("{}"), wantChanged: true},
		{name: "changed false", content: str(`{"changed": false}`), wantChanged: false},
		{name: "changed true", content: str(`{"changed": true}` + "\n"), wantChanged: true},
		{name: "changed null", content: str(`{"changed": null}`), wantChanged: true},
		{name: "outputs null", content: str(`{"changed": false, "outputs": null}`), wantChanged: false},
		{name: "outputs", content: str(`{"changed": false, "outputs": {
			"n": 3, "neg": -4, "f": 2.5, "e": 1e3, "whole": 2.0,
			"big": 9007199254740993, "huger": 123456789012345678901234567890,
			"s": "x", "b": false, "z": null,
			"l": [1, "a", [0.5]], "m": {"k": 5, "deep": {"x": [7]}}}}`),
			wantChanged: false,
			wantOutputs: map[string]any{
				"n": int64(3), "neg": int64(-4), "f": 2.5, "e": float64(1000), "whole": float64(2),
				"big": int64(9007199254740993), "huger": 1.2345678901234568e29,
				"s": "x", "b": false, "z": nil,
				"l": []any{int64(1), "a", []any{0.5}}, "m": map[string]any{"k": int64(5), "deep": map[string]any{"x": []any{int64(7)}}},
			}},
		{name: "outputs without changed", content: str(`{"outputs": {"password": "hunter2"}}`),
			wantChanged: true, wantOutputs: map[string]any{"password": "hunter2"}},
		{name: "truncated JSON", content: str(`{"changed": false, "outputs": {"password": "hunter2"`), wantErr: "not valid JSON"},
		{name: "not JSON", content: str(`hunter2`), wantErr: "not valid JSON (error at byte 1)"},
		{name: "changed not a bool", content: str(`{"changed": "hunter2"}`), wantErr: "changed is a JSON string; want true or false"},
		{name: "unknown field", content: str(`{"chnged": false, "outputs": {"p": "hunter2"}}`), wantErr: `unknown field "chnged"`},
		{name: "a list", content: str(`["hunter2"]`), wantErr: "holds a JSON array; want an object"},
		{name: "two values", content: str(`{"outputs": {"p": "hunter2"}} {}`), wantErr: "more than one JSON value"},
		{name: "trailing garbage", content: str(`{"outputs": {"p": "hunter2"}} hunter2`), wantErr: "more than one JSON value"},
		{name: "outputs not an object", content: str(`{"outputs": ["hunter2"]}`), wantErr: "outputs is a JSON array; want an object"},
		{name: "number out of range", content: str(`{"outputs": {"x": ["hunter2", 1e999]}}`), wantErr: `output "x": a number is out of range`},
	}
	sh := newShell(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, `[ ! -f result.src ] || cat result.src >"$SOLAR_RESULT"`)
			if tt.content != nil {
				if err := os.WriteFile(filepath.Join(req.BaseDir, "result.src"), []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := sh.Run(context.Background(), req)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrBadResult) || !errors.Is(err, ErrFailed) {
					t.Fatalf("Run: err = %v, want ErrBadResult and ErrFailed", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q quotes the result file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Changed != tt.wantChanged {
				t.Errorf("Changed = %v, want %v", res.Changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.wantOutputs, res.Outputs); diff != "" {
				t.Errorf("Outputs (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a FIFO does not hang the attempt", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, `mkfifo "$SOLAR_RESULT"`)
		_, err := sh.Run(context.Background(), req)
		if !errors.Is(err, ErrBadResult) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Run: err = %v, want ErrBadResult saying it is not a regular file", err)
		}
	})
}

func TestFailure(t *testing.T) {
	long := strings.Repeat("é", 3000)
	tests := []struct {
		name     string
		script   string
		wantMsg  string
		wantCode int
		stdout   string
	}{
		{"stderr tail skips blank lines", "echo out\necho first >&2\necho >&2\necho '   ' >&2\necho last >&2\nexit 3",
			"exit status 3: first\nlast", 3, "out\n"},
		{"no stderr", "exit 1", "exit status 1", 1, ""},
		{"last ten lines", "i=1; while [ $i -le 15 ]; do echo line $i >&2; i=$((i+1)); done; exit 2",
			"exit status 2: line 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15", 2, ""},
		{"long last line keeps its end", "printf '%s\\n' '" + long + "' >&2; exit 4",
			"exit status 4: …" + long[len(long)-errBytes:], 4, ""},
		{"long lines before a short one", "printf '%s\\n' '" + long + "' >&2; echo short >&2; exit 5",
			"exit status 5: short", 5, ""},
		{"last line longer than the kept tail keeps its end", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo ' the reason' >&2; exit 7",
			"exit status 7: …" + strings.Repeat("x", errBytes-len(" the reason")) + " the reason", 7, ""},
		{"killed by a signal", "echo dying >&2; kill -9 $$", "killed by SIGKILL: dying", -1, ""},
		{"result file does not save a failure", `echo '{"changed": false}' >"$SOLAR_RESULT"; exit 6`, "exit status 6", 6, ""},
		{"missing script", "", "", 2, ""},
	}
	sh := newShell(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, tt.script)
			if tt.name == "missing script" {
				req.Script = "actions/nope.sh"
			}
			res, err := sh.Run(context.Background(), req)
			if !errors.Is(err, ErrFailed) {
				t.Fatalf("Run: err = %v, want ErrFailed", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Run: err is a %T, want *Error", err)
			}
			if e.ExitCode != tt.wantCode {
				t.Errorf("ExitCode = %d, want %d", e.ExitCode, tt.wantCode)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("message = %q, want %q", err, tt.wantMsg)
			}
			if tt.name == "missing script" && !strings.Contains(err.Error(), "nope.sh") {
				t.Errorf("message = %q, want it to name the script", err)
			}
			if res.Stdout != tt.stdout {
				t.Errorf("Stdout = %q, want %q", res.Stdout, tt.stdout)
			}
			if res.Changed || res.Outputs != nil {
				t.Errorf("a failed attempt reports Changed=%v Outputs=%v", res.Changed, res.Outputs)
			}
		})
	}
	t.Run("output is bounded", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, `
i=0; while [ $i -lt 3000 ]; do echo "line $i of forty-odd bytes, on both streams"; i=$((i+1)); done | tee /dev/stderr
echo the end; echo the end >&2; exit 1`)
		res, err := sh.Run(context.Background(), req)
		if !errors.Is(err, ErrFailed) {
			t.Fatalf("Run: err = %v, want ErrFailed", err)
		}
		for name, out := range map[string]string{"Stdout": res.Stdout, "Stderr": res.Stderr} {
			if len(out) > tailMax || len(out) < tailMax-100 {
				t.Errorf("%s holds %d bytes, want the last %d or a partial line less", name, len(out), tailMax)
			}
			if !strings.HasSuffix(out, "line 2999 of forty-odd bytes, on both streams\nthe end\n") {
				t.Errorf("%s does not end with the last lines: ...%q", name, out[max(len(out)-100, 0):])
			}
			if !strings.HasPrefix(out, "line ") {
				t.Errorf("%s starts in the middle of a line: %q...", name, out[:min(len(out), 40)])
			}
		}
		if len(err.Error()) > errBytes+100 {
			t.Errorf("message holds %d bytes, want about %d at most", len(err.Error()), errBytes)
		}
	})
	t.Run("interpreter that does not exist", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, "#!/nonexistent/interp -e\necho hi\n")
		if err := os.Chmod(filepath.Join(req.BaseDir, req.Script), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := sh.Run(context.Background(), req)
		want := "the interpreter its #! line names, /nonexistent/interp, does not exist"
		if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "cannot start actions/run.sh") || !strings.Contains(err.Error(), want) {
			t.Errorf("Run: err = %v, want it to name the missing interpreter", err)
		}
	})
	t.Run("base dir that does not exist", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, "exit 0")
		req.BaseDir = filepath.Join(req.BaseDir, "gone")
		_, err := sh.Run(context.Background(), req)
		if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "cannot start") || !strings.Contains(err.Error(), "gone") {
			t.Errorf("Run: err = %v, want ErrFailed naming the dir", err)
		}
	})
}

func TestBadRequest(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Request)
		wantMsg string
	}{
		{"relative base dir", func(r *Request) { r.BaseDir = "testdata/x" }, `base dir "testdata/x" is not absolute`},
		{"no script", func(r *Request) { r.Script = "" }, `no script for action "run"`},
		{"absolute script", func(r *Request) { r.Script = "/bin/true" }, `script "/bin/true" must be relative`},
		{"NUL in a string", func(r *Request) {
			r.Inputs = map[string]any{"key": "hun\x00ter2"}
			r.Sensitive = map[string]bool{"key": true}
		}, `input "key" holds a NUL byte`},
		{"NaN", func(r *Request) { r.Inputs = map[string]any{"x": math.NaN()} }, `input "x"`},
		{"names that collide", func(r *Request) { r.Inputs = map[string]any{"a-b": "1", "a_b": "2"} }, `inputs "a-b" and "a_b" would both be SOLAR_INPUT_A_B`},
		{"names that differ in case", func(r *Request) { r.Inputs = map[string]any{"Port": "1", "port": "2"} }, `inputs "Port" and "port" would both be SOLAR_INPUT_PORT`},
		{"two unusual names", func(r *Request) { r.Inputs = map[string]any{"a.b": "1", "a-b": "2"} }, `inputs "a-b" and "a.b" would both be SOLAR_INPUT_A_B`},
	}
	sh := newShell(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(t, "touch ran")
			base := req.BaseDir
			tt.edit(&req)
			_, err := sh.Run(context.Background(), req)
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("Run: err = %v, want ErrBadRequest", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("message %q does not contain %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), "ter2") {
				t.Errorf("message %q quotes a secret", err)
			}
			if _, err := os.Stat(filepath.Join(base, "ran")); err == nil {
				t.Error("the script ran")
			}
		})
	}
}

func TestStop(t *testing.T) {
	// Each script records its own pid and its child's in pids, then waits.
	const (
		background = "echo $$ >pids; echo started; sleep 30 & echo $! >>pids; wait"
		childTERM  = "echo $$ >pids; echo started; (trap '' TERM; exec sleep 30) & echo $! >>pids; wait"
		scriptTERM = "trap '' TERM; echo $$ >pids; echo started; sleep 30 & echo $! >>pids; wait"
	)
	tests := []struct {
		name     string
		script   string
		timeout  time.Duration
		ctx      func() (context.Context, context.CancelFunc)
		wantErr  []error
		wantMsg  string
		minDelay time.Duration // how long the group had to live: until SIGKILL
	}{
		{name: "timeout kills the group", script: background, timeout: 300 * time.Millisecond,
			wantErr: []error{ErrTimeout}, wantMsg: "timed out after 300ms"},
		{name: "timeout kills a child that ignores SIGTERM", script: childTERM, timeout: 300 * time.Millisecond,
			wantErr: []error{ErrTimeout}, wantMsg: "timed out after 300ms", minDelay: 300*time.Millisecond + testGrace},
		{name: "timeout kills a script that ignores SIGTERM", script: scriptTERM, timeout: 300 * time.Millisecond,
			wantErr: []error{ErrTimeout}, wantMsg: "timed out after 300ms", minDelay: 300*time.Millisecond + testGrace},
		{name: "cancel kills the group", script: background,
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(300*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantErr: []error{ErrCanceled, context.Canceled}, wantMsg: "canceled: context canceled"},
		{name: "caller's deadline kills the group", script: background, timeout: time.Minute,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
			wantErr: []error{ErrCanceled, context.DeadlineExceeded}, wantMsg: "canceled: context deadline exceeded"},
	}
	sh := newShell(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, tt.script)
			req.Timeout = tt.timeout
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			start := time.Now()
			res, err := sh.Run(ctx, req)
			took := time.Since(start)
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("Run: err = %v, want it to wrap %v", err, want)
				}
			}
			if err == nil || err.Error() != tt.wantMsg {
				t.Errorf("message = %v, want %q", err, tt.wantMsg)
			}
			if took > 3*time.Second || took < tt.minDelay {
				t.Errorf("Run took %v, want between %v and 3s", took, tt.minDelay)
			}
			if res.Stdout != "started\n" {
				t.Errorf("Stdout = %q, want what the script printed before it was stopped", res.Stdout)
			}
			pids := readPids(t, filepath.Join(req.BaseDir, "pids"))
			if len(pids) != 2 {
				t.Fatalf("pids = %v, want the script's and its child's", pids)
			}
			for _, pid := range pids {
				if aliveAfterKill(t, pid) {
					t.Errorf("process %d outlived the attempt", pid)
				}
			}
		})
	}
	t.Run("canceled before it starts", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, "touch ran")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := sh.Run(ctx, req)
		if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Errorf("Run: err = %v, want ErrCanceled", err)
		}
		if _, err := os.Stat(filepath.Join(req.BaseDir, "ran")); err == nil {
			t.Error("the script ran")
		}
	})
	t.Run("a script that finishes in time is not stopped", func(t *testing.T) {
		t.Parallel()
		req := newRequest(t, "sleep 0.1")
		req.Timeout = 5 * time.Second
		if _, err := sh.Run(context.Background(), req); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestSecretsMasked(t *testing.T) {
	secrets := []string{`s3cr3t"Pa\ss`, "tok-AAA", "tok-BBB", "918273", "gen-0123456789", "-----KEY LINE-----"}
	const script = `
echo "user=$SOLAR_INPUT_USER pw=$SOLAR_INPUT_PASSWORD"
echo "tokens=$SOLAR_INPUT_TOKENS pin=$SOLAR_INPUT_PIN"
echo "one token: tok-BBB"
echo "key line: $(printf '%s\n' "$SOLAR_INPUT_KEY" | head -n 1)"
cat "$SOLAR_INPUTS"; echo
echo "user=$SOLAR_INPUT_USER pw=$SOLAR_INPUT_PASSWORD" >&2
echo "generated gen-0123456789" >&2
printf '{"outputs": {"newpw": "gen-0123456789"}}' >"$SOLAR_RESULT"
echo "generated gen-0123456789"
[ "$SOLAR_INPUT_CODE" = 0 ] || { [ "$SOLAR_INPUT_CODE" != sleep ] || sleep 30; exit "$SOLAR_INPUT_CODE"; }
`
	tests := []struct {
		code    string
		timeout time.Duration
		wantErr error
	}{
		{"0", 0, nil},
		{"1", 0, ErrFailed},
		{"sleep", 300 * time.Millisecond, ErrTimeout},
	}
	sh := newShell(t)
	for _, tt := range tests {
		t.Run("exit "+tt.code, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, script)
			req.Timeout = tt.timeout
			req.Inputs = map[string]any{
				"user":     "admin",
				"password": secrets[0],
				"tokens":   []any{secrets[1], secrets[2]},
				"pin":      int64(918273),
				"key":      "-----KEY LINE-----\nabc",
				"newpw":    "",
				"code":     tt.code,
			}
			req.Sensitive = map[string]bool{"password": true, "tokens": true, "pin": true, "newpw": true, "key": true, "user": false}
			res, err := sh.Run(context.Background(), req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run: err = %v, want %v", err, tt.wantErr)
			}
			returned := map[string]string{"Stdout": res.Stdout, "Stderr": res.Stderr}
			if err != nil {
				returned["error"] = err.Error()
			}
			for what, s := range returned {
				for _, secret := range secrets {
					if strings.Contains(s, secret) {
						t.Errorf("%s shows secret %q: %q", what, secret, s)
					}
				}
			}
			if !strings.Contains(res.Stderr, "user=admin pw=********") {
				t.Errorf("Stderr = %q, want the plain input shown and the secret masked", res.Stderr)
			}
			if tt.wantErr == ErrFailed && err.Error() != "exit status 1: user=admin pw=********\ngenerated ********" {
				t.Errorf("message = %q", err)
			}
			if tt.wantErr == nil {
				if res.Outputs["newpw"] != "gen-0123456789" {
					t.Errorf("Outputs = %v, want the real secret for the executor", res.Outputs)
				}
				want := "user=admin pw=********\ntokens=******** pin=********\none token: ********\nkey line: ********\n"
				if !strings.HasPrefix(res.Stdout, want) {
					t.Errorf("Stdout = %q, want it to start with %q", res.Stdout, want)
				}
			}
		})
	}
	t.Run("a secret cut by the tail's start", func(t *testing.T) {
		t.Parallel()
		const secret = "TOPSECRET-1234567890"
		for _, sep := range []string{"", "\n"} {
			req := newRequest(t, `printf '%s' "$SOLAR_INPUT_PW"; printf '`+sep+`'; head -c 65531 /dev/zero | tr '\0' Y`)
			req.Inputs = map[string]any{"pw": secret}
			req.Sensitive = map[string]bool{"pw": true}
			res, err := sh.Run(context.Background(), req)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(res.Stdout) < tailMax-len(secret)-1 {
				t.Errorf("Stdout holds %d bytes, want nearly %d", len(res.Stdout), tailMax)
			}
			for n := 4; n <= len(secret); n++ {
				if strings.Contains(res.Stdout, secret[len(secret)-n:]) {
					t.Errorf("separator %q: Stdout starts with %q, the end of the secret", sep, res.Stdout[:n])
					break
				}
			}
		}
	})
}

// base returns the absolute path of a base in the repository's testdata.
func base(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "resources", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.yaml")); err != nil {
		t.Skipf("base %s: %v", name, err)
	}
	return dir
}

// TestBases runs actions of the shared test bases, which are written to
// the protocol this package implements.
func TestBases(t *testing.T) {
	sh := newShell(t)
	t.Run("password returns a secret output", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		req := Request{Resource: "pw", Action: "run", Task: "pw.run#0", BaseDir: base(t, "password"), Script: "actions/run.sh",
			Inputs:    map[string]any{"dir": dir, "length": int64(24), "password": ""},
			Sensitive: map[string]bool{"password": true}}
		res, err := sh.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		pw, _ := res.Outputs["password"].(string)
		if !res.Changed || !regexp.MustCompile(`^[A-Za-z0-9]{24}$`).MatchString(pw) {
			t.Errorf("Changed = %v, Outputs = %v; want changed and a 24-character password", res.Changed, res.Outputs)
		}
		if got := readFile(t, filepath.Join(dir, "pw", "actions.log")); got != "pw.run#0 run changed\n" {
			t.Errorf("actions.log = %q", got)
		}
	})
	t.Run("fail fails as asked, then succeeds", func(t *testing.T) {
		t.Parallel()
		req := Request{Resource: "f", Action: "run", Task: "f.run#0", BaseDir: base(t, "fail"), Script: "actions/run.sh",
			Inputs: map[string]any{"dir": t.TempDir(), "fail_times": int64(1), "marker": "m", "seconds": int64(5)}}
		_, err := sh.Run(context.Background(), req)
		if !errors.Is(err, ErrFailed) || err.Error() != "exit status 1: f run: failing as asked (attempt 1)" {
			t.Fatalf("first attempt: err = %v", err)
		}
		res, err := sh.Run(context.Background(), req)
		if err != nil || !res.Changed {
			t.Fatalf("second attempt: Changed = %v, err = %v; want changed", res.Changed, err)
		}
		res, err = sh.Run(context.Background(), req)
		if err != nil || res.Changed {
			t.Fatalf("third attempt: Changed = %v, err = %v; want nothing changed", res.Changed, err)
		}
	})
	t.Run("fail sleep dies whole on timeout", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		req := Request{Resource: "f", Action: "sleep", Task: "f.sleep#0", BaseDir: base(t, "fail"), Script: "actions/sleep.sh",
			Inputs:  map[string]any{"dir": dir, "fail_times": int64(0), "marker": "m", "seconds": int64(30)},
			Timeout: 300 * time.Millisecond}
		start := time.Now()
		_, err := sh.Run(context.Background(), req)
		if !errors.Is(err, ErrTimeout) || time.Since(start) > 3*time.Second {
			t.Fatalf("Run: err = %v after %v, want ErrTimeout quickly", err, time.Since(start))
		}
		for _, pid := range readPids(t, filepath.Join(dir, "f", "sleep.pids")) {
			if aliveAfterKill(t, pid) {
				t.Errorf("process %d outlived the attempt", pid)
			}
		}
	})
}

func TestByName(t *testing.T) {
	sh := &Shell{TempDir: "/x"}
	tests := []struct {
		name    string
		shell   *Shell
		want    Handler
		wantErr string
	}{
		{"shell", sh, sh, ""},
		{"", sh, sh, ""},
		{"shell", nil, &Shell{}, ""},
		{"noop", sh, Noop{}, ""},
		{"chef", sh, nil, `unknown handler "chef": want shell, ansible or noop`},
		{"Shell", sh, nil, `unknown handler "Shell"`},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+strconv.FormatBool(tt.shell == nil), func(t *testing.T) {
			got, err := ByName(tt.name, tt.shell, nil)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrUnknownHandler) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ByName: err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ByName: %v", err)
			}
			if s, ok := tt.want.(*Shell); ok && s == sh {
				if got != Handler(sh) {
					t.Errorf("ByName returned %#v, want the shell given", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ByName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoop(t *testing.T) {
	var h Handler = Noop{}
	req := Request{Resource: "n", Action: "run", Task: "n.run#0", Inputs: map[string]any{"value": "x"}}
	res, err := h.Run(context.Background(), req)
	if err != nil || res.Changed || res.Outputs != nil {
		t.Errorf("Run = %+v, %v; want nothing changed", res, err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = h.Run(context.Background(), req) }); allocs != 0 {
		t.Errorf("Run allocates %v times, want 0", allocs)
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"\n \n\t\n", ""},
		{"one", "one"},
		{"one\r\ntwo  \r\n\r\n", "one\ntwo"},
		{strings.Repeat("x\n", 20), strings.TrimSuffix(strings.Repeat("x\n", 10), "\n")},
		{strings.Repeat("a", 1500) + "\n" + strings.Repeat("b", 1500) + "\n", strings.Repeat("b", 1500)},
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 10)], func(t *testing.T) {
			if got := lastLines(tt.in); got != tt.want {
				t.Errorf("lastLines(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// BenchmarkShell measures one attempt of a script that does nothing,
// against /bin/sh run on the same script with nothing around it: the
// difference is the protocol's overhead per task.
func BenchmarkShell(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "true.sh"), []byte(":\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	inputs := map[string]any{"dir": "/tmp/x", "port": int64(3306), "backends": []any{"a:1", "b:2"}, "password": "pw"}
	b.Run("fork-exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("/bin/sh", "true.sh")
			cmd.Dir = dir
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Where the private dirs live matters more than anything the handler
	// does: a disk-backed /tmp costs several file system round trips.
	tmps := []struct{ name, dir string }{{"tmp=disk", b.TempDir()}}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		tmps = append(tmps, struct{ name, dir string }{"tmp=tmpfs", "/dev/shm"})
	}
	for _, tmp := range tmps {
		b.Run("shell/"+tmp.name, func(b *testing.B) {
			sh := &Shell{TempDir: tmp.dir}
			req := Request{Resource: "r", Action: "run", Task: "r.run#0", BaseDir: dir, Script: "true.sh",
				Inputs: inputs, Sensitive: map[string]bool{"password": true}, Timeout: time.Minute}
			for b.Loop() {
				if _, err := sh.Run(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNoop(b *testing.B) {
	var h Handler = Noop{}
	req := Request{Resource: "n", Action: "run", Task: "n.run#0"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTail feeds a tail through both ways os/exec may use, and checks it
// keeps exactly the last tailMax bytes with a bounded buffer.
func TestTail(t *testing.T) {
	var stream []byte
	for i := 0; len(stream) < 5*tailMax; i++ {
		stream = strconv.AppendInt(stream, int64(i), 10)
		stream = append(stream, ' ')
	}
	tests := []struct {
		name string
		feed func(*tail, []byte)
	}{
		{"Write in small pieces", func(tl *tail, b []byte) {
			for len(b) > 0 {
				n := min(len(b), 1000)
				_, _ = tl.Write(b[:n])
				b = b[n:]
			}
		}},
		{"Write in one piece", func(tl *tail, b []byte) { _, _ = tl.Write(b) }},
		{"ReadFrom", func(tl *tail, b []byte) {
			if n, err := tl.ReadFrom(bytes.NewReader(b)); err != nil || n != int64(len(b)) {
				t.Fatalf("ReadFrom = %d, %v; want %d, nil", n, err, len(b))
			}
		}},
	}
	for _, tt := range tests {
		for _, size := range []int{0, 10, tailMax - 1, tailMax, tailMax + 1, 2*tailMax + 7, len(stream)} {
			t.Run(tt.name+"/"+strconv.Itoa(size), func(t *testing.T) {
				var tl tail
				tt.feed(&tl, stream[:size])
				kept := tl.buf[max(len(tl.buf)-tailMax, 0):]
				want := stream[max(size-tailMax, 0):size]
				if !bytes.Equal(kept, want) {
					t.Errorf("kept %d bytes ending %q, want %d ending %q", len(kept), kept[max(len(kept)-20, 0):], len(want), want[max(len(want)-20, 0):])
				}
				if cap(tl.buf) > 2*tailMax+1000 {
					t.Errorf("buffer grew to %d bytes", cap(tl.buf))
				}
				text := tl.text(&masker{})
				if size > tailMax && !strings.HasSuffix(string(want), text) {
					t.Errorf("text is not a suffix of the stream")
				}
				if size <= tailMax && text != string(want) {
					t.Errorf("text dropped bytes of a stream that fits")
				}
			})
		}
	}
}

// An input too large for the environment still reaches the script, in
// the inputs file; its variable is left out and named in
// SOLAR_INPUTS_OMITTED, and the script starts (it used to fail with
// "argument list too long").
func TestLargeInputsLeaveTheEnvironment(t *testing.T) {
	big := strings.Repeat("b", 200<<10)
	mid := strings.Repeat("m", 60<<10)
	req := newRequest(t, `printf '%s|%s|%s|%s\n' "${SOLAR_INPUT_BIG-unset}" "${#SOLAR_INPUT_SMALL}" "$SOLAR_INPUTS_OMITTED" "$(wc -c <"$SOLAR_INPUTS")"`)
	inputs := map[string]any{"big": big, "small": "s"}
	for i := range 12 { // 12 x 60 KiB: more than the 512 KiB budget
		inputs[fmt.Sprintf("mid%02d", i)] = mid
	}
	req.Inputs = inputs
	res, err := newShell(t).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	f := strings.Split(strings.TrimSpace(res.Stdout), "|")
	if len(f) != 4 {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if f[0] != "unset" || f[1] != "1" {
		t.Fatalf("SOLAR_INPUT_BIG=%.20q, len(SOLAR_INPUT_SMALL)=%s: want unset and 1", f[0], f[1])
	}
	omitted := strings.Split(f[2], ",")
	if len(omitted) < 2 || omitted[0] != "SOLAR_INPUT_BIG" || !strings.HasPrefix(omitted[1], "SOLAR_INPUT_MID") {
		t.Fatalf("SOLAR_INPUTS_OMITTED=%q: want the big input and the mids past the budget", f[2])
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(f[3])); n < len(big)+12*len(mid) {
		t.Fatalf("inputs file has %s bytes, want every value", f[3])
	}
}

// A script that exits 0 leaving a background child that holds its output
// open ends as soon as the output has had ioGrace to close: its result
// and what it printed stand, the child is left alone.
func TestBackgroundChildHoldingOutput(t *testing.T) {
	req := newRequest(t, "sleep 20 & echo $! >pids; echo done; echo fine >&2")
	sh := &Shell{}
	start := time.Now()
	res, err := sh.Run(context.Background(), req)
	took := time.Since(start)
	pids := readPids(t, filepath.Join(req.BaseDir, "pids"))
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took < ioGrace || took > ioGrace+5*time.Second {
		t.Errorf("Run took %v, want about ioGrace (%v) after the script's exit", took, ioGrace)
	}
	if res.Stdout != "done\n" || res.Stderr != "fine\n" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
	if !alive(t, pids[0]) {
		t.Error("the background child was killed; a script may leave a service running")
	}
}

// A script's stdin is /dev/null, the same file for every script: one that
// reads it gets end of file at once, twice in a row.
func TestStdinIsDevNull(t *testing.T) {
	for range 2 {
		req := newRequest(t, "cat; stat -L -c '%t:%T' /dev/stdin")
		res, err := (&Shell{}).Run(context.Background(), req)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		// /dev/null is character device 1:3.
		if res.Stdout != "1:3\n" {
			t.Fatalf("stdout %q, want the device numbers of /dev/null (1:3)", res.Stdout)
		}
	}
}

// Settle's counter: wait returns at once with nothing going on, and
// otherwise only once everything added is done, over and over.
func TestBehindSet(t *testing.T) {
	var b behindSet
	b.wait()
	for round := range 3 {
		b.add()
		b.add()
		waited := make(chan struct{})
		go func() {
			b.wait()
			close(waited)
		}()
		b.done()
		select {
		case <-waited:
			t.Fatalf("round %d: wait returned with one still going", round)
		case <-time.After(20 * time.Millisecond):
		}
		b.done()
		<-waited
	}
}

// The handlers are listed once: every name Known accepts is one ByName
// returns a handler for, and messages list exactly them.
func TestHandlerNamesListedOnce(t *testing.T) {
	for _, name := range names {
		if !Known(name) {
			t.Errorf("Known(%q) = false", name)
		}
		if h, err := ByName(name, nil, nil); err != nil || h == nil {
			t.Errorf("ByName(%q) = %v, %v; want a handler", name, h, err)
		}
	}
	if Known("") || Known("chef") {
		t.Error(`Known("") or Known("chef") is true`)
	}
	if got := KnownList(); got != "shell, ansible or noop" {
		t.Errorf("KnownList() = %q", got)
	}
}
