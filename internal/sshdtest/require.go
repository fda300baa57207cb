package sshdtest

import (
	"os"
	"testing"
)

// requireAllEnv names the environment variable that turns every skip for a
// missing component into a failure. CI sets it to "1": there, a missing
// component is a broken image, not a reason to pass.
const requireAllEnv = "SOLAR_TEST_REQUIRE_ALL"

// Require ends t because component, which it needs, is missing on this
// machine; the caller has checked. hint says how to get it, such as
// "apt-get install openssh-server". The test is skipped, or failed when
// SOLAR_TEST_REQUIRE_ALL=1. Either way Require does not return.
//
// It is meant for any real component a test needs (sshd, ip netns, root),
// not only for this package's own.
func Require(t testing.TB, component, hint string) {
	t.Helper()
	if os.Getenv(requireAllEnv) == "1" {
		t.Fatalf("%s is required (%s=1): %s", component, requireAllEnv, hint)
	}
	t.Skipf("%s not available: %s", component, hint)
}
