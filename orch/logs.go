package orch

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// Task logs: what each attempt printed, kept with the plan in the store (so
// a shared store shares them), masked and capped by the handler. While an
// attempt runs, the runner appends its lines in chunks about twice a second
// (masked with the sensitive inputs), so "orch logs --follow" can stream
// them from another process; when the attempt ends, its chunks are replaced
// by the final log, masked with the outputs too.
//
//	log/UID/TASK/NNN/SSSSSSSS   a chunk of attempt NNN: lines "NANOS S TEXT\n"
//	logend/UID/TASK/NNN         the attempt ended: its log is final; who
//	                            ran it (attemptlog.go)
//
// NNN counts the task's attempts over the plan's whole life (attemptlog.go).

func logAttemptPrefix(uid, task string, attempt int) string {
	return fmt.Sprintf("log/%s/%s/%03d/", uid, task, attempt)
}
func logEndKey(uid, task string, attempt int) string {
	return fmt.Sprintf("logend/%s/%s/%03d", uid, task, attempt)
}

// chunkMax bounds one stored chunk.
const chunkMax = 64 << 10

func encodeLines(lines []handler.Line) []byte {
	var b []byte
	for _, l := range lines {
		b = strconv.AppendInt(b, l.At.UnixNano(), 10)
		b = append(b, ' ', l.Stream, ' ')
		b = append(b, l.Text...)
		b = append(b, '\n')
	}
	return b
}

func decodeLines(key string, raw []byte) ([]handler.Line, error) {
	var out []handler.Line
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		if nl < 0 {
			return nil, store.Damagedf("log record %s is cut short", key)
		}
		line := raw[:nl]
		raw = raw[nl+1:]
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 || len(line) < sp+3 {
			return nil, store.Damagedf("log record %s has a malformed line", key)
		}
		ns, err := strconv.ParseInt(string(line[:sp]), 10, 64)
		if err != nil {
			return nil, store.Damagedf("log record %s has a malformed time", key)
		}
		text := ""
		if len(line) > sp+3 {
			text = string(line[sp+3:])
		}
		out = append(out, handler.Line{At: time.Unix(0, ns), Stream: line[sp+1], Text: text})
	}
	return out, nil
}

// putLog writes lines as chunks of attempt, starting at chunk seq, and
// returns the next seq.
func putLog(tx *store.Tx, uid, task string, attempt, seq int, lines []handler.Line) (int, error) {
	p := logAttemptPrefix(uid, task, attempt)
	for len(lines) > 0 {
		n, size := 0, 0
		for n < len(lines) && (n == 0 || size+len(lines[n].Text)+32 <= chunkMax) {
			size += len(lines[n].Text) + 32
			n++
		}
		if err := tx.Put(store.Plans, p+fmt.Sprintf("%08x", seq), encodeLines(lines[:n])); err != nil {
			return seq, err
		}
		seq++
		lines = lines[n:]
	}
	return seq, nil
}

// finalLog replaces whatever was streamed of an attempt by its final log,
// and records the attempt's end with who ran it (end).
func finalLog(tx *store.Tx, uid, task string, attempt int, lines []handler.Line, end AttemptRecord) error {
	// Streamed chunks exist only if the attempt printed while it ran.
	if tx.Has(store.Plans, logAttemptPrefix(uid, task, attempt)+fmt.Sprintf("%08x", 0)) {
		if err := tx.DeletePrefix(store.Plans, logAttemptPrefix(uid, task, attempt)); err != nil {
			return err
		}
	}
	if _, err := putLog(tx, uid, task, attempt, 0, lines); err != nil {
		return err
	}
	v, err := encodeAttemptEnd(end)
	if err != nil {
		return err
	}
	return tx.Put(store.Plans, logEndKey(uid, task, attempt), v)
}

// TaskLog is the log of one attempt as stored.
type TaskLog struct {
	Attempt int
	Lines   []handler.Line
	Ended   bool // the attempt ended: no more lines will come
	Chunks  int  // chunks read, for following
	// Record is who ran the attempt, once it Ended.
	Record AttemptRecord
}

