package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Check validates v against the schema and returns it in canonical form:
// string, int64, float64, bool, []any or map[string]any, recursively; nil
// stays nil when the schema does not require a value.
//
// It accepts what the YAML and JSON decoders produce: any Go integer,
// float64 and json.Number for int (a float must be integral, as JSON gives
// 3306.0); integers, floats and json.Number for float; strings only for str
// and bools only for bool, because a silent coercion would hide a typo in a
// base. Lists may be []any, []string or any other slice; objects
// map[string]any, map[any]any with string keys, or any other map keyed by
// strings. NaN and infinities are rejected: they have no JSON form.
//
// Objects reject unknown keys and missing required fields; a missing or nil
// optional field is left out of the result. An empty list or object comes
// back empty, never nil. The error, a *CheckError, reports the first
// mismatch: unknown keys before missing ones, fields in declaration order.
func (s *Schema) Check(v any) (any, error) {
	out, err := s.check(v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check returns a *CheckError rather than error so parents can extend the
// path without a type assertion.
func (s *Schema) check(v any) (any, *CheckError) {
	if v == nil {
		if s.Required {
			return nil, &CheckError{Want: s.String(), Msg: "required, got nothing"}
		}
		return nil, nil
	}
	switch s.Kind {
	case Str:
		str, ok := v.(string)
		if !ok {
			return nil, s.mismatch(v, "")
		}
		if str == "" && s.Required {
			return nil, &CheckError{Want: s.String(), Got: v, Msg: `required, got ""`}
		}
		return v, nil
	case Int:
		return s.checkInt(v)
	case Float:
		return s.checkFloat(v)
	case Bool:
		if _, ok := v.(bool); !ok {
			return nil, s.mismatch(v, "")
		}
		return v, nil
	case List:
		return s.checkList(v)
	case Object:
		return s.checkObject(v)
	}
	panic(fmt.Sprintf("schema: check with invalid kind %v", s.Kind))
}

func (s *Schema) checkInt(v any) (any, *CheckError) {
	switch n := v.(type) {
	case int64:
		return v, nil
	case int:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int8:
		return int64(n), nil
	case uint64:
		if n > math.MaxInt64 {
			return nil, s.mismatch(v, "out of range")
		}
		return int64(n), nil
	case uint:
		if uint64(n) > math.MaxInt64 {
			return nil, s.mismatch(v, "out of range")
		}
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint8:
		return int64(n), nil
	case float64:
		return s.integral(v, n)
	case float32:
		return s.integral(v, float64(n))
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		f, err := n.Float64()
		if err != nil {
			return nil, s.mismatch(v, "out of range")
		}
		return s.integral(v, f)
	}
	return nil, s.mismatch(v, "")
}

// integral accepts a float that holds an integer exactly, because JSON
// decoders (and people) write 3306 as 3306.0.
func (s *Schema) integral(v any, f float64) (any, *CheckError) {
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		return nil, s.mismatch(v, "")
	}
	// -2^63 is exact in float64, 2^63 is the first value out of range.
	if f < math.MinInt64 || f >= -math.MinInt64 {
		return nil, s.mismatch(v, "out of range")
	}
	return int64(f), nil
}

func (s *Schema) checkFloat(v any) (any, *CheckError) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int64:
		f = float64(n)
	case int:
		f = float64(n)
	case int32:
		f = float64(n)
	case int16:
		f = float64(n)
	case int8:
		f = float64(n)
	case uint64:
		f = float64(n)
	case uint:
		f = float64(n)
	case uint32:
		f = float64(n)
	case uint16:
		f = float64(n)
	case uint8:
		f = float64(n)
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return nil, s.mismatch(v, "out of range")
		}
	default:
		return nil, s.mismatch(v, "")
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, s.mismatch(v, "not a finite number")
	}
	return f, nil
}

