package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// checkVar is set to 1 for an attempt in check mode.
const checkVar = "SOLAR_CHECK"

// inputPrefix starts the name of every input's environment variable.
const inputPrefix = "SOLAR_INPUT_"

// protocolVars are set for every attempt. A value inherited from the
// executor's environment (solar run from inside an action) would describe
// some other action, so it is dropped, as are inherited SOLAR_INPUT_*.
var protocolVars = [...]string{
	"SOLAR_RESOURCE", "SOLAR_ACTION", "SOLAR_TASK", "SOLAR_LOCATION", "SOLAR_INPUTS", "SOLAR_RESULT", "SOLAR_INPUTS_OMITTED", attemptVar, checkVar, "SOLAR_ATTEMPT", "SOLAR_FENCE", batchVar,
}

// EnvName returns the environment variable that carries input name:
// SOLAR_INPUT_ and the name upper-cased, with every character outside
// [A-Z0-9_] replaced by '_'.
func EnvName(name string) string {
	return string(appendEnvName(make([]byte, 0, len(inputPrefix)+len(name)), name))
}

func appendEnvName(b []byte, name string) []byte {
	b = append(b, inputPrefix...)
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z':
			b = append(b, byte(r-'a'+'A'))
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_':
			b = append(b, byte(r))
		default:
			// A few non-ASCII letters upper-case into ASCII ('ı' is 'I');
			// all others fall outside the set.
			if u := unicode.ToUpper(r); 'A' <= u && u <= 'Z' {
				b = append(b, byte(u))
			} else {
				b = append(b, '_')
			}
		}
	}
	return b
}

// plainName reports whether name is made of [a-z0-9_] only. EnvName is
// one-to-one on such names, so they need no check for collisions.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return name != ""
}

// appendEnvValue appends the environment form of an input value.
func appendEnvValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return b, nil
	case string:
		return append(b, x...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	}
	return appendJSON(b, v)
}

// appendJSON appends v as compact JSON. HTML escaping is off: a script
// should find "<" where the operator wrote "<", not "\u003c".
func appendJSON(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// scriptEnv builds the protocol's variables of an attempt, except
// SOLAR_INPUTS and SOLAR_RESULT, which the host sets. It fails, naming the
// input, on a value no environment variable can hold and on two inputs
// that would share a variable; it never quotes a value, which may be
// secret.
func scriptEnv(req Request) ([]string, error) {
	env := make([]string, 0, len(req.Inputs)+4)
	env = append(env,
		"SOLAR_RESOURCE="+req.Resource,
		"SOLAR_ACTION="+req.Action,
		"SOLAR_TASK="+req.Task,
		"SOLAR_LOCATION="+req.Location,
	)
	if req.Check {
		env = append(env, checkVar+"=1")
	}
	env = appendClaimEnv(env, req)
	var owner map[string]string // variable -> input, only for unusual names
	var b []byte
	vars := make([]string, 0, len(req.Inputs))
	for name, v := range req.Inputs {
		b = appendEnvName(b[:0], name)
		if !plainName(name) {
			if owner == nil {
				owner = make(map[string]string)
			}
			if other, ok := owner[string(b)]; ok {
				first, second := min(other, name), max(other, name)
				return nil, fmt.Errorf("%w: inputs %q and %q would both be %s", ErrBadRequest, first, second, b)
			}
			owner[string(b)] = name
		}
		if s, ok := v.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%w: input %q holds a NUL byte, which %s cannot carry", ErrBadRequest, name, b)
		}
		b = append(b, '=')
		var err error
		if b, err = appendEnvValue(b, v); err != nil {
			return nil, fmt.Errorf("%w: input %q: %v", ErrBadRequest, name, err)
		}
		vars = append(vars, string(b))
	}
	if owner != nil {
		// Plain names can still collide with unusual ones ("a_b", "a-b").
		for name := range req.Inputs {
			if plainName(name) {
				if other, ok := owner[EnvName(name)]; ok {
					return nil, fmt.Errorf("%w: inputs %q and %q would both be %s", ErrBadRequest, min(other, name), max(other, name), EnvName(name))
				}
			}
		}
	}
	return appendWithinLimits(env, vars), nil
}

// The kernel refuses to start a program when one environment string is
// longer than 128 KiB, or the arguments and environment together exceed a
// quarter of the stack limit (usually 2 MiB in all). Inputs are data, so
// they must never make a script impossible to start: the environment
// carries at most envVarMax per variable and envInputsMax for all input
// variables together, smallest first; an input left out is only in the
// file SOLAR_INPUTS names, and SOLAR_INPUTS_OMITTED lists such inputs'
// variables, comma-separated (docs/bases.md).
const (
	envVarMax    = 64 << 10
	envInputsMax = 512 << 10
)

// appendWithinLimits appends the input variables vars ("NAME=value") to
// env within the limits above.
func appendWithinLimits(env, vars []string) []string {
	total := 0
	for _, kv := range vars {
		total += len(kv) + 1
	}
	if total <= envInputsMax && slices.IndexFunc(vars, func(kv string) bool { return len(kv) > envVarMax }) < 0 {
		return append(env, vars...)
	}
	slices.SortFunc(vars, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	var omitted []string
	total = 0
	for _, kv := range vars {
		if len(kv) > envVarMax || total+len(kv)+1 > envInputsMax {
			name, _, _ := strings.Cut(kv, "=")
			omitted = append(omitted, name)
			continue
		}
		total += len(kv) + 1
		env = append(env, kv)
	}
	slices.Sort(omitted)
	return append(env, "SOLAR_INPUTS_OMITTED="+strings.Join(omitted, ","))
}

// inheritable reports whether a "KEY=value" of the executor's environment
// is passed on to scripts.
func inheritable(kv string) bool {
	if !strings.HasPrefix(kv, "SOLAR_") {
		return true
	}
	if strings.HasPrefix(kv, inputPrefix) {
		return false
	}
	for _, p := range protocolVars {
		if len(kv) > len(p) && kv[len(p)] == '=' && kv[:len(p)] == p {
			return false
		}
	}
	return true
}

// appendClaimEnv appends SOLAR_ATTEMPT and SOLAR_FENCE (Request.Attempt,
// Request.Fence) where they are known.
func appendClaimEnv(env []string, req Request) []string {
	if req.Attempt > 0 {
		env = append(env, "SOLAR_ATTEMPT="+strconv.Itoa(req.Attempt))
	}
	if req.Fence > 0 {
		env = append(env, "SOLAR_FENCE="+strconv.FormatInt(req.Fence, 10))
	}
	return env
}
