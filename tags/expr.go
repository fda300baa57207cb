package tags

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ExprError says why and where a tag expression failed to parse. It wraps
// ErrBadExpr.
type ExprError struct {
	Expr string // the expression as given
	Col  int    // 1-based column, counted in characters, of the problem
	Msg  string // what is wrong, and where it helps, what to write instead
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("%v %q: %s at column %d", ErrBadExpr, e.Expr, e.Msg, e.Col)
}

func (e *ExprError) Unwrap() error { return ErrBadExpr }

// Expr is a parsed tag expression. It is immutable, so one Expr may be
// matched from many goroutines at once. A nil *Expr matches every set, which
// lets callers treat "no expression given" as "select everything".
type Expr struct {
	root *node
}

type op uint8

const (
	opEq      op = iota // key=value
	opPresent           // key=*
	opNot
	opAnd
	opOr
)

// node is one operator or term. And and Or are n-ary and never have a child
// of their own kind (the parser flattens them), which keeps Match shallow
// and gives String one canonical form per expression.
type node struct {
	op    op
	key   string
	value string
	kids  []*node
}

// maxDepth bounds nesting of '!' and '(' so a hostile or generated
// expression cannot exhaust the stack; no operator writes anything close.
const maxDepth = 100

// ParseExpr parses a tag expression:
//
//	k=v     key k has value v
//	k       key k has the empty value, exactly like the bare tag k
//	k=*     key k is present, whatever its value
//	!x      x does not hold
//	x & y   both hold
//	x | y   either holds
//	(x)     grouping
//
// Precedence is ! over & over |. Whitespace may separate tokens. The empty
// expression is an error: to select everything, pass no expression (a nil
// *Expr). Errors are *ExprError.
func ParseExpr(s string) (*Expr, error) {
	p := &parser{src: s}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, p.errAt(0, "expression is empty")
	}
	root, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errAfterOperand()
	}
	return &Expr{root: root}, nil
}

// Match reports whether the set satisfies the expression. It does not
// allocate.
func (e *Expr) Match(s Set) bool {
	if e == nil {
		return true
	}
	return e.root.match(s)
}

func (n *node) match(s Set) bool {
	switch n.op {
	case opEq:
		v, ok := s[n.key]
		return ok && v == n.value
	case opPresent:
		_, ok := s[n.key]
		return ok
	case opNot:
		return !n.kids[0].match(s)
	case opAnd:
		for _, k := range n.kids {
			if !k.match(s) {
				return false
			}
		}
		return true
	default: // opOr
		for _, k := range n.kids {
			if k.match(s) {
				return true
			}
		}
		return false
	}
}

// String returns the canonical form: single spaces around '&' and '|', no
// space after '!', a bare term for an empty value, and only the parentheses
// precedence needs. ParseExpr(e.String()) gives an equivalent expression with
// the same String. A nil *Expr renders as "".
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	e.root.write(&b)
	return b.String()
}

func (n *node) write(b *strings.Builder) {
	switch n.op {
	case opEq:
		b.WriteString(n.key)
		if n.value != "" {
			b.WriteByte('=')
			b.WriteString(n.value)
		}
	case opPresent:
		b.WriteString(n.key)
		b.WriteString("=*")
	case opNot:
		b.WriteByte('!')
		n.kids[0].writeOperand(b, opNot)
	case opAnd, opOr:
		sep := " & "
		if n.op == opOr {
			sep = " | "
		}
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			k.writeOperand(b, n.op)
		}
	}
}

// writeOperand writes n as an operand of parent, in parentheses when n binds
// more loosely than parent. The op constants are ordered so that a larger
// value binds more loosely; an n-ary child of its own kind cannot occur after
// adopt, but would be parenthesized rather than silently merged.
func (n *node) writeOperand(b *strings.Builder, parent op) {
	if n.op > parent || n.op >= opAnd && n.op == parent {
		b.WriteByte('(')
		n.write(b)
		b.WriteByte(')')
		return
	}
	n.write(b)
}

// Required returns the positive terms every matching set must carry: the
// k=v and k=* terms at the conjunctive top level of the expression, in the
// order written, without duplicates. A k=* term comes back with value "*",
// which no tag can have. The result is nil when no such term exists, for
// example when the top level is '|' or a negation; callers with an index
// can then narrow their candidates only when it is not nil, and must still
// call Match on each candidate.
func (e *Expr) Required() [][2]string {
	if e == nil {
		return nil
	}
	terms := []*node{e.root}
	if e.root.op == opAnd {
		terms = e.root.kids
	}
	var out [][2]string
	for _, t := range terms {
		var kv [2]string
		switch t.op {
		case opEq:
			kv = [2]string{t.key, t.value}
		case opPresent:
			kv = [2]string{t.key, "*"}
		default:
			continue
		}
		if !slices.Contains(out, kv) {
			out = append(out, kv)
		}
	}
	return out
}

