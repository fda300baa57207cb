package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Local runs attempts on this machine, whatever the location. It is the
// default Transport and is also its own Host.
//
// A Local owns its run's private directories (rundir.go) and the files of
// its ended attempts until they are removed: a run makes one Local, runs
// every attempt of this machine through it, and calls Settle before it
// returns. Its zero value is ready to use; it must not be copied once
// used. A Local that is never settled leaves only an empty directory,
// which its watchdog removes when the process exits.
type Local struct {
	dirs runDirs
}

// defaultLocal runs the attempts of handlers given no Local or Transport
// (a zero Shell or Ansible): a process that uses them never settles it,
// and its watchdog removes its directory when the process exits.
var defaultLocal Local

// Program is a program of this machine an attempt runs instead of a
// script (Attempt.Program): ansible-playbook, whose files the handler
// writes in the attempt's own directory.
type Program struct {
	// Name is the program's name in messages: "ansible-playbook".
	Name string
	// Prepare writes the attempt's files in dir and says what to run.
	// dir is the attempt's own 0700 directory in the run directory,
	// removed, with all it holds, once the program has ended (or by the
	// run directory's watchdog, should the executor die); token is the
	// attempt's SOLAR_ATTEMPT_ID, which every process of the attempt
	// carries. Its error is for the operator as it is; on error it leaves
	// nothing of its own outside dir.
	Prepare func(dir, token string) (Prepared, error)
}

// Prepared is what Program.Prepare made ready.
type Prepared struct {
	Argv []string // argv[0] is the program's path; it runs in Attempt.BaseDir
	// Env is added to the executor's own environment (less solar's
	// protocol variables), after Attempt.Env.
	Env []string
	// Result is the file the attempt's result is read from
	// (Ended.Result), as a script's SOLAR_RESULT is.
	Result string
	// Done, if set, is called once the attempt is over, started or not,
	// before dir is removed: it ends and removes what the program left
	// outside dir.
	Done func()
}

// Open returns l itself: there is only one local machine.
func (l *Local) Open(context.Context, string) (Host, error) { return l, nil }

// Close does nothing: a Local is let go of with Settle, once its run is
// over, not after each attempt.
func (l *Local) Close() error { return nil }

// Settle removes the files of every attempt that has ended, waits for
// those being removed, then removes the run directories no attempt uses
// and waits for their watchdogs to exit. A runner calls it at the end of
// each run, before it returns, and a process before it looks for what
// attempts left behind (SweepTemp). The Local stays usable: a later
// attempt makes a new run directory.
func (l *Local) Settle() { l.dirs.settle() }

// Exec runs the attempt on this machine: a script (see execScript) or a
// Program (see execProgram).
func (l *Local) Exec(ctx context.Context, a Attempt) (Ended, error) {
	if a.Program != nil {
		return l.execProgram(ctx, a)
	}
	return l.execScript(ctx, a)
}

// execScript writes the attempt's inputs file in the run's private
// directory, runs the script in BaseDir in a process group of its own,
// and reads the result file. The attempt's files, which hold secrets, go
// soon after, whatever happened (attemptFiles.end).
func (l *Local) execScript(ctx context.Context, a Attempt) (Ended, error) {
	files, err := l.dirs.newAttemptFiles(a.TempDir, a.Inputs, a.Grace)
	if err != nil {
		return Ended{}, l.startErr(a, err)
	}
	defer files.end()
	inputsPath, resultPath := files.inputs(), files.result()
	// The attempt is on record before it starts: should solar die before
	// it learns the group id, the token still finds every process.
	g := Procs{Boot: bootID(), Token: newToken(), Start: bootTicks()}
	env := localEnv(a.Env, len(a.Env)+3)
	env = append(env, "SOLAR_INPUTS="+inputsPath, "SOLAR_RESULT="+resultPath, attemptVar+"="+g.Token)
	if a.Batch {
		env = append(env, batchVar+"="+inputsPath)
	}
	ended, err := l.launch(ctx, a, files, g, program{
		argv:   scriptArgv(a.BaseDir, a.Script),
		noExec: []string{interpreter, a.Script},
		dir:    a.BaseDir,
		env:    env,
		stdout: a.Stdout,
		stderr: a.Stderr,
	})
	if err != nil {
		return ended, err
	}
	// The result file is read whatever happened: on failure too, its
	// secret outputs must be masked in what the script printed.
	ended.Result, ended.ResultErr = readResultFile(resultPath)
	return ended, nil
}

