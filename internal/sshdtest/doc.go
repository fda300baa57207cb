// Package sshdtest starts real OpenSSH servers (/usr/sbin/sshd) for tests,
// so that solar's SSH transport is tested against the server it meets in
// production rather than against a Go imitation.
//
// It owns, for the duration of one test:
//
//   - sshd processes, each with its own directory (t.TempDir) holding its
//     sshd_config, host key, an authorized client key and its log;
//   - the unprivileged login user "solartest", created once per machine and
//     shared by every test and every test process;
//   - network namespaces joined to the host by a veth pair, whose link can
//     be cut silently to simulate a network partition, or slowed to
//     simulate a thin line.
//
// Everything it starts is stopped, and everything it creates except the
// user is removed, by t.Cleanup.
//
// # Requirements
//
// Tests that use it need Linux, root, /usr/sbin/sshd (openssh-server) and,
// for namespaces, ip and tc (iproute2). When one is missing the test is
// skipped with an install hint, or fails when SOLAR_TEST_REQUIRE_ALL=1 is
// set, as CI does, so that a broken CI image cannot pass by skipping.
package sshdtest
