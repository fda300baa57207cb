package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// FormatVersion is the version of every --json document solar prints.
// It rises when the meaning of a field changes (added fields do not
// raise it). 2: in orch show, the diff of a task not yet run is the one
// recorded when the plan was made, no longer the staged log's now.
const FormatVersion = 2

// Mask replaces a sensitive value in every output.
const Mask = "********"

// JSON writes v indented, followed by a newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Table writes rows under a header as a plain table for humans: no borders,
// columns two spaces apart, no trailing blanks.
func Table(w io.Writer, header []string, rows [][]string) error {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
			Symbols: tw.NewSymbols(tw.StyleNone),
		})),
		tablewriter.WithHeaderAutoFormat(tw.On),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	t.Header(header)
	safe := make([][]string, len(rows))
	for i, row := range rows {
		safe[i] = make([]string, len(row))
		for j, cell := range row {
			safe[i][j] = escapeCell(cell)
		}
	}
	if err := t.Bulk(safe); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// Count renders "1 rule", "2 rules", "0 entries".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok && stem != "" && !strings.ContainsAny(stem[len(stem)-1:], "aeiou") {
		return fmt.Sprintf("%d %sies", n, stem)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Escape keeps data (a value holding an escape sequence or a line break, a
// file name, a script's output) from acting on the operator's terminal. A
// string with nothing to hide is returned as it is; otherwise it is written
// as strconv.Quote would, without the quotes: control characters (C0 and
// C1, such as \x1b, \n, \u009b), bytes that are not UTF-8 and the
// invisible bidirectional controls become Go escapes, a backslash is
// doubled so that the result reads back unambiguously, and ordinary
// unicode stays as it is. A tab is kept: it is harmless on a terminal and
// common in script output. Every human view prints data through Escape
// (Table does it per cell); JSON needs nothing, encoding/json escapes.
func Escape(s string) string {
	return escape(s, true)
}

// escape is Escape, with keepTab false for table cells, where a tab would
// break the columns.
func escape(s string, keepTab bool) string {
	if clean(s, keepTab) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case hidden(r, keepTab):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s has nothing escape would change (backslashes
// alone are left as they are).
func clean(s string, keepTab bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				if c != '\t' || !keepTab {
					return false
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || hidden(r, keepTab) {
			return false
		}
		i += size
	}
	return true
}

// hidden reports whether r must not reach a terminal as it is: a control
// character, or a bidirectional control that reorders what follows it.
func hidden(r rune, keepTab bool) bool {
	if r == '\t' {
		return !keepTab
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// escapeCell escapes a table cell, keeping a status coloured by Paint (the
// only control sequences solar itself writes into a cell) as it is.
func escapeCell(cell string) string {
	if isPainted(cell) {
		return cell
	}
	return escape(cell, false)
}

// isPainted reports whether cell is exactly what Paint writes for a status
// on a terminal, and nothing that only looks like it.
func isPainted(cell string) bool {
	rest, ok := strings.CutSuffix(cell, "\033[0m")
	if !ok || !strings.HasPrefix(rest, "\033[") {
		return false
	}
	_, status, ok := strings.Cut(rest, "m")
	return ok && clean(status, false) && Paint(status, true) == cell
}