// execProgram gives the attempt a directory of its own in the run
// directory, has the handler write its files there (Program.Prepare),
// runs the program in BaseDir in a process group of its own, and reads
// its result. The directory goes at once when the program has ended: an
// Ansible attempt lasts far longer than its removal takes.
func (l *Local) execProgram(ctx context.Context, a Attempt) (Ended, error) {
	files, err := l.dirs.newAttemptDir(a.TempDir, a.Grace)
	if err != nil {
		return Ended{}, err
	}
	defer files.removeAttemptDir()
	g := Procs{Boot: bootID(), Token: newToken(), Start: bootTicks()}
	prep, err := a.Program.Prepare(files.attemptDir(), g.Token)
	if err != nil {
		return Ended{}, err
	}
	if prep.Done != nil {
		defer prep.Done()
	}
	env := localEnv(a.Env, len(a.Env)+len(prep.Env)+1)
	env = append(env, prep.Env...)
	env = append(env, attemptVar+"="+g.Token)
	ended, err := l.launch(ctx, a, files, g, program{
		argv:   prep.Argv,
		dir:    a.BaseDir,
		env:    env,
		stdout: a.Stdout,
		stderr: a.Stderr,
	})
	if err != nil {
		return ended, err
	}
	ended.Result, ended.ResultErr = readResultFile(prep.Result)
	return ended, nil
}

// launch puts the attempt on record in its note slot, passes its gate,
// starts p, records its group and waits for it to end; ctx done first
// stops the group (see Host.Exec). The errors are worded for the
// operator: what could not start, or that the program was lost.
func (l *Local) launch(ctx context.Context, a Attempt, files attemptFiles, g Procs, p program) (Ended, error) {
	if err := files.note(a.Task, g); err != nil {
		return Ended{}, l.startErr(a, fmt.Errorf("cannot record the attempt: %w", err))
	}
	if err := PassGate(a.Gate); err != nil {
		return Ended{}, err
	}
	pr, err := start(p)
	if err != nil {
		if a.Program != nil {
			return Ended{}, fmt.Errorf("cannot start %s: %w", a.Program.Name, err)
		}
		return Ended{}, l.startErr(a, missingInterpreter(a.BaseDir, a.Script, err))
	}
	g.PGID = pr.pid
	_ = files.note(a.Task, g)
	if a.Started != nil {
		a.Started(g)
	}
	l.dirs.removeEnded()
	ended, err := pr.wait(ctx, a.Grace)
	if err != nil {
		what := "the script"
		if a.Program != nil {
			what = a.Program.Name
		}
		return ended, fmt.Errorf("lost %s: %w", what, err)
	}
	return ended, nil
}

// startErr says that a script could not start, and why; a Program's
// errors say it themselves.
func (*Local) startErr(a Attempt, err error) error {
	if a.Program != nil {
		return err
	}
	return fmt.Errorf("cannot start %s in %s: %w", a.Script, a.BaseDir, err)
}

// localEnv is the environment of a program this machine runs for an
// attempt: the executor's own, less solar's protocol variables it may
// have inherited, then vars; room is how many more the caller appends.
func localEnv(vars []string, room int) []string {
	parent := os.Environ()
	env := make([]string, 0, len(parent)+room)
	for _, kv := range parent {
		if inheritable(kv) {
			env = append(env, kv)
		}
	}
	return append(env, vars...)
}

// readResultFile reads an attempt's result file: nil when the attempt
// wrote none; the error says why it could not be read, never quoting it.
func readResultFile(path string) ([]byte, error) {
	switch raw, err := readRegular(path, resultLimit); {
	case err == nil:
		return raw, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("cannot read the result file: %w", err)
	}
	return nil, nil
}
