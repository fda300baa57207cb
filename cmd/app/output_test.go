package app

import (
	"bytes"
	"strings"
	"testing"
)

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

func TestPaintOnlyWhenAsked(t *testing.T) {
	if got := Paint("ERROR", false); got != "ERROR" {
		t.Errorf("off: %q", got)
	}
	if got := Paint("ERROR", true); got != "\033[31mERROR\033[0m" {
		t.Errorf("on: %q", got)
	}
	if got := Paint("PENDING", true); got != "PENDING" {
		t.Errorf("PENDING has no colour: %q", got)
	}
	a := &App{IO: IO{ErrTTY: true, OutTTY: true}, Getenv: func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}}
	if a.Color() || a.ColorOut() {
		t.Error("NO_COLOR set, yet colour is on")
	}
	a.Getenv = func(string) string { return "" }
	if !a.Color() || !a.ColorOut() {
		t.Error("a terminal without NO_COLOR gets no colour")
	}
}

func TestEscapeKeepsControlCharactersOffTheTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain é value":      "plain é value",
		"clear\x1b[2Jscreen": `clear\x1b[2Jscreen`,
		"two\nlines\r":       `two\nlines\r`,
		"tab\tstays":         "tab\tstays",
		Paint("ERROR", true): Paint("ERROR", true),
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	var b bytes.Buffer
	if err := Table(&b, []string{"name", "value"}, [][]string{{"x", "a\x1b]0;pwned\x07b"}}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("a table printed control characters: %q", b.String())
	}
}
