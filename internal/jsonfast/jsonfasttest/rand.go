package jsonfasttest

import (
	"math"
	"math/rand/v2"
	"time"
)

// Texts are strings that exercise escaping: HTML, control characters,
// quotes, bytes that are not UTF-8, line separators, astral runes.
var Texts = []string{"", "plain", "a\"b\\c", "<tag>&amp;", "tab\there\nnew\rret\bback\fform", "\x00\x01\x1f\x7f",
	"caf\u00e9 \u4e16\u754c", "\U0001F600", "bad \xff byte", "\xc3", "line\u2028sep\u2029", "/slash", "\ud7ff\ue000", "{\"json\":1}"}

// Text returns a random string: one of Texts, or random bytes.
func Text(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return Texts[rng.IntN(len(Texts))]
	}
	b := make([]byte, rng.IntN(12))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return string(b)
}

// Value returns a random value of the kinds decoded JSON holds, and
// int64s, nested at most three deep.
func Value(rng *rand.Rand) any { return value(rng, 0) }

func value(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(9); {
	case k == 0:
		return nil
	case k == 1:
		return rng.IntN(2) == 0
	case k == 2:
		floats := []float64{0, 1, -1.5, 1e-7, 1e21, 123456789.125, 1e-6, 9.999e20, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1}
		return floats[rng.IntN(len(floats))] * float64(rng.IntN(3)-1)
	case k == 3:
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(50)-25))
	case k == 4:
		return int64(rng.Uint64())
	case k == 5 && depth < 3:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[Text(rng)] = value(rng, depth+1)
		}
		return m
	case k == 6 && depth < 3:
		a := []any{}
		for range rng.IntN(4) {
			a = append(a, value(rng, depth+1))
		}
		return a
	}
	return Text(rng)
}

// Strings returns nil, an empty list or a few random strings.
func Strings(rng *rand.Rand) []string {
	switch rng.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+rng.IntN(3))
	for i := range out {
		out[i] = Text(rng)
	}
	return out
}

// Map returns nil, an empty map or a few random values by random keys.
func Map(rng *rand.Rand) map[string]any {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return map[string]any{}
	}
	m := map[string]any{}
	for range 1 + rng.IntN(4) {
		m[Text(rng)] = Value(rng)
	}
	return m
}

// Time returns the zero time one time in four, else a random time with
// nanoseconds in one of a few zones, one of them with a name.
func Time(rng *rand.Rand) time.Time {
	if rng.IntN(4) == 0 {
		return time.Time{}
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+1800), time.FixedZone("x", -7*3600)}
	return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
}
