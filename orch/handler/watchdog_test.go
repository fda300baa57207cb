package handler

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchedProc is a process the watchdog test starts and watches die.
type watchedProc struct {
	cmd  *exec.Cmd
	done chan error
}

// startWatched starts sh -c script with the extra environment, in a new
// process group or, with setsid, a new session.
func startWatched(t *testing.T, script string, setsid bool, env ...string) watchedProc {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !setsid, Setsid: setsid}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := watchedProc{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-p.done })
	return p
}

// endedWithin reports whether p ended within d, and by which signal.
func (p watchedProc) endedWithin(d time.Duration) (bool, string) {
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true, signalName(ws.Signal())
		}
		return true, "exit"
	case <-time.After(d):
		return false, ""
	}
}

// The watchdog of a dead executor's run directory ends the groups its
// notes name (SIGTERM, then SIGKILL after the grace), leaves alone
// processes that merely share a group id or belong to another boot, and
// removes the run directory and the executor's SSH control directories.
func TestWatchdogEndsANoteOfADeadExecutor(t *testing.T) {
	const grace = 500 * time.Millisecond
	rd, err := makeRunDir(t.TempDir(), grace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(rd.notes) })
	cpDir := filepath.Join(shortTempRoot(), "solar-cp-"+strconv.Itoa(os.Getpid())+"-watchdogtest")
	if err := os.Mkdir(cpDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(cpDir) })

	note := func(slot int, task string, g Procs) {
		t.Helper()
		if err := (attemptFiles{rd: rd, slot: slot}).note(task, g); err != nil {
			t.Fatal(err)
		}
	}
	// A group whose leader ignores SIGTERM: it dies by SIGKILL.
	g1 := Procs{Boot: bootID(), Token: newToken(), Start: bootTicks()}
	stubborn := startWatched(t, `trap '' TERM; while :; do sleep 1; done`, false)
	g1.PGID = stubborn.cmd.Process.Pid
	note(0, `t.run#0 "group":{"pgid":1}}`, g1) // a task name cannot forge a group
	// A process of an attempt that left the group: found by its token.
	g2 := Procs{Boot: bootID(), Token: newToken(), Start: bootTicks()}
	escaped := startWatched(t, `exec sleep 60`, true, attemptVar+"="+g2.Token)
	note(1, "t.run#1", g2)
	// A group started before the note says it did (its id reused) and one
	// of another boot: neither is the attempt's.
	reused := startWatched(t, `exec sleep 60`, false)
	note(2, "t.run#2", Procs{Boot: bootID(), PGID: reused.cmd.Process.Pid, Start: bootTicks() + 100*clockTicks})
	otherBoot := startWatched(t, `exec sleep 60`, false)
	note(3, "t.run#3", Procs{Boot: "0-other-boot", PGID: otherBoot.cmd.Process.Pid, Start: 0})
	// An attempt that ended cleared its slot: what it left is not killed.
	daemon := startWatched(t, `exec sleep 60`, false)
	note(4, "t.run#4", Procs{Boot: bootID(), PGID: daemon.cmd.Process.Pid, Token: newToken()})
	(attemptFiles{rd: rd, slot: 4}).clearNote()

	// Ctrl-C at the terminal, or a kill of the runner's group, does not end
	// the watchdog first.
	wd := rd.watch.pid
	waitSignalsIgnored(t, wd, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		_ = syscall.Kill(wd, sig)
	}
	if pg, _ := syscall.Getpgid(wd); pg == syscall.Getpgrp() {
		t.Errorf("watchdog in the executor's process group %d, want a session of its own", pg)
	}

	// The executor dies: its end of the pipe closes without "end".
	start := time.Now()
	_ = syscall.Close(rd.watch.w)
	rd.watch.w = -1

	if ended, how := escaped.endedWithin(10 * time.Second); !ended || how != "SIGTERM" {
		t.Errorf("process with the attempt's token: ended %v by %s, want ended by SIGTERM", ended, how)
	}
	if ended, how := stubborn.endedWithin(grace + 10*time.Second); !ended || how != "SIGKILL" {
		t.Errorf("group ignoring SIGTERM: ended %v by %s, want ended by SIGKILL", ended, how)
	} else if d := time.Since(start); d < grace {
		t.Errorf("group ignoring SIGTERM killed after %s, before the grace of %s", d, grace)
	}
	waitWatchdog(t, wd)
	for name, p := range map[string]watchedProc{"reused group id": reused, "other boot": otherBoot, "ended attempt's daemon": daemon} {
		if ended, how := p.endedWithin(0); ended {
			t.Errorf("%s: ended by %s, want it left alone", name, how)
		}
	}
	for _, dir := range []string{rd.path, cpDir} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: %v after the watchdog, want it removed", dir, err)
		}
	}
}

// waitWatchdog reaps the watchdog pid, failing if it does not exit.
func waitWatchdog(t *testing.T, pid int) {
	t.Helper()
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				done <- ws
				return
			}
		}
	}()
	select {
	case ws := <-done:
		if ws.ExitStatus() != 0 {
			t.Errorf("watchdog ended %v, want exit 0", ws)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("watchdog %d still runs", pid)
	}
}

// A run whose executor lets its directory go ends its watchdog, which
// kills nothing, not even what a script left behind after exiting 0.
func TestWatchdogEndsWithTheRunDir(t *testing.T) {
	sh := newShell(t)
	req := newRequest(t, `sleep 60 >/dev/null 2>&1 & echo $! >daemon.pid`)
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(req.BaseDir, "daemon.pid"))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	local := sh.Transport.(*Local)
	local.dirs.mu.Lock()
	rd := local.dirs.byParent[sh.TempDir]
	local.dirs.mu.Unlock()
	if rd == nil || rd.watch == nil {
		t.Fatal("the run dir has no watchdog")
	}
	wd := rd.watch.pid
	if !processRuns(wd) {
		t.Fatalf("watchdog %d is not running while its run dir is in use", wd)
	}
	local.Settle()
	deadline := time.Now().Add(10 * time.Second)
	for processRuns(wd) {
		if time.Now().After(deadline) {
			t.Fatalf("watchdog %d still runs after Settle", wd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !processRuns(pid) {
		t.Errorf("the daemon the script left (pid %d) was killed", pid)
	}
}

// processRuns reports whether pid exists and is not a zombie.
func processRuns(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z'
}

// waitSignalsIgnored waits until process pid ignores every one of sigs
// (/proc/PID/status, SigIgn).
func waitSignalsIgnored(t *testing.T, pid int, sigs ...syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			t.Fatalf("watchdog %d: %v", pid, err)
		}
		var ign uint64
		for line := range strings.SplitSeq(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				ign, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			}
		}
		all := true
		for _, sig := range sigs {
			all = all && ign&(1<<(uint(sig)-1)) != 0
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watchdog %d does not ignore %v (SigIgn %x)", pid, sigs, ign)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
