// Package sshdtest starts real OpenSSH sshd servers for tests, on loopback
// addresses or inside network namespaces joined to the host by a veth pair,
// with generated host and client keys and an unprivileged login user.
//
// Tests that need a component this machine lacks skip with an install
// hint, or fail when SOLAR_TEST_REQUIRE_ALL=1 (CI sets it), through
// Require.
package sshdtest
