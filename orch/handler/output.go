package handler

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// mask replaces a secret in every string this package returns.
const mask = "********"

const (
	// tailMax is how much of each of stdout and stderr an attempt keeps:
	// enough for the end of any sane log, bounded whatever a script prints.
	tailMax = 64 << 10
	// errLines and errBytes bound the stderr tail quoted in an error
	// message, which ends up in one cell of a report.
	errLines = 10
	errBytes = 2 << 10
)

// tail is an io.Writer keeping the last tailMax bytes written to it. It
// holds up to twice that before dropping old bytes, so that the copying
// is amortized.
type tail struct {
	buf []byte
	cut bool // some bytes were dropped from the front
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if n >= tailMax {
		t.buf = append(t.buf[:0], p[n-tailMax:]...)
		t.cut = true
		return n, nil
	}
	if len(t.buf)+n > 2*tailMax {
		keep := tailMax - n
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
		t.cut = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// ReadFrom reads r into the buffer directly. io.Copy prefers it to Write,
// which spares each attempt the two 32 KiB copy buffers os/exec would
// otherwise allocate for stdout and stderr, most of which a quiet script
// never fills.
func (t *tail) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	for {
		if len(t.buf) == cap(t.buf) {
			if cap(t.buf) >= 2*tailMax {
				t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-tailMax:])]
				t.cut = true
			} else {
				grown := make([]byte, len(t.buf), min(max(2*cap(t.buf), 512), 2*tailMax))
				copy(grown, t.buf)
				t.buf = grown
			}
		}
		m, err := r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+m]
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// text returns the kept bytes with secrets masked. When the front was
// dropped, the cut may have gone through a secret, leaving its end where
// no mask would match it; so text also drops as many bytes as the longest
// secret could have left, and the partial line they start.
func (t *tail) text(m *masker) string {
	b, cut := t.buf, t.cut
	if len(b) > tailMax {
		b, cut = b[len(b)-tailMax:], true
	}
	if cut {
		// The partial first line goes, unless it is the only one: then
		// its end is the best account of what happened (a failing
		// script's last words, on one very long line).
		skip := m.longest - 1
		if i := bytes.IndexByte(b, '\n'); i >= skip && len(bytes.TrimSpace(b[i+1:])) > 0 {
			skip = i + 1
		}
		b = b[min(max(skip, 0), len(b)):]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return m.apply(string(b))
}

// masker replaces secrets with mask.
type masker struct {
	secrets []string
	longest int // length of the longest secret, in bytes
	r       *strings.Replacer
}

// addValue adds the forms in which a secret input or output value may show
// up in a script's output: its environment form, and for lists and
// objects also each string inside them.
func (m *masker) addValue(v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		m.addString(x)
		return
	case []any, map[string]any:
		m.addStrings(x)
	}
	if text, err := appendEnvValue(nil, v); err == nil {
		m.addString(string(text))
	}
}

func (m *masker) addStrings(v any) {
	switch x := v.(type) {
	case string:
		m.addString(x)
	case []any:
		for _, e := range x {
			m.addStrings(e)
		}
	case map[string]any:
		for _, e := range x {
			m.addStrings(e)
		}
	}
}

// addString adds s, its JSON-escaped form (a script may print the inputs
// file), and each line of a multi-line secret (a script may print a key
// file line by line).
func (m *masker) addString(s string) {
	if s == "" {
		return
	}
	m.secrets = append(m.secrets, s)
	if q, err := appendJSON(nil, s); err == nil && len(q) >= 2 {
		if esc := string(q[1 : len(q)-1]); esc != s {
			m.secrets = append(m.secrets, esc)
		}
	}
	if strings.IndexByte(s, '\n') >= 0 {
		for line := range strings.SplitSeq(s, "\n") {
			if line = strings.TrimSuffix(line, "\r"); line != "" {
				m.secrets = append(m.secrets, line)
			}
		}
	}
}

// build readies the masker once all secrets are added. A Replacer tries
// its pairs in order at each position, so the longest secrets go first: a
// secret that contains another is masked whole.
func (m *masker) build() {
	if len(m.secrets) == 0 {
		return
	}
	slices.SortFunc(m.secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	m.secrets = slices.Compact(m.secrets)
	m.longest = len(m.secrets[0])
	pairs := make([]string, 0, 2*len(m.secrets))
	for _, s := range m.secrets {
		pairs = append(pairs, s, mask)
	}
	m.r = strings.NewReplacer(pairs...)
}

func (m *masker) apply(s string) string {
	if m.r == nil {
		return s
	}
	return m.r.Replace(s)
}

// lastLines returns the last non-empty lines of s, at most errLines of them
// and about errBytes in all, for an error message. A last line longer than
// that keeps its end, after an ellipsis.
func lastLines(s string) string {
	var keep []string // last line first
	size := 0
	for s != "" && len(keep) < errLines {
		line := s
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			line, s = s[i+1:], s[:i]
		} else {
			s = ""
		}
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if size+len(line) > errBytes {
			if len(keep) == 0 {
				i := len(line) - errBytes
				for i < len(line) && !utf8.RuneStart(line[i]) {
					i++
				}
				keep = append(keep, "…"+line[i:])
			}
			break
		}
		keep = append(keep, line)
		size += len(line) + 1
	}
	slices.Reverse(keep)
	return strings.Join(keep, "\n")
}
