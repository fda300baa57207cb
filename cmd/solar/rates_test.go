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

// cmdStarts is "starts COUNT MAXIN WINDOW MINSPAN FILE...": each FILE
// holds one start time a line (date +%s.%N, as the scripts of rate tests
// append them), or is orch report --json, whose attempt records' starts
// count; together there must be COUNT of them, at most MAXIN in any
// window of length WINDOW, and from the first to the last at least
// MINSPAN. With !, some window holds more than MAXIN (the rate was not
// kept).
func cmdStarts(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 5 {
		ts.Fatalf("usage: starts COUNT MAXIN WINDOW MINSPAN FILE...")
	}
	count, err1 := strconv.Atoi(args[0])
	maxIn, err2 := strconv.Atoi(args[1])
	window, err3 := time.ParseDuration(args[2])
	minSpan, err4 := time.ParseDuration(args[3])
	for _, err := range []error{err1, err2, err3, err4} {
		ts.Check(err)
	}
	var starts []time.Duration
	for _, f := range args[4:] {
		raw, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		starts = append(starts, startTimes(ts, raw)...)
	}
	slices.Sort(starts)
	if len(starts) != count {
		ts.Fatalf("starts: %d starts in %s, want %d", len(starts), strings.Join(args[4:], " "), count)
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

// cmdOverlap is "overlap REPORT1 REPORT2": the runs the two orch report
// --json files describe ran at once (from the first task's start to the
// last one's end), which a test of a rate shared between them needs.
func cmdOverlap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: overlap REPORT1 REPORT2")
	}
	var lo, hi [2]time.Time
	for i, f := range args {
		raw, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		var rep struct {
			Tasks []struct {
				Start time.Time `json:"start"`
				End   time.Time `json:"end"`
			} `json:"tasks"`
		}
		ts.Check(json.Unmarshal(raw, &rep))
		for _, t := range rep.Tasks {
			if lo[i].IsZero() || t.Start.Before(lo[i]) {
				lo[i] = t.Start
			}
			if t.End.After(hi[i]) {
				hi[i] = t.End
			}
		}
	}
	if !lo[0].Before(hi[1]) || !lo[1].Before(hi[0]) {
		ts.Fatalf("overlap: the runs of %s (%s to %s) and %s (%s to %s) do not overlap", args[0], lo[0], hi[0], args[1], lo[1], hi[1])
	}
}
