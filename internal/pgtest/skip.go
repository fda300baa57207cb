package pgtest

import "testing"

// SkipOrFail ends t after StartServer failed: a skip with an install hint
// when PostgreSQL is missing, a failure under SOLAR_TEST_REQUIRE_ALL=1 or
// for any other reason.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	skipOrFail(t, err)
}
