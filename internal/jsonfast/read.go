package jsonfast

import (
	"errors"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrUnusual means the input is not in the form the fast reader handles;
// the caller decodes it with encoding/json instead.
var ErrUnusual = errors.New("jsonfast: unusual input")

// Reader reads one JSON value from a byte slice. Its first failure sticks:
// every later call returns a zero value, and Err reports it.
type Reader struct {
	b   []byte
	i   int
	err error
	buf []byte
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first failure, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records ErrUnusual (a caller's field it does not know, say).
func (r *Reader) Fail() {
	if r.err == nil {
		r.err = ErrUnusual
	}
}

// End checks that only white space is left.
func (r *Reader) End() error {
	r.space()
	if r.err == nil && r.i != len(r.b) {
		r.err = ErrUnusual
	}
	return r.err
}

func (r *Reader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte that is not white space, or 0 at the end or
// after a failure.
func (r *Reader) peek() byte {
	if r.err != nil {
		return 0
	}
	r.space()
	if r.i >= len(r.b) {
		r.err = ErrUnusual
		return 0
	}
	return r.b[r.i]
}

func (r *Reader) expect(c byte) bool {
	if r.peek() != c {
		r.Fail()
		return false
	}
	r.i++
	return true
}

// Null reads a null if one is next and reports whether it did.
func (r *Reader) Null() bool {
	if r.peek() == 'n' && r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// Object reads an object, calling field for each key; field reads the
// value. The key's bytes are valid until field reads: switch on
// string(key), which costs no copy, or copy it first. Object reports
// whether the value was an object (false for null or a failure). Callers
// fail a repeated key (see Seen): encoding/json merges some kinds of
// repeated fields.
func (r *Reader) Object(field func(key []byte)) bool {
	if r.Null() {
		return false
	}
	if !r.expect('{') {
		return false
	}
	if r.peek() == '}' {
		r.i++
		return true
	}
	for r.err == nil {
		if r.peek() != '"' {
			r.Fail()
			return false
		}
		key := r.stringBytes(false)
		if !r.expect(':') {
			return false
		}
		field(key)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return r.err == nil
		default:
			r.Fail()
		}
	}
	return false
}

// Seen records field bit as read in *mask, and fails the read if it was
// read before.
func (r *Reader) Seen(mask *uint32, bit uint32) {
	if *mask&bit != 0 {
		r.Fail()
	}
	*mask |= bit
}

// Array reads an array, calling elem for each element; elem reads it. It
// reports whether the value was an array (false for null or a failure).
func (r *Reader) Array(elem func()) bool {
	if r.Null() {
		return false
	}
	if !r.expect('[') {
		return false
	}
	if r.peek() == ']' {
		r.i++
		return true
	}
	for r.err == nil {
		elem()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return r.err == nil
		default:
			r.Fail()
		}
	}
	return false
}

// String reads a string; null reads as "".
func (r *Reader) String() string {
	b := r.stringBytes(false)
	if b == nil {
		return ""
	}
	return string(b)
}

// StringOf reads a string and returns the one of known it equals, if any,
// without a copy of its own: for values a few texts take again and again.
func (r *Reader) StringOf(known ...string) string {
	b := r.stringBytes(false)
	for _, k := range known {
		if string(b) == k {
			return k
		}
	}
	if b == nil {
		return ""
	}
	return string(b)
}

// stringBytes reads a string and returns its bytes, valid until the next
// call; raw keeps the quotes and escapes as written (for time.Time).
func (r *Reader) stringBytes(raw bool) []byte {
	if r.Null() {
		return nil
	}
	if !r.expect('"') {
		return nil
	}
	start := r.i
	// The common case: no escape, all ASCII.
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := r.b[start:r.i]
			r.i++
			if raw {
				return r.b[start-1 : r.i]
			}
			return s
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		r.i++
	}
	if raw {
		r.Fail()
		return nil
	}
	r.buf = append(r.buf[:0], r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return r.buf
		case c < 0x20:
			r.Fail()
			return nil
		case c == '\\':
			if !r.escape() {
				return nil
			}
		case c < utf8.RuneSelf:
			r.buf = append(r.buf, c)
			r.i++
		default:
			ru, size := utf8.DecodeRune(r.b[r.i:])
			if ru == utf8.RuneError && size == 1 {
				r.Fail() // encoding/json replaces it: leave that to it
				return nil
			}
			r.buf = append(r.buf, r.b[r.i:r.i+size]...)
			r.i += size
		}
	}
	r.Fail()
	return nil
}

// escape reads one escape sequence into r.buf.
func (r *Reader) escape() bool {
	if r.i+1 >= len(r.b) {
		r.Fail()
		return false
	}
	c := r.b[r.i+1]
	r.i += 2
	switch c {
	case '"', '\\', '/':
		r.buf = append(r.buf, c)
	case 'b':
		r.buf = append(r.buf, '\b')
	case 'f':
		r.buf = append(r.buf, '\f')
	case 'n':
		r.buf = append(r.buf, '\n')
	case 'r':
		r.buf = append(r.buf, '\r')
	case 't':
		r.buf = append(r.buf, '\t')
	case 'u':
		ru, ok := r.hex4()
		if !ok {
			return false
		}
		if utf16.IsSurrogate(ru) {
			// A pair makes one rune; a lone half is unusual.
			if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
				r.i += 2
				lo, ok := r.hex4()
				if !ok {
					return false
				}
				if dec := utf16.DecodeRune(ru, lo); dec != utf8.RuneError {
					r.buf = utf8.AppendRune(r.buf, dec)
					return true
				}
			}
			r.Fail()
			return false
		}
		r.buf = utf8.AppendRune(r.buf, ru)
	default:
		r.Fail()
		return false
	}
	return true
}

