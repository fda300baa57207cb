package resources

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	good := []struct {
		in    string
		every time.Duration
		burst int
		back  string
	}{
		{"api:10/s", 100 * time.Millisecond, 1, "api:10/s"},
		{"api:10/s:5", 100 * time.Millisecond, 5, "api:10/s:5"},
		{"db.main:30/m:1", 2 * time.Second, 1, "db.main:30/m"},
		{"x:1/h", time.Hour, 1, "x:1/h"},
	}
	for _, c := range good {
		r, err := ParseRate(c.in)
		if err != nil {
			t.Errorf("ParseRate(%q): %v", c.in, err)
			continue
		}
		if r.Every() != c.every || r.Burst != c.burst || r.String() != c.back {
			t.Errorf("ParseRate(%q) = every %s burst %d %q, want %s %d %q", c.in, r.Every(), r.Burst, r.String(), c.every, c.burst, c.back)
		}
	}
	for _, in := range []string{"", "api", "api:10", "api:10/d", "api:0/s", "api:10/s:0", "api:10/s:x", ":10/s", "a b:1/s", "api:2000000/s", "api:-1/s"} {
		_, err := ParseRate(in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "meta rate") {
			t.Errorf("ParseRate(%q) = %v, want an ErrInvalid naming it", in, err)
		}
	}
}

func TestMetaRates(t *testing.T) {
	var m Meta
	for _, kv := range [][2]string{{"rate", "api:10/s, db:1/m:2"}, {"rate", "web:5/s"}, {"limit", "2/s"}, {"burst", "3"}} {
		if err := m.SetMeta(kv[0], kv[1]); err != nil {
			t.Fatalf("SetMeta %s=%s: %v", kv[0], kv[1], err)
		}
	}
	rs, err := m.Rates()
	if err != nil || len(rs) != 3 || rs[1].Name != "db" || rs[1].Burst != 2 {
		t.Fatalf("Rates = %+v, %v", rs, err)
	}
	lim, ok, err := m.LimitRate()
	if err != nil || !ok || lim.Every() != 500*time.Millisecond || lim.Burst != 3 {
		t.Fatalf("LimitRate = %+v %v %v", lim, ok, err)
	}
	bad := []struct{ key, value, want string }{
		{"rate", "api:1/s", "rate api is named twice"},
		{"limit", "3/s", "meta limit given twice"},
		{"burst", "1", "meta burst given twice"},
	}
	for _, c := range bad {
		m2 := m
		m2.Rate = append([]string{}, m.Rate...)
		if err := m2.SetMeta(c.key, c.value); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetMeta %s=%s = %v, want %q", c.key, c.value, err, c.want)
		}
	}
	for _, c := range [][2]string{{"limit", "2/d"}, {"limit", "0/s"}, {"burst", "0"}, {"burst", "-1"}} {
		var m3 Meta
		if err := m3.SetMeta(c[0], c[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetMeta %s=%s = %v, want ErrInvalid", c[0], c[1], err)
		}
	}
	// A resource's burst goes with its base's limit.
	base := Meta{Limit: "1/s"}
	three := 3
	if lim, ok, _ := base.Over(Meta{Burst: &three}).LimitRate(); !ok || lim.Burst != 3 {
		t.Errorf("base limit with a resource's burst = %+v %v", lim, ok)
	}
}

func TestRateStricter(t *testing.T) {
	a, _ := ParseRate("x:10/s:5")
	b, _ := ParseRate("x:5/s:9")
	c, _ := ParseRate("x:10/s:2")
	if !b.Stricter(a) || a.Stricter(b) || !c.Stricter(a) || a.Stricter(c) {
		t.Errorf("Stricter: 5/s over 10/s, then the smaller burst")
	}
}
