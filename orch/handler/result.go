package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// resultLimit bounds the result file: outputs are inputs of other
// resources, not bulk data.
const resultLimit = 16 << 20

// resultFile is the JSON a script may write to $SOLAR_RESULT.
type resultFile struct {
	Changed *bool          `json:"changed"` // nil (absent or null) means changed
	Outputs map[string]any `json:"outputs"`
	// Changes names what differs (or would, in check mode): inputs or
	// aspects such as "mode". Optional; solar drift filters on it.
	Changes []string `json:"changes"`
}

// parseResultChanges decodes a result file: whether it changed, its
// outputs, and what it says differs. Its errors describe what is wrong
// with the file without quoting it: the file may hold secrets.
func parseResultChanges(raw []byte) (changed bool, outputs map[string]any, changes []string, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return true, nil, nil, nil
	}
	var rf resultFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil {
		return false, nil, nil, describeJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, nil, nil, errors.New("result file holds more than one JSON value")
	}
	for k, v := range rf.Outputs {
		cv, err := canonicalNumbers(v)
		if err != nil {
			return false, nil, nil, fmt.Errorf("result file: output %q: %w", k, err)
		}
		rf.Outputs[k] = cv
	}
	return rf.Changed == nil || *rf.Changed, rf.Outputs, rf.Changes, nil
}

// describeJSONError turns a decoding error into one that names the place
// and the kind of problem. encoding/json's own messages may quote a
// character of the input, so they are not passed on.
func describeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("result file is not valid JSON (error at byte %d)", syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("result file is not valid JSON (it ends too soon)")
	case errors.As(err, &typ):
		switch typ.Field {
		case "":
			return fmt.Errorf("result file holds a JSON %s; want an object with changed and outputs", typ.Value)
		case "changed":
			return fmt.Errorf("result file: changed is a JSON %s; want true or false", typ.Value)
		case "outputs":
			return fmt.Errorf("result file: outputs is a JSON %s; want an object", typ.Value)
		case "changes":
			return fmt.Errorf("result file: changes is a JSON %s; want a list of names", typ.Value)
		}
		return fmt.Errorf("result file: %s is a JSON %s of the wrong type", typ.Field, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// Only the field's name is quoted, never a value.
		return fmt.Errorf("result file has %s; want only changed, outputs and changes", strings.TrimPrefix(err.Error(), "json: "))
	}
	return errors.New("result file cannot be decoded as JSON")
}

// canonicalNumbers replaces every json.Number in v by int64 when it is a
// whole number that fits, by float64 otherwise, in place.
func canonicalNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, errors.New("a number is out of range")
		}
		return f, nil
	case []any:
		for i, e := range x {
			ce, err := canonicalNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = ce
		}
	case map[string]any:
		for k, e := range x {
			ce, err := canonicalNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = ce
		}
	}
	return v, nil
}
