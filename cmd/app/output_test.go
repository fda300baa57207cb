package app

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "rule", "0 rules"},
		{1, "rule", "1 rule"},
		{2, "task", "2 tasks"},
		{1, "entry", "1 entry"},
		{3, "entry", "3 entries"},
		{2, "key", "2 keys"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := Count(tc.n, tc.noun); got != tc.want {
				t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
			}
		})
	}
}