func (s *Schema) checkList(v any) (any, *CheckError) {
	switch l := v.(type) {
	case []any:
		out := make([]any, len(l))
		for i, e := range l {
			ce, err := s.Elem.check(e)
			if err != nil {
				return nil, err.under(index(i))
			}
			out[i] = ce
		}
		return out, nil
	case []string:
		out := make([]any, len(l))
		for i, e := range l {
			ce, err := s.Elem.check(e)
			if err != nil {
				return nil, err.under(index(i))
			}
			out[i] = ce
		}
		return out, nil
	}
	// Other slices only come from Go callers, never from the decoders, so
	// reflection's cost does not matter here.
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, s.mismatch(v, "")
	}
	out := make([]any, rv.Len())
	for i := range out {
		ce, err := s.Elem.check(rv.Index(i).Interface())
		if err != nil {
			return nil, err.under(index(i))
		}
		out[i] = ce
	}
	return out, nil
}

func index(i int) string {
	return "[" + strconv.Itoa(i) + "]"
}

func (s *Schema) checkObject(v any) (any, *CheckError) {
	m, err := s.stringMap(v)
	if err != nil {
		return nil, err
	}
	// Report the smallest unknown key so the message does not depend on map
	// iteration order.
	unknown, found := "", false
	for k := range m {
		if s.field(k) == nil && (!found || k < unknown) {
			unknown, found = k, true
		}
	}
	if found {
		return nil, &CheckError{
			Want: s.String(),
			Got:  unknown,
			Msg:  fmt.Sprintf("unknown key %q (want one of %s)", unknown, s.fieldNames()),
		}
	}
	out := make(map[string]any, len(m))
	for _, f := range s.Fields {
		fv, err := f.Schema.check(m[f.Name])
		if err != nil {
			return nil, err.under(f.Name)
		}
		if fv != nil {
			out[f.Name] = fv
		}
	}
	return out, nil
}

// stringMap returns v as a map[string]any, converting the other map forms
// decoders and Go callers produce.
func (s *Schema) stringMap(v any) (map[string]any, *CheckError) {
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, e := range m {
			ks, ok := k.(string)
			if !ok {
				return nil, s.badKey(v, k)
			}
			out[ks] = e
		}
		return out, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return nil, s.mismatch(v, "")
	}
	if rv.Type().Key().Kind() != reflect.String {
		// Report an actual key rather than the type, sorted for determinism.
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		if len(keys) == 0 {
			return nil, s.mismatch(v, "")
		}
		return nil, s.badKey(v, keys[0].Interface())
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, nil
}

func (s *Schema) badKey(v, key any) *CheckError {
	return &CheckError{
		Want: s.String(),
		Got:  v,
		Msg:  fmt.Sprintf("keys must be strings, got %s (%s)", describe(key), typeName(key)),
	}
}

// mismatch builds the common "want T, got V (type)" error; why, when set,
// adds the reason a value of the right type is still refused.
func (s *Schema) mismatch(v any, why string) *CheckError {
	want := s.String()
	tn := typeName(v)
	if why != "" {
		tn += ", " + why
	}
	return &CheckError{Want: want, Got: v, Msg: fmt.Sprintf("want %s, got %s (%s)", want, describe(v), tn)}
}

// maxDescribe bounds how much of an offending value an error quotes: the
// message names the input, it need not repeat a large document.
const maxDescribe = 60

// describe renders an offending value for an error message: strings quoted,
// everything else as compact JSON where possible.
func describe(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		s = strconv.Quote(x)
	case json.Number:
		s = x.String()
	default:
		b, err := json.Marshal(x)
		if err != nil {
			s = fmt.Sprint(x)
		} else {
			s = string(b)
		}
	}
	if len(s) > maxDescribe {
		cut := maxDescribe
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// typeName names a value's type in the user's terms rather than Go's.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "int"
	case float32, float64:
		return "float"
	case json.Number:
		return "number"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// FromText converts a value typed on the command line (the v of "k=v") for
// this schema. A str takes the text verbatim, so "version=1.10" stays "1.10";
// every other kind reads the text as YAML ("port=3306" is an int,
// "backends=[a, b]" a list, "flag=true" a bool) and then Checks it. For those
// kinds empty text reads as nil, that is no value. Errors are *CheckError.
func (s *Schema) FromText(text string) (any, error) {
	if s.Kind == Str {
		return s.Check(text)
	}
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		want := s.String()
		return nil, &CheckError{Want: want, Got: text, Msg: fmt.Sprintf("want %s, got %s (%v)", want, describe(text), err)}
	}
	return s.Check(v)
}
