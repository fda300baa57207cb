package orch

import (
	"testing"
	"time"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// TestReport: one read gives a report's parts: totals with every status,
// the wall time from the first start to the last end, unfinished while a
// task is not, and which failed tasks printed something worth reading.
func TestReport(t *testing.T) {
	path := testStorePath(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var uid string
	update(t, path, func(tx *store.Tx) error {
		uid = savePlan(t, tx, t0, stagedNode("a", "run"), stagedNode("b", "run"), stagedNode("c", "run"), stagedNode("d", "run"))
		for id, st := range map[string]State{
			"a.run#0": {Status: StatusSuccess, Attempts: 1, Start: t0, End: t0.Add(time.Second)},
			"b.run#0": {Status: StatusError, Attempts: 1, Err: "exit status 1", Start: t0.Add(time.Second), End: t0.Add(3 * time.Second)},
			"c.run#0": {Status: StatusError, Attempts: 1, Err: "exit status 2", Start: t0, End: t0.Add(2 * time.Second)},
		} {
			if err := PutState(tx, uid, id, st); err != nil {
				return err
			}
		}
		// b printed a line; c's attempt left an empty log.
		if _, err := putLog(tx, uid, "b.run#0", 1, 0, []handler.Line{{At: t0, Stream: 'e', Text: "port in use"}}); err != nil {
			return err
		}
		return finalLog(tx, uid, "c.run#0", 1, nil, AttemptRecord{Number: 1})
	})
	var s *ReportSummary
	view(t, path, func(tx *store.Tx) error {
		var err error
		s, err = Report(tx, "last")
		return err
	})
	if s.UID != uid || s.Finished || s.Running || s.Checked || s.Wall != 3*time.Second {
		t.Errorf("summary %s finished=%v running=%v checked=%v wall=%s; want %s unfinished, not running, not checked, wall 3s",
			s.UID, s.Finished, s.Running, s.Checked, s.Wall, uid)
	}
	wantTotals := map[Status]int{StatusPending: 1, StatusInProgress: 0, StatusSuccess: 1, StatusNoop: 0, StatusSkipped: 0, StatusError: 2}
	for st, n := range wantTotals {
		if s.Totals[st] != n {
			t.Errorf("Totals[%s] = %d, want %d", st, s.Totals[st], n)
		}
	}
	got := map[string]ReportTask{}
	for _, rt := range s.Tasks {
		got[rt.ID] = rt
	}
	if len(s.Tasks) != 4 || !got["b.run#0"].Logged || got["c.run#0"].Logged || got["a.run#0"].Duration != time.Second || got["d.run#0"].Duration != 0 {
		t.Errorf("tasks %+v: want 4, b logged, c not, a 1s long, d 0", s.Tasks)
	}
}