// Attempts lists the attempts of task that have a log, in order.
func Attempts(tx *store.Tx, uid, task string) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	add := func(k, prefix string) {
		rest := strings.TrimPrefix(k, prefix)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		if n, err := strconv.Atoi(rest); err == nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, p := range []string{"log/" + uid + "/" + task + "/", "logend/" + uid + "/" + task + "/"} {
		if err := tx.ForEach(store.Plans, p, func(k string, _ []byte) error {
			add(k, p)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(out); i++ { // few attempts: insertion sort
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// ReadLog returns attempt's log from chunk skip on.
func ReadLog(tx *store.Tx, uid, task string, attempt, skip int) (*TaskLog, error) {
	out := &TaskLog{Attempt: attempt, Record: AttemptRecord{Number: attempt}}
	end, err := tx.Get(store.Plans, logEndKey(uid, task, attempt))
	switch {
	case err == nil:
		out.Ended = true
		if out.Record, err = decodeAttemptEnd(logEndKey(uid, task, attempt), attempt, end); err != nil {
			return nil, err
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	p := logAttemptPrefix(uid, task, attempt)
	i := 0
	err = tx.ForEach(store.Plans, p, func(k string, v []byte) error {
		defer func() { i++ }()
		if i < skip {
			return nil
		}
		lines, err := decodeLines(k, v)
		if err != nil {
			return err
		}
		out.Lines = append(out.Lines, lines...)
		return nil
	})
	out.Chunks = i
	return out, err
}

// ResolveTask resolves the plan ref names ("last", "last~N" or a uid) and
// the task name names in it (see TaskID).
func ResolveTask(tx *store.Tx, ref, name string) (uid, task string, err error) {
	if uid, err = Resolve(tx, ref); err != nil {
		return "", "", err
	}
	rec, err := Load(tx, uid)
	if err != nil {
		return "", "", err
	}
	if task, err = TaskID(rec, name); err != nil {
		return "", "", err
	}
	return uid, task, nil
}

// AttemptLog is what "orch logs" shows of a task, read in one transaction.
type AttemptLog struct {
	// Finished is true when the task has finished.
	Finished bool
	// Running is true while a live process runs the plan: more lines may
	// come.
	Running bool
	// Log is the attempt's log; nil when the attempt has none (yet).
	Log *TaskLog
	// Attempts are the task's ended attempts over the plan's life, in the
	// order of their numbers, with who ran each.
	Attempts []AttemptRecord
}

// Logs reads the log of an attempt of task of plan uid (resolved by
// ResolveTask), from chunk skip on: attempt (counted from 1 over the
// plan's life, see attemptlog.go), or the latest attempt that has a log
// when attempt is 0.
func Logs(tx *store.Tx, uid, task string, attempt, skip int) (*AttemptLog, error) {
	st, err := TaskState(tx, uid, task)
	if err != nil {
		return nil, err
	}
	out := &AttemptLog{Finished: st.Status.Finished()}
	_, out.Running = Running(tx, uid)
	list, err := Attempts(tx, uid, task)
	if err != nil {
		return nil, err
	}
	if out.Attempts, err = TaskAttemptRecords(tx, uid, task); err != nil {
		return nil, err
	}
	// Numbered over the plan's life, the highest is the latest.
	if attempt == 0 && len(list) > 0 {
		attempt = list[len(list)-1]
	}
	if !slices.Contains(list, attempt) {
		return out, nil // not (yet) there
	}
	if out.Log, err = ReadLog(tx, uid, task, attempt, skip); err != nil {
		return nil, err
	}
	return out, nil
}

// ErrNoLog means a task has no log (yet).
var ErrNoLog = invalid.New("no log")

// liveLogs holds the lines of running attempts not yet streamed to the
// store.
type liveLogs struct {
	mu      sync.Mutex
	running map[string]*liveAttempt // task id -> its current attempt
}

type liveAttempt struct {
	attempt int
	seq     int
	pending []handler.Line
	ended   bool
}

func (l *liveLogs) begin(task string, attempt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.running = map[string]*liveAttempt{}
	}
	l.running[task] = &liveAttempt{attempt: attempt}
}

func (l *liveLogs) line(task string, ln handler.Line) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.running[task]; a != nil && !a.ended {
		a.pending = append(a.pending, ln)
	}
}

// end stops streaming task's attempt: its final log follows.
func (l *liveLogs) end(task string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.running[task]; a != nil {
		a.ended = true
		a.pending = nil
		delete(l.running, task)
	}
}

// any reports whether some running attempt has lines to stream.
func (l *liveLogs) any() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.running {
		if len(a.pending) > 0 {
			return true
		}
	}
	return false
}

// stream writes the pending lines of running attempts as chunks, inside
// tx. An attempt that ended meanwhile is skipped: its final log replaces
// everything (see finalLog), in a later transaction.
func (l *liveLogs) stream(tx *store.Tx, uid string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for task, a := range l.running {
		if a.ended || len(a.pending) == 0 {
			continue
		}
		seq, err := putLog(tx, uid, task, a.attempt, a.seq, a.pending)
		if err != nil {
			return err
		}
		a.seq, a.pending = seq, nil
	}
	return nil
}
