package orch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
)

func TestUnifyRatesStrictest(t *testing.T) {
	infos := map[string]*taskInfo{}
	for id, meta := range map[string]resources.Meta{
		"a": {Rate: []string{"api:10/s:5"}},
		"b": {Rate: []string{"api:20/s:1", "db:1/m"}},
		"c": {Rate: []string{"api:10/s:2"}, Limit: "2/s"},
	} {
		info := &taskInfo{node: &planner.Node{ID: id + ".run#0", Resource: id}}
		info.setRates(meta)
		infos[id] = info
	}
	unifyRates(infos)
	for id, info := range infos {
		for _, r := range info.rates {
			want := map[string]string{"rate/api": "api:10/s:2", "rate/db": "db:1/m", "limit/c": "2/s"}[r.key]
			if r.rate.String() != want {
				t.Errorf("task %s rate %s = %s, want %s", id, r.key, r.rate, want)
			}
		}
	}
	if n := len(infos["c"].rates); n != 2 {
		t.Errorf("c takes %d rates, want 2 (api and its limit)", n)
	}
}

// fakeRates answers every Reserve with wait.
type fakeRates struct{ wait time.Duration }

func (f fakeRates) Reserve(context.Context, string, time.Duration, int, int) (time.Duration, error) {
	return f.wait, nil
}

func TestTakeRatesEndsOnStop(t *testing.T) {
	info := &taskInfo{node: &planner.Node{ID: "a.run#0", Resource: "a"}}
	info.setRates(resources.Meta{Rate: []string{"api:1/h"}})
	stopped := make(chan struct{})
	var notes []string
	a := &attemptRunner{r: &Runner{Note: func(s string) { notes = append(notes, s) }}, rates: fakeRates{time.Hour}, stopped: stopped}
	time.AfterFunc(50*time.Millisecond, func() { close(stopped) })
	begin := time.Now()
	err := a.takeRates(context.Background(), "a.run#0", info, 1)
	if err == nil || err.Error() != killed || time.Since(begin) > 10*time.Second {
		t.Fatalf("takeRates after a stop = %v after %s, want %q at once", err, time.Since(begin), killed)
	}
	if len(notes) != 1 || notes[0] != "a.run#0 waiting for rate api (1h0m0s)" {
		t.Errorf("notes %q", notes)
	}
	a.rates = nil
	if err := a.takeRates(context.Background(), "a.run#0", info, 1); !errors.Is(err, errNoRates) {
		t.Errorf("takeRates without rates = %v, want errNoRates", err)
	}
}