// ParseAny parses several expressions (-t given more than once) into one
// that holds when any of them does: their union. None gives nil, which
// matches everything. An error names the expression it is in.
func ParseAny(srcs []string) (*Expr, error) {
	if len(srcs) == 0 {
		return nil, nil
	}
	or := &node{op: opOr}
	for _, src := range srcs {
		e, err := ParseExpr(src)
		if err != nil {
			return nil, err
		}
		if e.root.op == opOr {
			or.kids = append(or.kids, e.root.kids...) // stay flat
		} else {
			or.kids = append(or.kids, e.root)
		}
	}
	if len(or.kids) == 1 {
		return &Expr{root: or.kids[0]}, nil
	}
	return &Expr{root: or}, nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokTerm
	tokAnd
	tokOr
	tokNot
	tokLParen
	tokRParen
)

type token struct {
	kind tokKind
	pos  int    // byte offset in the source
	text string // source text of the token
	node *node  // for tokTerm
}

// describe names the token in a message.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end"
	case tokTerm:
		return fmt.Sprintf("%q", t.text)
	}
	return "'" + t.text + "'"
}

// parser is a recursive-descent parser with one token of lookahead. prev is
// kept so errors can say what a missing tag should have followed; before the
// first token it is the zero token, whose kind tokEOF stands for "the start".
type parser struct {
	src   string
	pos   int
	tok   token
	prev  token
	depth int
}

func (p *parser) errAt(off int, format string, args ...any) *ExprError {
	return &ExprError{
		Expr: p.src,
		Col:  utf8.RuneCountInString(p.src[:off]) + 1,
		Msg:  fmt.Sprintf(format, args...),
	}
}

// parseOr parses x ('|' x)*.
func (p *parser) parseOr() (*node, error) {
	return p.parseList(opOr, tokOr, p.parseAnd)
}

// parseAnd parses x ('&' x)*.
func (p *parser) parseAnd() (*node, error) {
	return p.parseList(opAnd, tokAnd, p.parseUnary)
}

func (p *parser) parseList(o op, sep tokKind, operand func() (*node, error)) (*node, error) {
	first, err := operand()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != sep {
		return first, nil
	}
	n := &node{op: o}
	n.adopt(first)
	for p.tok.kind == sep {
		if err := p.next(); err != nil {
			return nil, err
		}
		k, err := operand()
		if err != nil {
			return nil, err
		}
		n.adopt(k)
	}
	return n, nil
}

// adopt appends k to n's operands, splicing in k's own operands when it is
// the same n-ary operator (from parentheses), since (a & b) & c is a & b & c.
func (n *node) adopt(k *node) {
	if k.op == n.op {
		n.kids = append(n.kids, k.kids...)
		return
	}
	n.kids = append(n.kids, k)
}

// parseUnary parses '!' x, '(' x ')' or a term.
func (p *parser) parseUnary() (*node, error) {
	switch p.tok.kind {
	case tokTerm:
		n := p.tok.node
		return n, p.next()
	case tokNot, tokLParen:
		if p.depth == maxDepth {
			return nil, p.errAt(p.tok.pos, "expression nests more than %d levels deep", maxDepth)
		}
		p.depth++
		defer func() { p.depth-- }()
		open := p.tok
		if err := p.next(); err != nil {
			return nil, err
		}
		if open.kind == tokNot {
			k, err := p.parseUnary()
			if err != nil {
				return nil, err
			}
			return &node{op: opNot, kids: []*node{k}}, nil
		}
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tokRParen:
			return n, p.next()
		case tokEOF:
			return nil, p.errAt(open.pos, "unclosed '('")
		}
		return nil, p.errAfterOperand()
	}
	return nil, p.errMissingTag()
}

// errMissingTag reports the current token where a tag (or '!' or '(') was
// needed.
func (p *parser) errMissingTag() *ExprError {
	t := p.tok
	if p.prev.kind == tokEOF {
		return p.errAt(t.pos, "expected a tag, found %s", t.describe())
	}
	if t.kind == p.prev.kind && t.pos == p.prev.pos+1 && (t.kind == tokAnd || t.kind == tokOr) {
		return p.errAt(p.prev.pos, "'%s%s' is not an operator: write a single '%s'", t.text, t.text, t.text)
	}
	if t.kind == tokEOF {
		return p.errAt(t.pos, "expected a tag after '%s'", p.prev.text)
	}
	return p.errAt(t.pos, "expected a tag after '%s', found %s", p.prev.text, t.describe())
}

