package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// Format renders a canonical value (as returned by Check) for people: a
// string as is, nil as "null", numbers and bools as JSON, lists and objects as
// compact JSON with sorted keys and without HTML escaping.
func Format(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	b, err := encode(v)
	if err != nil {
		// Only a non-canonical value (NaN, a map with non-string keys) gets
		// here; a readable rendering beats none.
		return fmt.Sprint(v)
	}
	return string(b)
}

// Equal reports whether two canonical values are the same, meaning their
// JSON encodings are identical: int64(3) equals float64(3), and objects
// compare regardless of key order. Values that cannot be encoded fall back
// to a deep comparison.
func Equal(a, b any) bool {
	// Scalars of the same type are the common case (did this input change?)
	// and need no encoding.
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case int64:
		if y, ok := b.(int64); ok {
			return x == y
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	}
	ea, errA := json.Marshal(a)
	eb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return reflect.DeepEqual(a, b)
	}
	return bytes.Equal(ea, eb)
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
