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
const FormatVersion = 1

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
			safe[i][j] = Escape(cell)
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

// Escape keeps control characters in data (a value holding an escape
// sequence or a line break) off the operator's terminal: they are written
// as Go escapes (\x1b, \n). Colour that solar itself adds (Paint) is kept.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if p := paintPrefix(s[i:]); p > 0 {
			b.WriteString(s[i : i+p])
			i += p
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsControl(r) && r != '\t' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// paintPrefix returns the length of a colour code Paint writes at the start
// of s, or 0.
func paintPrefix(s string) int {
	for _, code := range []string{"\033[0m", "\033[2m", "\033[31m", "\033[32m", "\033[33m"} {
		if strings.HasPrefix(s, code) {
			return len(code)
		}
	}
	return 0
}
