package resources

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Rate is a rate limit as a metaparameter gives it: at most Count starts
// per Unit, Burst of them at once. Named rates (meta rate, "api:10/s:5")
// are shared by every task that names them, in every run on the store;
// a resource's own limit (meta limit and burst) is a rate of its own.
type Rate struct {
	Name  string        // "" for a resource's limit
	Count int           // starts per Unit, at least 1
	Unit  time.Duration // a second, a minute or an hour
	Burst int           // starts that may come at once, at least 1
}

// Every is the time one start takes from the rate: the emission interval
// of the rate's GCRA (store/kv.Rates).
func (r Rate) Every() time.Duration { return r.Unit / time.Duration(r.Count) }

// Stricter reports whether r lets fewer starts through than o: a longer
// interval, or the same one with a smaller burst.
func (r Rate) Stricter(o Rate) bool {
	if r.Every() != o.Every() {
		return r.Every() > o.Every()
	}
	return r.Burst < o.Burst
}

// String renders the rate as it is written: "10/s", with ":BURST" when
// the burst is not 1 ("10/s:5"), after "NAME:" for a named rate.
func (r Rate) String() string {
	s := r.PerUnit()
	if r.Burst != 1 {
		s += ":" + strconv.Itoa(r.Burst)
	}
	if r.Name != "" {
		s = r.Name + ":" + s
	}
	return s
}

// PerUnit renders the rate's count and unit alone: "10/s".
func (r Rate) PerUnit() string { return strconv.Itoa(r.Count) + "/" + unitName(r.Unit) }

var (
	rateRe  = regexp.MustCompile(`^([A-Za-z0-9_.-]+):([0-9]+)/([smh])(?::([0-9]+))?$`)
	limitRe = regexp.MustCompile(`^([0-9]+)/([smh])$`)
	units   = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}
)

func unitName(u time.Duration) string {
	for k, v := range units {
		if v == u {
			return k
		}
	}
	return u.String()
}

// maxRateCount bounds a rate's count, so that its interval is at least a
// microsecond, which both stores keep exactly.
const maxRateCount = 1_000_000

// ParseRate reads a named rate, "NAME:COUNT/UNIT[:BURST]" (units s, m, h;
// burst 1 when not given). The error names s and says what is wanted.
func ParseRate(s string) (Rate, error) {
	m := rateRe.FindStringSubmatch(s)
	if m == nil {
		return Rate{}, invalidf("meta rate %q: want NAME:COUNT/UNIT[:BURST] with UNIT s, m or h, e.g. api:10/s or api:10/s:5", s)
	}
	r := Rate{Name: m[1], Unit: units[m[3]], Burst: 1}
	var err error
	if r.Count, err = rateNumber(m[2]); err != nil {
		return Rate{}, invalidf("meta rate %q: count %s", s, err)
	}
	if m[4] != "" {
		if r.Burst, err = rateNumber(m[4]); err != nil {
			return Rate{}, invalidf("meta rate %q: burst %s", s, err)
		}
	}
	return r, nil
}

// rateNumber reads a count or burst: a whole number from 1 to maxRateCount.
func rateNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxRateCount {
		return 0, fmt.Errorf("%q: want a whole number from 1 to %d", s, maxRateCount)
	}
	return n, nil
}

// LimitRate returns the resource's own rate (meta limit, "2/s", and
// burst): ok is false when m sets no limit.
func (m Meta) LimitRate() (r Rate, ok bool, err error) {
	if m.Limit == "" {
		return Rate{}, false, nil // a burst alone waits for a limit to apply to
	}
	g := limitRe.FindStringSubmatch(m.Limit)
	if g == nil {
		return Rate{}, false, invalidf("meta limit=%q: want COUNT/UNIT with UNIT s, m or h, e.g. 2/s", m.Limit)
	}
	r = Rate{Unit: units[g[2]], Burst: 1}
	if r.Count, err = rateNumber(g[1]); err != nil {
		return Rate{}, false, invalidf("meta limit=%q: count %s", m.Limit, err)
	}
	if m.Burst != nil {
		if *m.Burst < 1 || *m.Burst > maxRateCount {
			return Rate{}, false, invalidf("meta burst=%d: want a whole number from 1 to %d", *m.Burst, maxRateCount)
		}
		r.Burst = *m.Burst
	}
	return r, true, nil
}

// Rates returns the named rates m lists, parsed, in its order.
func (m Meta) Rates() ([]Rate, error) {
	out := make([]Rate, 0, len(m.Rate))
	for _, s := range m.Rate {
		r, err := ParseRate(s)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Name == r.Name {
				return nil, invalidf("meta rate %q: rate %s is named twice", s, r.Name)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// validateRates refuses a bad rate, limit or burst, naming it.
func (m Meta) validateRates() error {
	if _, err := m.Rates(); err != nil {
		return err
	}
	if m.Burst != nil && (*m.Burst < 1 || *m.Burst > maxRateCount) {
		return invalidf("meta burst=%d: want a whole number from 1 to %d", *m.Burst, maxRateCount)
	}
	_, _, err := m.LimitRate()
	return err
}

// setRateMeta parses the rate metaparameters (rate, limit, burst) into m;
// handled is false for another key.
func (m *Meta) setRateMeta(key, value string) (handled bool, err error) {
	switch key {
	case "rate":
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				m.Rate = append(m.Rate, s)
			}
		}
	case "limit":
		if m.Limit != "" {
			return true, metaTwice(key)
		}
		if value == "" {
			return true, invalidf("meta limit=\"\": want COUNT/UNIT, e.g. 2/s")
		}
		m.Limit = value
	case "burst":
		if m.Burst != nil {
			return true, metaTwice(key)
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > maxRateCount {
			return true, invalidf("meta burst=%q: want a whole number from 1 to %d", value, maxRateCount)
		}
		m.Burst = &n
	default:
		return false, nil
	}
	return true, nil
}
