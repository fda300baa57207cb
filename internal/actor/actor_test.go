package actor

import (
	"strings"
	"testing"
)

// TestOf: $SOLAR_ACTOR wins, cleaned to one line; without it the actor is
// user@host.
func TestOf(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := Of(env(map[string]string{"SOLAR_ACTOR": " ci-bot "})); got != "ci-bot" {
		t.Errorf("SOLAR_ACTOR: %q, want ci-bot", got)
	}
	if got := Of(env(map[string]string{"SOLAR_ACTOR": "a\nb\x1b[31m"})); got != "ab[31m" {
		t.Errorf("control characters: %q, want them dropped", got)
	}
	got := Of(env(nil))
	if !strings.HasSuffix(got, "@"+Host()) || strings.HasPrefix(got, "@") {
		t.Errorf("default %q, want user@%s", got, Host())
	}
}
