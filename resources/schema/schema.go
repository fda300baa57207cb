package schema

import (
	"strconv"
	"strings"
)

// Kind is the shape of values a schema accepts.
type Kind int

// The kinds, named as in schema text.
const (
	Str Kind = iota
	Int
	Float
	Bool
	List
	Object
)

var kindNames = [...]string{Str: "str", Int: "int", Float: "float", Bool: "bool", List: "list", Object: "object"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Field is one key of an object schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Schema is a parsed schema. Elem is set only for List and Fields only for
// Object; Parse guarantees that, and Check relies on it.
type Schema struct {
	Kind     Kind
	Required bool    // trailing "!": the value must be present (non-empty for str)
	Elem     *Schema // element schema of a List
	Fields   []Field // keys of an Object, in declaration order
}

// String returns the canonical schema text, e.g. "{host: str!, port: int}" or
// "[str]!". Parse(s.String()) yields a schema equal to s.
func (s *Schema) String() string {
	var b strings.Builder
	s.write(&b)
	return b.String()
}

func (s *Schema) write(b *strings.Builder) {
	switch s.Kind {
	case List:
		b.WriteByte('[')
		s.Elem.write(b)
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			f.Schema.write(b)
		}
		b.WriteByte('}')
	default:
		b.WriteString(s.Kind.String())
	}
	if s.Required {
		b.WriteByte('!')
	}
}

// MarshalText returns the canonical text, so a Schema can sit directly in
// YAML or JSON documents.
func (s *Schema) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// UnmarshalText parses schema text; it lets meta.yaml decode straight into a
// Schema and report a malformed one as a *ParseError.
func (s *Schema) UnmarshalText(text []byte) error {
	p, err := Parse(string(text))
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

// field returns the field named name, or nil. Objects have a handful of keys,
// so a scan beats building an index.
func (s *Schema) field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// fieldNames lists the keys in declaration order, for error messages.
func (s *Schema) fieldNames() string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