// errAfterOperand reports the current token where an operator, ')' or the
// end was needed, i.e. just after a complete operand.
func (p *parser) errAfterOperand() *ExprError {
	t := p.tok
	if t.kind == tokRParen {
		return p.errAt(t.pos, "unmatched ')'")
	}
	if t.kind == tokTerm && p.prev.kind == tokTerm && strings.HasSuffix(p.prev.text, "=") {
		return p.errAt(t.pos, "missing '&' or '|' before %s (no spaces are allowed after '=')", t.describe())
	}
	return p.errAt(t.pos, "missing '&' or '|' before %s", t.describe())
}

// next advances to the following token. Malformed terms are reported here,
// at the offending character, because only the lexer knows it.
func (p *parser) next() error {
	p.prev = p.tok
	s := p.src
	for p.pos < len(s) {
		r, size := utf8.DecodeRuneInString(s[p.pos:])
		if !unicode.IsSpace(r) {
			break
		}
		p.pos += size
	}
	start := p.pos
	if start == len(s) {
		p.tok = token{kind: tokEOF, pos: start}
		return nil
	}
	kind := tokTerm
	switch s[start] {
	case '&':
		kind = tokAnd
	case '|':
		kind = tokOr
	case '!':
		kind = tokNot
	case '(':
		kind = tokLParen
	case ')':
		kind = tokRParen
	}
	if kind != tokTerm {
		p.pos++
		p.tok = token{kind: kind, pos: start, text: s[start:p.pos]}
		return nil
	}
	n, err := p.lexTerm()
	if err != nil {
		return err
	}
	p.tok = token{kind: tokTerm, pos: start, text: s[start:p.pos], node: n}
	return nil
}

// lexTerm scans k, k=v or k=* at p.pos and checks that what follows can end
// a term, so "k=a*b" fails at the '*' rather than as a missing operator.
func (p *parser) lexTerm() (*node, error) {
	s := p.src
	start := p.pos
	kl := keyLen(s[start:])
	if kl == 0 {
		return nil, p.errBadStart()
	}
	n := &node{op: opEq, key: s[start : start+kl]}
	p.pos += kl
	inKey := true
	if p.pos < len(s) && s[p.pos] == '=' {
		inKey = false
		p.pos++
		if p.pos < len(s) && s[p.pos] == '*' {
			n.op = opPresent
			p.pos++
			if r, _ := utf8.DecodeRuneInString(s[p.pos:]); p.pos < len(s) && !endsTerm(r) && r != ',' && !unicode.IsControl(r) {
				return nil, p.errAt(p.pos-1, "'*' must be the whole value, as in k=*")
			}
		} else if p.pos < len(s) && s[p.pos] == '=' {
			return nil, p.errAt(p.pos, "'==' is not an operator: a tag test is k=v, with one '='")
		} else {
			vl, _ := valueLen(s[p.pos:])
			n.value = s[p.pos : p.pos+vl]
			p.pos += vl
		}
	}
	if p.pos == len(s) {
		return n, nil
	}
	r, size := utf8.DecodeRuneInString(s[p.pos:])
	switch {
	case endsTerm(r):
		return n, nil
	case r == ',':
		return nil, p.errAt(p.pos, "',' does not combine tags in an expression: use '&' or '|'")
	case r == utf8.RuneError && size <= 1:
		return nil, p.errAt(p.pos, "invalid UTF-8")
	case inKey:
		if r == '*' {
			return nil, p.errAt(p.pos, "'*' is only a whole value, as in k=*")
		}
		return nil, p.errAt(p.pos, "%q is not allowed in a tag key (letters, digits and _ . : / - are)", r)
	case unicode.IsControl(r):
		return nil, p.errAt(p.pos, "%q is not allowed in a tag value (control character)", r)
	default: // '*' after a value
		return nil, p.errAt(p.pos, "'*' must be the whole value, as in k=*")
	}
}

// errBadStart reports a character at p.pos that cannot begin a term.
func (p *parser) errBadStart() *ExprError {
	s := p.src[p.pos:]
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == '=' && p.prev.kind == tokTerm:
		return p.errAt(p.pos, "unexpected '=': write a tag as k=v, without spaces")
	case r == '=':
		return p.errAt(p.pos, "missing tag key before '='")
	case r == ',':
		return p.errAt(p.pos, "',' does not combine tags in an expression: use '&' or '|'")
	case r == '*':
		return p.errAt(p.pos, "'*' is only a whole value, as in k=*")
	case r == utf8.RuneError && size <= 1:
		return p.errAt(p.pos, "invalid UTF-8")
	}
	return p.errAt(p.pos, "%q cannot start a tag: keys start with a letter, digit or '_'", r)
}

// endsTerm reports whether r may directly follow a complete term.
func endsTerm(r rune) bool {
	switch r {
	case '&', '|', '!', '(', ')':
		return true
	}
	return unicode.IsSpace(r)
}
