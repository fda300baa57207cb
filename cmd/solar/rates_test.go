package main

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdStarts is "starts FILE COUNT MAXIN WINDOW MINSPAN": FILE holds one
// start time a line (date +%s.%N, as the scripts of rate tests append
// them), or is orch report --json, whose attempt records' starts count;
// there must be COUNT of them, at most MAXIN in any window of
// length WINDOW, and from the first to the last at least MINSPAN. With !,
// some window holds more than MAXIN (the rate was not kept).
func cmdStarts(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 5 {
		ts.Fatalf("usage: starts FILE COUNT MAXIN WINDOW MINSPAN")
	}
	raw, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	count, err1 := strconv.Atoi(args[1])
	maxIn, err2 := strconv.Atoi(args[2])
	window, err3 := time.ParseDuration(args[3])
	minSpan, err4 := time.ParseDuration(args[4])
	for _, err := range []error{err1, err2, err3, err4} {
		ts.Check(err)
	}
	starts := startTimes(ts, raw)
	slices.Sort(starts)
	if len(starts) != count {
		ts.Fatalf("starts: %d starts in %s, want %d", len(starts), args[0], count)
	}
	most, at := 0, 0
	j := 0
	for i := range starts {
		for j < len(starts) && starts[j]-starts[i] <= window {
			j++
		}
		if j-i > most {
			most, at = j-i, i
		}
	}
	ts.Logf("starts: at most %d in %s (from start %d); span %s", most, window, at+1, starts[len(starts)-1]-starts[0])
	if neg {
		if most <= maxIn {
			ts.Fatalf("starts: at most %d in any %s, want more than %d", most, window, maxIn)
		}
		return
	}
	if most > maxIn {
		ts.Fatalf("starts: %d starts in %s from start %d, want at most %d", most, window, at+1, maxIn)
	}
	if span := starts[len(starts)-1] - starts[0]; span < minSpan {
		ts.Fatalf("starts: span %s, want at least %s", span, minSpan)
	}
}

// startTimes reads the start times of raw (see cmdStarts), as times since
// the epoch.
func startTimes(ts *testscript.TestScript, raw []byte) []time.Duration {
	var starts []time.Duration
	if !strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		for _, l := range strings.Fields(string(raw)) {
			f, err := strconv.ParseFloat(l, 64)
			ts.Check(err)
			starts = append(starts, time.Duration(f*float64(time.Second)))
		}
		return starts
	}
	var rep struct {
		Tasks []struct {
			AttemptRecords []struct {
				Start time.Time `json:"start"`
			} `json:"attempt_records"`
		} `json:"tasks"`
	}
	ts.Check(json.Unmarshal(raw, &rep))
	for _, t := range rep.Tasks {
		for _, a := range t.AttemptRecords {
			starts = append(starts, time.Duration(a.Start.UnixNano()))
		}
	}
	return starts
}
