package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ansible-playbook evaluates every string of its variables as a Jinja2
// template, and templates run code on the controller (lookup("pipe",
// ...)). A value solar hands it from an input, which a node's script may
// have sent through a connection, must therefore arrive as data: the
// extra vars and the inventory are written as YAML in which every such
// string carries Ansible's !unsafe tag. The YAML is written here, in flow
// style, rather than by a library, so that how each value is written is
// exact and known:
//
//   - strings (map keys too) are double-quoted, with everything outside
//     printable ASCII escaped, and tagged !unsafe each on its own: Ansible's
//     !unsafe on a whole mapping copies the nested mappings before the
//     YAML parser has filled them, and keys are checked for templates by
//     Ansible's Templar.is_template;
//   - numbers, booleans and null are never tagged: !unsafe would make
//     them strings, and Ansible never templates them;
//   - a number without fraction or exponent is written as it is (an int);
//     any other is tagged !!float, since PyYAML's YAML 1.1 reads "1e5" as a
//     string.
//
// The values are those of the JSON solar writes for every other handler's
// inputs: invalid UTF-8 reads as U+FFFD there and here alike.

// unsafeTag marks a string Ansible must never template.
const unsafeTag = "!unsafe "

// unsafeVarsYAML returns the extra vars file of an attempt: inputs, every
// string in them tagged !unsafe.
func unsafeVarsYAML(inputs map[string]any) ([]byte, error) {
	raw, err := appendJSON(nil, inputs)
	if err != nil {
		return nil, err
	}
	// Through JSON, whatever types the inputs hold become the few below,
	// as they would for the inputs file of a shell action.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	b, err := appendUnsafeYAML(nil, v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// appendUnsafeYAML appends v, a value decoded from JSON with UseNumber, as
// YAML in flow style.
func appendUnsafeYAML(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendYAMLString(b, x, true), nil
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			b = append(b, "!!float "...)
		}
		return append(b, s...), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			var err error
			if b, err = appendUnsafeYAML(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendYAMLString(b, k, true)
			b = append(b, ": "...)
			var err error
			if b, err = appendUnsafeYAML(b, x[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return b, fmt.Errorf("unexpected value of type %T", v)
}

// appendYAMLString appends s as a YAML double-quoted scalar, tagged
// !unsafe if unsafe is set. Only printable ASCII is written as it is:
// every other character is escaped, so the file is plain ASCII and no
// line break, BOM or character PyYAML refuses in a stream can change
// what is read. Invalid UTF-8 is written as U+FFFD.
func appendYAMLString(b []byte, s string, unsafe bool) []byte {
	const hex = "0123456789abcdef"
	if unsafe {
		b = append(b, unsafeTag...)
	}
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r >= 0x20 && r < 0x7f:
			b = append(b, byte(r))
		case r < 0x100:
			b = append(b, '\\', 'x', hex[r>>4], hex[r&0xf])
		case r < 0x10000:
			b = append(b, '\\', 'u')
			for sh := 12; sh >= 0; sh -= 4 {
				b = append(b, hex[(r>>sh)&0xf])
			}
		default:
			b = append(b, '\\', 'U')
			for sh := 28; sh >= 0; sh -= 4 {
				b = append(b, hex[(r>>sh)&0xf])
			}
		}
	}
	return append(b, '"')
}