func (r *Reader) hex4() (rune, bool) {
	if r.i+4 > len(r.b) {
		r.Fail()
		return 0, false
	}
	var v rune
	for _, c := range r.b[r.i : r.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			r.Fail()
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	r.i += 4
	return v, true
}

// number returns the text of the number that is next.
func (r *Reader) number() []byte {
	c := r.peek()
	if c != '-' && (c < '0' || c > '9') {
		r.Fail()
		return nil
	}
	start := r.i
	r.i++
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case '0' <= c && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
			r.i++
			continue
		}
		break
	}
	return r.b[start:r.i]
}

// Uint64 reads an unsigned integer; null reads as 0.
func (r *Reader) Uint64() uint64 {
	if r.Null() {
		return 0
	}
	text := r.number()
	n, err := strconv.ParseUint(string(text), 10, 64)
	if err != nil || !validNumber(text) {
		r.Fail()
	}
	return n
}

// Int reads an integer; null reads as 0.
func (r *Reader) Int() int {
	if r.Null() {
		return 0
	}
	text := r.number()
	n, err := strconv.ParseInt(string(text), 10, strconv.IntSize)
	if err != nil || !validNumber(text) {
		r.Fail()
	}
	return int(n)
}

// Bool reads true or false; null reads as false.
func (r *Reader) Bool() bool {
	switch r.peek() {
	case 't':
		if r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "true" {
			r.i += 4
			return true
		}
	case 'f':
		if r.i+5 <= len(r.b) && string(r.b[r.i:r.i+5]) == "false" {
			r.i += 5
			return false
		}
	case 'n':
		if r.Null() {
			return false
		}
	}
	r.Fail()
	return false
}

// Time reads a time as time.Time's UnmarshalJSON does; null reads as the
// zero time.
func (r *Reader) Time() time.Time {
	var t time.Time
	if r.Null() {
		return t
	}
	b := r.stringBytes(true)
	if b == nil {
		return t
	}
	if err := t.UnmarshalJSON(b); err != nil {
		r.Fail()
	}
	return t
}

// Strings reads an array of strings; null reads as nil.
func (r *Reader) Strings() []string {
	var out []string
	if r.Array(func() { out = append(out, r.String()) }) && out == nil {
		out = []string{}
	}
	return out
}

// StringMap reads an object of strings; null reads as nil.
func (r *Reader) StringMap() map[string]string {
	var out map[string]string
	if r.Object(func(k []byte) {
		if out == nil {
			out = map[string]string{}
		}
		key := string(k)
		if _, dup := out[key]; dup {
			r.Fail()
		}
		out[key] = r.String()
	}) && out == nil {
		out = map[string]string{}
	}
	return out
}

// Value reads any value as encoding/json does into an interface: objects
// as map[string]any, arrays as []any, numbers as float64.
func (r *Reader) Value() any {
	switch c := r.peek(); {
	case c == '{':
		m := map[string]any{}
		r.Object(func(k []byte) {
			key := string(k)
			if _, dup := m[key]; dup {
				r.Fail()
			}
			m[key] = r.Value()
		})
		return m
	case c == '[':
		a := []any{}
		r.Array(func() { a = append(a, r.Value()) })
		return a
	case c == '"':
		return r.String()
	case c == 't' || c == 'f':
		return r.Bool()
	case c == 'n':
		if r.Null() {
			return nil
		}
	case c == '-' || ('0' <= c && c <= '9'):
		text := r.number()
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil || !validNumber(text) {
			r.Fail()
		}
		return f
	}
	r.Fail()
	return nil
}

// Skip reads over any value.
func (r *Reader) Skip() {
	switch c := r.peek(); {
	case c == '{':
		r.Object(func([]byte) { r.Skip() })
	case c == '[':
		r.Array(r.Skip)
	case c == '"':
		r.stringBytes(false)
	case c == 't' || c == 'f':
		r.Bool()
	case c == 'n':
		if !r.Null() {
			r.Fail()
		}
	case c == '-' || ('0' <= c && c <= '9'):
		if !validNumber(r.number()) {
			r.Fail()
		}
	default:
		r.Fail()
	}
}

// validNumber checks JSON's number grammar, which strconv is looser about
// (it takes "1.", ".5", "+1", hex, underscores, "inf").
func validNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
