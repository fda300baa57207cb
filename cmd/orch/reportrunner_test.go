package orch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/orch"
)

// reportOf is the summary of a one-task plan whose task's last run made
// the attempts recs.
func reportOf(recs ...orch.AttemptRecord) *orch.ReportSummary {
	start := apptest.Now.Add(-time.Minute)
	st := orch.State{Status: orch.StatusSuccess, Attempts: len(recs), Start: start, End: start.Add(time.Second)}
	return &orch.ReportSummary{UID: "20260101-000000-abcd", Finished: true, Wall: time.Second,
		Totals: map[orch.Status]int{orch.StatusSuccess: 1},
		Tasks:  []orch.ReportTask{{ID: "web.run#0", State: st, Duration: time.Second, Attempts: recs}}}
}

// TestReportRunner: orch report names the fleet's runner of each attempt,
// in --json always (runner "" outside the fleet) and in the table only for
// a plan the fleet ran.
func TestReportRunner(t *testing.T) {
	fleet := reportOf(orch.AttemptRecord{Number: 1, Actor: "a@h", Host: "h1", Runner: "r1"},
		orch.AttemptRecord{Number: 2, Actor: "a@h", Host: "h2", Runner: "r2"}, orch.AttemptRecord{Number: 3, Actor: "a@h", Host: "h1", Runner: "r1"})
	classic := reportOf(orch.AttemptRecord{Number: 1, Actor: "a@h", Host: "h1"})
	for _, tc := range []struct {
		name       string
		sum        *orch.ReportSummary
		jsonWant   []string
		header     bool
		runnerCell string
	}{
		{name: "fleet", sum: fleet, jsonWant: []string{"r1", "r2", "r1"}, header: true, runnerCell: "r1, r2"},
		{name: "classic", sum: classic, jsonWant: []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newReportView(tc.sum)
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Tasks []struct {
					AttemptRecords []map[string]any `json:"attempt_records"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range back.Tasks[0].AttemptRecords {
				name, ok := r["runner"].(string)
				if !ok {
					t.Fatalf("attempt record without a \"runner\" string: %v", r)
				}
				got = append(got, name)
			}
			if d := apptest.Diff(tc.jsonWant, got); d != "" {
				t.Errorf("runners in --json (-want +got):\n%s", d)
			}
			e := apptest.New(t)
			if err := printReport(e.App, tc.sum, v); err != nil {
				t.Fatal(err)
			}
			out := e.Out.String()
			lines := strings.Split(out, "\n")
			if has := strings.Contains(lines[1], "RUNNER"); has != tc.header {
				t.Errorf("runner column shown: %v, want %v:\n%s", has, tc.header, out)
			}
			if tc.runnerCell != "" && !strings.Contains(lines[2], tc.runnerCell) {
				t.Errorf("task row does not name its runners %q:\n%s", tc.runnerCell, out)
			}
		})
	}
}
