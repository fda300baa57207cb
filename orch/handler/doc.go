// Package handler owns running one attempt of one action of one resource:
// the shell protocol that action scripts are written to, the noop handler,
// and the Transport seam through which a command reaches the machine it runs
// on.
//
// A Handler knows nothing of the store, the planner or terminals. The
// executor hands it a Request holding everything it needs (the base
// directory, the script, the effective inputs and which of them are secret)
// and gets back a Result or an error. Retries, delays between attempts and
// recording what happened are the executor's.
//
// # The shell protocol
//
// Shell runs "/bin/sh <Script>" in the base directory, so a base works the
// same whatever the executor's working directory. Inputs reach the script
// only through its environment and a file, never through a command line,
// where other users could read them and where quoting would be a hazard:
//
//   - SOLAR_RESOURCE, SOLAR_ACTION, SOLAR_TASK, SOLAR_LOCATION name what runs;
//   - SOLAR_INPUT_<NAME> holds each input: the name upper-cased with every
//     character outside [A-Z0-9_] replaced by '_'; strings as they are,
//     numbers and booleans as JSON text, lists and objects as compact JSON,
//     nil as the empty string;
//   - SOLAR_INPUTS names a JSON file (mode 0600) with all inputs as an object;
//   - SOLAR_RESULT names a file that does not exist yet. The script may write
//     {"changed": bool, "outputs": {...}} there. No file, an empty file or a
//     missing "changed" mean the action changed something.
//
// Both files live in a private directory (mode 0700) made for the attempt and
// removed after it. On this machine the rest of the environment is the
// executor's own, less any stale SOLAR_INPUT_* or protocol variables it may
// have inherited; on a remote node it is the login environment.
//
// An attempt fails when the script exits non-zero (the error is
// "exit status N: " and the last non-empty lines of its stderr), when it is
// killed by a signal, or when its result file is not what the protocol
// says. Result numbers come back in canonical form: int64 when the JSON
// number is a whole number that fits, float64 otherwise; callers convert
// them further with the input's schema.
//
// # Time limits
//
// The script runs in its own process group. When Request.Timeout passes, or
// the caller's context is done, the whole group gets SIGTERM and, after
// Shell.KillGrace, SIGKILL, so that children the script started (a sleep, a
// server in the foreground) die with it. A child that puts itself in another
// process group or session escapes; that is the price of not needing a
// cgroup.
//
// # When the executor dies
//
// A script gets SIGKILL the moment its executor dies (a parent-death
// signal), and the rest of its process group soon after: each run
// directory has a watchdog (watchdog.go), a small /bin/sh program in a
// session of its own that outlives the executor. When its pipe from the
// executor closes without the word that the executor let the directory
// go, it ends every group still noted in the directory's notes file
// (SIGTERM, the grace of the attempt that made the directory, then
// SIGKILL), then removes the directory.
// An attempt's note is cleared when its script has ended: what the script
// left running (a service it started) is never the watchdog's. An Ansible
// attempt takes a slot and keeps its files in the run directory like a
// shell one, so the same watchdog ends it. What a watchdog did not end (it
// was killed too) the next executor does (SweepTemp).
//
// # Secrets
//
// The values of inputs marked Sensitive, and of outputs whose name is a
// Sensitive input, are replaced by "********" in every string this package
// returns: error messages, Result.Stdout and Result.Stderr. Result.Outputs
// keeps the real values, since the executor must store them. A malformed
// result file is reported by what is wrong with it, never by quoting it.
//
// # Beyond this machine
//
// Where an attempt runs is a Host, which a Transport opens for
// Request.Location. The Host runs one whole attempt (Host.Exec): it makes
// the private directory and the inputs file, runs the script, stops its
// process group when told to, reads the result file and removes the
// directory. Shell keeps everything that does not depend on the machine:
// building the protocol's variables, the timeout, parsing the result,
// masking secrets and wording errors. Local runs attempts on this machine
// with the executor's environment; the SSH transport (package
// orch/handler/ssh) runs them on a node with its login environment, in one
// SSH session each. A node reaches a transport as a Target, which package
// nodes makes from the node's inputs and trusted key.
//
// # One attempt lifecycle
//
// Every handler that runs something goes the same way (lifecycle.go): it
// checks the request and prepares what the host runs, then runAttempt
// bounds it by Request.Timeout, runs it through Host.Exec, collects its
// output, reads its result with the handler's reader, masks secrets, and
// classify says how it ended, in one place for all. The Ansible handler
// asks the run's Local to run ansible-playbook (Attempt.Program: the
// handler writes its files in the attempt's own directory, which the Local
// makes in the run directory), as Shell asks a host to run a script.
//
// A run makes one Local, which holds the run's private directories and the
// files of its ended attempts, and calls Local.Settle before it returns.
//
// The handlers' names (ShellName, AnsibleName, NoopName) are listed once
// here: package resources refuses a base naming another (Known).
package handler
