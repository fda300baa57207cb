package orch

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/solarops/solar/store"
)

// Attempts are numbered across a plan's whole life: a run continues the
// count of the runs before it (a retry after two failed attempts runs
// attempt 3), so the highest number is always the latest attempt. The
// record that ends an attempt's log (logend/UID/TASK/NNN) says who ran it:
// the runner's actor and host, the run it belonged to, and when it ran.
// Stores written before attempts had such a record hold an empty value
// there, read as a record that knows only its number.

// AttemptRecord is what is recorded about one ended attempt of a task.
type AttemptRecord struct {
	// Number counts the task's attempts from 1 over the plan's life.
	Number int `json:"-"`
	// Actor and Host are who ran it ($SOLAR_ACTOR or user@host) and the
	// runner's machine; "" in records of older stores.
	Actor string `json:"actor,omitempty"`
	Host  string `json:"host,omitempty"`
	// Run names the run (run-once, resume, retry, restart) it was part
	// of: attempts of one run share it.
	Run string `json:"run,omitempty"`
	// Runner names the fleet's runner (solar runner --name) that ran it;
	// "" for a run outside a fleet.
	Runner     string    `json:"runner,omitempty"`
	Start, End time.Time `json:"-"`
	// Batch names the batch the attempt ran in (batch.go), and
	// BatchMembers its members' resources, this one's included; "" and
	// nil for an attempt that ran alone.
	Batch        string   `json:"batch,omitempty"`
	BatchMembers []string `json:"batch_members,omitempty"`
}

// attemptEndJSON is the stored form of an AttemptRecord.
type attemptEndJSON struct {
	Actor  string    `json:"actor,omitempty"`
	Host   string    `json:"host,omitempty"`
	Run    string    `json:"run,omitempty"`
	Runner string    `json:"runner,omitempty"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`

	Batch        string   `json:"batch,omitempty"`
	BatchMembers []string `json:"batch_members,omitempty"`
}

func encodeAttemptEnd(a AttemptRecord) ([]byte, error) {
	return json.Marshal(attemptEndJSON{Actor: a.Actor, Host: a.Host, Run: a.Run, Runner: a.Runner, Start: a.Start, End: a.End,
		Batch: a.Batch, BatchMembers: a.BatchMembers})
}

func decodeAttemptEnd(key string, n int, raw []byte) (AttemptRecord, error) {
	rec := AttemptRecord{Number: n}
	if len(raw) == 0 {
		return rec, nil // an older store's end mark
	}
	var j attemptEndJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return rec, store.Damagedf("attempt record %s: %v", key, err)
	}
	rec.Actor, rec.Host, rec.Run, rec.Runner, rec.Start, rec.End = j.Actor, j.Host, j.Run, j.Runner, j.Start, j.End
	rec.Batch, rec.BatchMembers = j.Batch, j.BatchMembers
	return rec, nil
}

// AttemptRecords returns the ended attempts of every task of plan uid, by
// task id, in the order of their numbers: one scan of the plan's end
// records, whatever the number of tasks.
func AttemptRecords(tx *store.Tx, uid string) (map[string][]AttemptRecord, error) {
	return attemptRecordsFrom(tx, uid, "")
}

// TaskAttemptRecords returns the ended attempts of task of plan uid, in
// the order of their numbers.
func TaskAttemptRecords(tx *store.Tx, uid, task string) ([]AttemptRecord, error) {
	recs, err := attemptRecordsFrom(tx, uid, task+"/")
	return recs[task], err
}

// attemptRecordsFrom reads the end records of plan uid whose keys go on
// with from: "" for every task, "TASK/" for one.
func attemptRecordsFrom(tx *store.Tx, uid, from string) (map[string][]AttemptRecord, error) {
	out := map[string][]AttemptRecord{}
	prefix := "logend/" + uid + "/"
	err := tx.ForEach(store.Plans, prefix+from, func(k string, v []byte) error {
		rest := strings.TrimPrefix(k, prefix)
		slash := strings.LastIndexByte(rest, '/')
		if slash < 0 {
			return store.Damagedf("attempt record %s has no number", k)
		}
		n, err := strconv.Atoi(rest[slash+1:])
		if err != nil || n < 1 {
			return store.Damagedf("attempt record %s has no number", k)
		}
		rec, err := decodeAttemptEnd(k, n, v)
		if err != nil {
			return err
		}
		task := rest[:slash]
		out[task] = insertByNumber(out[task], rec)
		return nil
	})
	return out, err
}

// insertByNumber adds rec to list, kept in the order of numbers: keys sort
// as text, and attempt 1000 comes before attempt 999 there.
func insertByNumber(list []AttemptRecord, rec AttemptRecord) []AttemptRecord {
	i := len(list)
	for i > 0 && list[i-1].Number > rec.Number {
		i--
	}
	list = append(list, AttemptRecord{})
	copy(list[i+1:], list[i:])
	list[i] = rec
	return list
}

// LastRun returns the attempts of list (in the order of numbers) that
// belong to the run of its latest attempt: what a report shows beside the
// task's state, which that run left.
func LastRun(list []AttemptRecord) []AttemptRecord {
	if len(list) == 0 {
		return nil
	}
	run := list[len(list)-1].Run
	i := len(list) - 1
	for i > 0 && list[i-1].Run == run {
		i--
	}
	return list[i:]
}

// attemptBases returns, for each task of plan uid that has run before,
// the number of its latest attempt: the run numbers its attempts from
// there. An attempt that a dead runner left without an end record (its
// task is still INPROGRESS) counts too, from its streamed lines.
func attemptBases(tx *store.Tx, uid string, states map[string]State) (map[string]int, error) {
	recs, err := AttemptRecords(tx, uid)
	if err != nil {
		return nil, err
	}
	bases := make(map[string]int, len(recs))
	for task, list := range recs {
		bases[task] = list[len(list)-1].Number
	}
	for task, st := range states {
		if st.Status != StatusInProgress {
			continue
		}
		// Rare (a runner died): a read of the task's own logs.
		nums, err := Attempts(tx, uid, task)
		if err != nil {
			return nil, err
		}
		if len(nums) > 0 {
			bases[task] = max(bases[task], nums[len(nums)-1])
		}
	}
	return bases, nil
}
