package invalid

import (
	"errors"
	"fmt"
	"testing"
)

// TestNew: a sentinel keeps its message, is itself under errors.Is when
// wrapped, wraps ErrInput, and is not taken for another sentinel.
func TestNew(t *testing.T) {
	a, b := New("no such thing"), New("no such thing")
	err := fmt.Errorf("%w: %q (see solar thing list)", a, "x")
	if a.Error() != "no such thing" {
		t.Errorf("message = %q", a.Error())
	}
	if !errors.Is(err, a) || !errors.Is(err, ErrInput) {
		t.Errorf("errors.Is(%v, sentinel) = %v, (ErrInput) = %v; want both", err, errors.Is(err, a), errors.Is(err, ErrInput))
	}
	if errors.Is(err, b) {
		t.Error("two sentinels with the same message are taken for each other")
	}
	if errors.Is(errors.New("disk full"), ErrInput) {
		t.Error("an unrelated error wraps ErrInput")
	}
}
