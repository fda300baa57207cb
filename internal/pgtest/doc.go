// Package pgtest starts real PostgreSQL servers for tests, so that solar's
// PostgreSQL store backend (store/pg) is tested against the server it meets
// in production rather than against an imitation.
//
// It owns, for as long as a server runs:
//
//   - a directory under the system's temporary directory holding the
//     cluster (initdb), its log, and the directory of its Unix socket: the
//     server listens on that socket only, unless Options.Listen names IP
//     addresses to listen on by TCP too (a free port; Server.TCPURL), for
//     clients of this machine and of the networks Options.Trust lets in,
//     such as runners in network namespaces across a veth pair;
//   - the postgres server process (pg_ctl start), with fsync on unless
//     Options.NoFsync says otherwise;
//   - a watchdog process that stops the server and removes the directory
//     when the test process ends without doing so (a panic, a timeout, a
//     SIGKILL): it waits for the end of a pipe only the test process holds.
//
// Start gives a test a server of its own; Shared gives it a fresh database
// on one server per test binary (initdb costs about a second); StartServer
// is for a TestMain that wants a server for every testscript.
//
// # Requirements
//
// initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin, as Debian's
// postgresql package installs them. Run as root, the server runs as the
// postgres user (runuser), which that package creates. When something is
// missing the test is skipped with an install hint, or fails when
// SOLAR_TEST_REQUIRE_ALL=1 is set, as CI does.
package pgtest
