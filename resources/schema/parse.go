package schema

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds nesting so hostile schema text cannot exhaust the stack;
// real inputs nest two or three levels.
const maxDepth = 64

// Parse parses schema text. Whitespace may separate any two tokens. Errors
// are *ParseError naming the text and the column of the problem, e.g.
// `bad schema "[str": expected ']' at column 5`.
func Parse(text string) (*Schema, error) {
	p := parser{text: text}
	s, err := p.schema()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.text) {
		return nil, p.errorf(p.pos, "unexpected %s after the schema", p.found())
	}
	return s, nil
}

// MustParse is Parse for schema text known to be valid, such as the inputs
// every resource has; it panics on an error.
func MustParse(text string) *Schema {
	s, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return s
}

type parser struct {
	text  string
	pos   int // byte offset of the next unread byte
	depth int
}

func (p *parser) schema() (*Schema, error) {
	p.skipSpace()
	if p.depth >= maxDepth {
		return nil, p.errorf(p.pos, "nesting deeper than %d levels", maxDepth)
	}
	if p.pos == len(p.text) {
		return nil, p.errorf(p.pos, "expected a schema")
	}
	var s *Schema
	var err error
	switch c := p.text[p.pos]; {
	case c == '[':
		s, err = p.list()
	case c == '{':
		s, err = p.object()
	case isNameStart(c):
		s, err = p.scalar()
	default:
		return nil, p.errorf(p.pos, "expected a schema, found %s", p.found())
	}
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.text) && p.text[p.pos] == '!' {
		s.Required = true
		p.pos++
	}
	return s, nil
}

func (p *parser) scalar() (*Schema, error) {
	start := p.pos
	word := p.name()
	switch word {
	case "str":
		return &Schema{Kind: Str}, nil
	case "int":
		return &Schema{Kind: Int}, nil
	case "float":
		return &Schema{Kind: Float}, nil
	case "bool":
		return &Schema{Kind: Bool}, nil
	}
	return nil, p.errorf(start, "unknown type %q (want str, int, float, bool, [T] or {k: T})", word)
}

func (p *parser) list() (*Schema, error) {
	p.pos++ // '['
	p.depth++
	elem, err := p.schema()
	p.depth--
	if err != nil {
		return nil, err
	}
	if err := p.expect(']'); err != nil {
		return nil, err
	}
	return &Schema{Kind: List, Elem: elem}, nil
}

func (p *parser) object() (*Schema, error) {
	p.pos++ // '{'
	s := &Schema{Kind: Object}
	for {
		p.skipSpace()
		start := p.pos
		if p.pos == len(p.text) || !isNameStart(p.text[p.pos]) {
			return nil, p.errorf(p.pos, "expected a key name%s", p.foundSuffix())
		}
		name := p.name()
		if s.field(name) != nil {
			return nil, p.errorf(start, "duplicate key %q", name)
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		p.depth++
		fs, err := p.schema()
		p.depth--
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, Field{Name: name, Schema: fs})
		p.skipSpace()
		if p.pos < len(p.text) {
			switch p.text[p.pos] {
			case ',':
				p.pos++
				continue
			case '}':
				p.pos++
				return s, nil
			}
		}
		return nil, p.errorf(p.pos, "expected ',' or '}'%s", p.foundSuffix())
	}
}

// name consumes [A-Za-z_][A-Za-z0-9_-]*; the caller has seen the first byte.
func (p *parser) name() string {
	start := p.pos
	p.pos++
	for p.pos < len(p.text) && isNameByte(p.text[p.pos]) {
		p.pos++
	}
	return p.text[start:p.pos]
}

func (p *parser) expect(c byte) error {
	p.skipSpace()
	if p.pos < len(p.text) && p.text[p.pos] == c {
		p.pos++
		return nil
	}
	return p.errorf(p.pos, "expected %s%s", strconv.QuoteRune(rune(c)), p.foundSuffix())
}

func (p *parser) skipSpace() {
	for p.pos < len(p.text) {
		switch p.text[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// found quotes the rune at the current position.
func (p *parser) found() string {
	r, _ := utf8.DecodeRuneInString(p.text[p.pos:])
	return strconv.QuoteRune(r)
}

// foundSuffix is ", found 'x'", or nothing at the end of the text, where the
// column already says the text ran out.
func (p *parser) foundSuffix() string {
	if p.pos == len(p.text) {
		return ""
	}
	return ", found " + p.found()
}

func (p *parser) errorf(at int, format string, args ...any) *ParseError {
	return &ParseError{
		Text:   p.text,
		Column: utf8.RuneCountInString(p.text[:at]) + 1,
		Msg:    fmt.Sprintf(format, args...),
	}
}

func isNameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isNameByte(c byte) bool {
	return isNameStart(c) || c == '-' || '0' <= c && c <= '9'
}
