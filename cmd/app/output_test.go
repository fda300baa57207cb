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
	for _, tt := range []struct{ in, want string }{
		{"plain é value, 日本 ✓", "plain é value, 日本 ✓"},
		{`C:\dir`, `C:\dir`}, // nothing to escape: backslashes stay single
		{"clear\x1b[2Jscreen", `clear\x1b[2Jscreen`},
		{"two\nlines\r", `two\nlines\r`},
		{"nul\x00bell\x07del\x7f", `nul\x00bell\adel\x7f`},
		{"c1 csi \u009b2J", `c1 csi \u009b2J`},
		{"not utf-8 \x9b2J", `not utf-8 \x9b2J`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"tab\tstays", "tab\tstays"},
		// Once something is escaped, a backslash is doubled, so that a
		// literal \x1b in data cannot pass for an escaped ESC.
		{"a\\x1b and \x1b", `a\\x1b and \x1b`},
		// Colour is solar's to add, not data's.
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{Paint("ERROR", true), `\x1b[31mERROR\x1b[0m`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTableEscapesEveryCell(t *testing.T) {
	var b bytes.Buffer
	rows := [][]string{
		{"x", "a\x1b]0;pwned\x07b"},
		{"tab", "a\tb"},
		{"fake colour", "\x1b[31mERROR\x1b[0m\x1b[2J"},
		{"painted", Paint("ERROR", true)},
	}
	if err := Table(&b, []string{"name", "value"}, rows); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NAME         VALUE",
		`x            a\x1b]0;pwned\ab`,
		`tab          a\tb`,
		`fake colour  \x1b[31mERROR\x1b[0m\x1b[2J`,
		// tablewriter pads a coloured cell, then resets the colour again.
		"painted      " + Paint("ERROR", true),
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("table has %d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) || strings.Contains(lines[i][len(w):], "\x1b[2J") {
			t.Errorf("table line %d:\n got %q\nwant %q", i, lines[i], w)
		}
	}
	if got := strings.Count(b.String(), "\x1b"); got != 3 {
		t.Errorf("table holds %d ESC bytes, want the 3 of the painted status and its reset:\n%q", got, b.String())
	}
}
