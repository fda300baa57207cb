package handler

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// inputsPathOf runs one attempt of sh that tells where its inputs file is.
func inputsPathOf(t *testing.T, sh *Shell) string {
	t.Helper()
	req := newRequest(t, `printf %s "$SOLAR_INPUTS" >inputs.path`)
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return readFile(t, filepath.Join(req.BaseDir, "inputs.path"))
}

func TestAttemptsShareTheRunDir(t *testing.T) {
	sh := newShell(t)
	first, second := inputsPathOf(t, sh), inputsPathOf(t, sh)
	if filepath.Dir(first) != filepath.Dir(second) {
		t.Errorf("attempts in %s and %s, want one directory for the run", filepath.Dir(first), filepath.Dir(second))
	}
	if first == second {
		t.Errorf("both attempts had inputs file %s", first)
	}
	if st, err := os.Stat(filepath.Dir(first)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("run dir: %v, %v; want a 0700 directory", st, err)
	}

	// Removed from under the process (a cleaner of the temp dir), it is
	// made again.
	if err := os.RemoveAll(filepath.Dir(second)); err != nil {
		t.Fatal(err)
	}
	third := inputsPathOf(t, sh)
	if filepath.Dir(third) == filepath.Dir(second) {
		t.Errorf("attempt used %s, which was removed", filepath.Dir(third))
	}

	// A file a script left where the next attempt's inputs would go does
	// not fail it.
	n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(third), "-inputs.json"))
	next := filepath.Join(filepath.Dir(third), strconv.Itoa(n+1)+"-inputs.json")
	if err := os.WriteFile(next, []byte("left"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fourth := inputsPathOf(t, sh); fourth == next {
		t.Errorf("attempt wrote its inputs over a file left there")
	}

	// Settle removes it once no attempt uses it (newShell checks).
}

// Each attempt has a note of its own, the group it started once known.
func TestConcurrentAttemptsHaveTheirOwnNotes(t *testing.T) {
	sh := newShell(t)
	const n = 3
	var wg sync.WaitGroup
	started := make(chan Procs, n)
	release := make(chan struct{})
	for i := range n {
		req := newRequest(t, `sleep 30`)
		req.Task = "res.run#" + strconv.Itoa(i)
		req.Started = func(g Procs) { started <- g }
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-release; cancel() }()
			_, _ = sh.Run(ctx, req)
		}()
	}
	var groups []Procs
	for range n {
		select {
		case g := <-started:
			groups = append(groups, g)
		case <-time.After(10 * time.Second):
			t.Fatal("attempts did not start")
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(sh.TempDir, tempPrefix+"*"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v, want one", dirs)
	}
	notes := notesIn(dirs[0])
	close(release)
	wg.Wait()
	if len(notes) != n {
		t.Fatalf("notes %+v, want one per attempt (%d)", notes, n)
	}
	byPGID := map[int]procsNote{}
	for _, note := range notes {
		byPGID[note.Procs.PGID] = note
	}
	for _, g := range groups {
		if note, ok := byPGID[g.PGID]; !ok || note.Procs != g {
			t.Errorf("group %+v: note %+v", g, note)
		}
	}
	settle(sh)
	if left := notesIn(dirs[0]); len(left) > 0 {
		t.Errorf("notes left after the attempts ended: %+v", left)
	}
}

// A dead executor's notes find what its attempts left running, in slots
// of its run dir's notes file and in an Ansible attempt's group file.
func TestSweepTempKillsWhatNotesName(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tag := strconv.Itoa(dead.Process.Pid) + ".1"

	leftover := func(task string) (*exec.Cmd, procsNote) {
		token := newToken()
		g := Procs{Boot: bootID(), Token: token, Start: bootTicks()}
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), attemptVar+"="+token)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		g.PGID = cmd.Process.Pid
		return cmd, procsNote{Task: task, Procs: g}
	}
	shellCmd, shellNote := leftover("s.run#0")
	ansibleCmd, ansibleNote := leftover("a.run#0")

	runDir := filepath.Join(tmp, tempPrefix+tag+"-1")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	slots := make([]byte, 3*noteSlot) // slots 0 and 2 are free
	raw, _ := json.Marshal(shellNote)
	copy(slots[noteSlot:], raw)
	if err := os.WriteFile(filepath.Join(runDir, notesFile), slots, 0o600); err != nil {
		t.Fatal(err)
	}
	ansibleDir := filepath.Join(tmp, tempPrefix+tag+"-2")
	if err := os.Mkdir(ansibleDir, 0o700); err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(ansibleNote)
	if err := os.WriteFile(filepath.Join(ansibleDir, procsFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}

	swept, err := SweepTemp(tmp)
	if err != nil {
		t.Fatalf("SweepTemp: %v", err)
	}
	got := map[string]int{}
	for _, s := range swept {
		got[s.Task] = s.Killed
	}
	if got["s.run#0"] != 1 || got["a.run#0"] != 1 || len(got) != 2 {
		t.Errorf("swept %+v, want one process of s.run#0 and one of a.run#0", swept)
	}
	for _, cmd := range []*exec.Cmd{shellCmd, ansibleCmd} {
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Errorf("pid %d: wait = %v, want it killed", cmd.Process.Pid, err)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("%s left after the sweep", left[0].Name())
	}
}

// An inputs file that could not be written whole does not stay behind:
// what was written of it may be a secret.
func TestFailedInputsWriteLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16k,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		defaultLocal.Settle()
		_ = syscall.Unmount(dir, 0)
	})
	req := newRequest(t, "true")
	req.Inputs = map[string]any{"big": strings.Repeat("s", 64<<10)}
	_, err := (&Shell{TempDir: dir}).Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "cannot write the inputs file") {
		t.Fatalf("Run: %v, want the inputs file not written", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*", "*-inputs.json")); len(left) > 0 {
		t.Errorf("%v left after the failed write", left)
	}
}
