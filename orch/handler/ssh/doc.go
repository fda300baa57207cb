// Package ssh is the transport that runs action scripts on remote nodes
// over SSH (golang.org/x/crypto/ssh), behind handler.Transport and
// handler.Host. It knows nothing of the store: the executor gives it each
// node's address, login and trusted host key.
//
// # Connections
//
// A Transport keeps one pool of connections per node for the whole run. The
// first attempt on a node dials; later ones open sessions on the same
// connection. An OpenSSH server allows MaxSessions (10) sessions on one
// connection, so a pool never has more than Config.MaxSessions open on one
// and dials another when all are busy. Dials are capped across nodes
// (Config.MaxDials), below OpenSSH's MaxStartups. Every connection sends a
// keepalive each Config.Keepalive. A connection that is moving bytes is
// alive: on a slow line a keepalive waits behind seconds of a base upload,
// so the connection is closed only when a keepalive has gone unanswered
// for a period and nothing at all has arrived from the node for a period
// either, TCP acknowledgements of the upload included (the kernel's
// TCP_INFO says when the last one came). Then the attempts on it fail,
// naming the node, and the next attempt dials again. A cut link is given
// up as soon as a silent keepalive alone would be.
//
// # Host keys
//
// A node must have a trusted host key (solar node trust): an attempt on a
// node without one fails before anything is dialled, and a node that offers
// another key fails the attempt naming both fingerprints. The client asks
// only for the trusted key's algorithm, so that a server holding keys of
// several types cannot make a correct node look changed.
//
// # What travels
//
// The base directory is copied to the node once, into a content-addressed
// cache: ~/.cache/solar/bases/HASH ($XDG_CACHE_HOME when set), where HASH
// covers every file's path, mode and content. It is unpacked from a tar
// stream into a fresh directory, made read-only and renamed into place, so
// concurrent uploads cannot collide and a changed script gets a new HASH.
// The fresh directory's name (.upload-HASH.PID.*) carries the pid of the
// shell that unpacks it.
// Symbolic links are followed on the controller: the node never needs the
// controller's files.
//
// Every attempt is one session whose command is a fixed wrapper script
// (wrapper.sh) that holds no operator data. The protocol variables and the
// inputs (SOLAR_INPUT_*, the SOLAR_INPUTS file) reach it over stdin as
// single-quoted shell assignments, written into a private 0700 directory
// (tmpfs when the node has one) and removed when the attempt ends; they
// never appear on a command line and never go through the SSH "env"
// request, which OpenSSH refuses unless AcceptEnv allows it. The script sees
// the node's login environment and the SOLAR_* variables only: the
// controller's environment is not forwarded.
//
// The script runs under /bin/sh in the cached base directory, in a process
// group of its own. The wrapper reports its exit status and result file on
// stdout after a marker made of a random nonce, which the script never
// sees; what comes before the marker is the script's own output.
//
// # Stopping remote work
//
// A watchdog in the wrapper ends the script's process group (SIGTERM, then
// SIGKILL after the grace time) when the controller says stop (a timeout,
// orch stop --kill, a second Ctrl-C), when stdin closes (the controller died or the
// connection was closed), when heartbeats stop arriving for three
// keepalive periods (a partition), or when a later attempt of the same
// resource asks it to (below). The SSH "signal" request is not used:
// OpenSSH ignores it for many logins.
//
// A new attempt of a resource never starts on a node beside an earlier
// one, even one whose controller the node does not know to be gone yet (a
// runner killed and resumed at once; a retry the moment a cut link
// heals). Every attempt keeps a record on the node,
// ~/.cache/solar/running/KEY ($XDG_CACHE_HOME when set), KEY a hash of the
// node's address and the resource's name (Attempt.Key), that names its
// process group by the wrapper's pid and start time and the kernel's boot
// id, so that a reused pid is never taken for it; a stop that kills the
// group notes when (KEY.end), so that a process that got the group's
// number since is not taken for it either. Before its script
// starts, a new attempt settles the record it finds: a finished attempt
// is let end (what its script left running, a service, stays); a running
// one is asked to stop as above, and its group is killed with SIGKILL if
// it is not gone after the grace and 1.5s more; the new attempt waits
// until no live process of the group is left and tells the task's log
// (a note, Attempt.Note). A group that outlives SIGKILL by 5s (a process
// in uninterruptible sleep, or one that became another user) fails the
// attempt, naming the group, and its record stays for the next attempt.
// The record is created with O_EXCL (the shell's noclobber), so of two
// attempts one makes it, and removed with the private directory: the
// common path costs no process. Check-mode attempts change nothing and
// keep no record.
//
// # Leftovers
//
// A run's first session on a node for each base (setup.sh, which looks
// for the base in the cache) sweeps what attempts and uploads that died
// left there: private directories whose wrapper is gone, at once; and,
// once more than an hour old, so that nothing under way or in the making
// is touched, uploads cut short whose shell is gone, records of attempts
// of which no process is left (neither the wrapper nor a member of the
// group that started while the attempt could run, as the next attempt
// would judge it, except that a finished attempt's group with members,
// a service, keeps its record), with their KEY.end notes, and notes with
// no record. A record is taken away by a rename and removed only if it is
// still the one judged; one that a new attempt put there meanwhile is put
// back. With nothing left over, the sweep costs no process; otherwise one
// find.
//
// # What a node needs
//
// A POSIX /bin/sh, GNU coreutils (head, mkdir, mktemp, mv -T, chmod, rm,
// sleep), tar and the /proc of Linux, where attempts are found. The sweep
// of leftovers uses find with -mindepth, -maxdepth and -mmin (GNU
// findutils, BusyBox); without it, the hour-old leftovers stay.
// The login shell must understand "exec /bin/sh -c '...'" (sh, bash, dash,
// ksh, zsh).
package ssh
