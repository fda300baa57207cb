package orch

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// ledger is the run's record in the store. It buffers the state changes
// the walker reports and the writes attempts leave behind (their final
// logs, the records of their process groups), and writes them: at once
// when a change must be durable before the walk goes on (flush, synced
// later by syncLast and waited for at the gates: gateOf), behind the walk
// when the buffer is full (flushBehind), when the store idles or closes
// (flushOnClose), and when the run ends (drain). The write of a task's
// final state commits what the task did (apply, commit.go): the outputs it
// sent, its staged entry, the refreshes it leaves.
//
// The walker's goroutine calls begin, persist, persistBatch and syncLast
// (Walker.Begin, Persist, PersistBatch, Sync); the tasks' goroutines call
// gateOf, inputs, keepRan, later and recordProcs; the store's idle timer
// calls flushOnClose with the store held; Run calls drain once the walk
// has ended. bufMu guards the buffer and the write behind, mu the values
// tasks ran with and sent.
//
// It guarantees that changes reach the store in the order they were
// buffered; that a final state with side effects, and everything buffered
// before it, is written before persist returns and durable before a task
// that depends on it starts its script; and that after a write behind
// failed nothing buffered later is written, and the walk fails at the
// runner's next write. Every write also looks for a stop request, and an
// eager one on a shared store for edits (ctl).
type ledger struct {
	sdb   *sharedDB
	uid   string
	infos map[string]*taskInfo
	now   func() time.Time // Runner.Now, for the commits of staged entries
	ctl   *control         // told of every write's transaction
	// actor and host are the runner's (Runner.Actor, runHost): who ran
	// the entries the ledger commits, and the refreshes and outputs it
	// stages.
	actor, host string

	mu      sync.Mutex
	outputs map[string]map[string]any // task id -> outputs of its successful run
	ran     map[string]map[string]any // task id -> inputs it ran with
	// effective holds each resource's effective inputs, read once when the
	// run starts (one catalog, so a long chain costs linear time) and
	// refreshed for the receivers of a task's outputs. Changes made by
	// other commands during the run are seen by the next run.
	effective map[string]map[string]any
	// sent holds, in a pinned plan, the values outputs gave inputs during
	// the run (and, on resume, before it: resumedOutputs), by
	// "resource.input": a task runs with its pin's values overridden by
	// these (pinnedInputs), never with the resources' current values,
	// which may hold changes staged outside the plan.
	sent map[string]any

	// buf holds the changes not written yet (see persist), started the
	// place in buf of each task's buffered INPROGRESS state, and spare an
	// emptied buffer to reuse. procs holds the tasks whose attempts this
	// run recorded (recordProcs); planProcs says whether the store held
	// records of attempts of the plan when the run started. A task
	// outside both has no record to remove when it finishes.
	bufMu   sync.Mutex
	buf     []pendingWrite
	started map[string]int
	spare   []pendingWrite
	// behind is closed when the write behind in flight ends (nil when
	// none is); behindFailed is the error of the first that failed.
	behind       chan struct{}
	behindFailed error
	// durable waits until the last eager write (flush) is on disk.
	durable   func() error
	procs     map[string]bool
	planProcs bool

	// stopLooked is when an idle flush last looked for a stop request
	// (unix nanoseconds).
	stopLooked atomic.Int64
}

// newLedger returns the ledger of a run of plan uid's tasks, infos, whose
// store held records of the plan's attempts if hasProcs. Each task's
// resource starts with the effective inputs prepare read.
func newLedger(sdb *sharedDB, uid string, infos map[string]*taskInfo, now func() time.Time, ctl *control, hasProcs bool) *ledger {
	l := &ledger{sdb: sdb, uid: uid, infos: infos, now: now, ctl: ctl, planProcs: hasProcs,
		outputs: map[string]map[string]any{}, ran: map[string]map[string]any{}, effective: map[string]map[string]any{}}
	for _, info := range infos {
		if info.inputs != nil && info.pin == nil {
			l.effective[info.node.Resource] = info.inputs
		}
	}
	return l
}

// inputs returns the inputs task info runs with now: its pin's values, or
// in a plan made before pins its resource's effective values, as outputs
// of the tasks before it left them.
func (l *ledger) inputs(info *taskInfo) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if info.pin != nil {
		return l.pinnedInputs(info)
	}
	return info.inputsFrom(l.effective[info.node.Resource])
}

// pinnedInputs returns task info's pinned inputs, each overridden by what
// an output sent to the input it comes from (pin.Sources: the emitter's
// input, at the head of a chain of connections) or, for an input no
// connection feeds, to the input itself. The caller holds mu.
func (l *ledger) pinnedInputs(info *taskInfo) map[string]any {
	out := info.inputsFrom(info.pin.Inputs)
	if len(l.sent) == 0 {
		return out
	}
	for k := range out {
		src, fed := info.pin.Sources[k]
		if !fed {
			src = info.node.Resource + "." + k
		}
		if v, ok := l.sent[src]; ok {
			out[k] = v
		}
	}
	partInputs(out, info.pin.Parts, l.sent)
	return out
}

// keepSent records that an output of the run gave input k of resource
// res the value v.
func (l *ledger) keepSent(res, k string, v any) {
	l.mu.Lock()
	if l.sent == nil {
		l.sent = map[string]any{}
	}
	l.sent[res+"."+k] = v
	l.mu.Unlock()
}

// keepRan keeps what task id's successful attempt ran with and sent, for
// the commit that writes its final state (apply).
func (l *ledger) keepRan(id string, inputs, outputs map[string]any) {
	l.mu.Lock()
	l.outputs[id] = outputs
	l.ran[id] = inputs
	l.mu.Unlock()
}

// later buffers write, for task, to be made in the transaction of the
// next batch.
func (l *ledger) later(task string, write func(*store.Tx) error) {
	l.bufMu.Lock()
	l.buf = append(l.buf, pendingWrite{task: task, write: write})
	l.bufMu.Unlock()
}

// begin records that task id starts, unless another command skipped it
// or marked it NOOP since the runner last looked (see edit.go): then it
// returns that final state (Walker.Begin). The store stays acquired from
// the look (control.ended) to the buffering of INPROGRESS, so no other
// process can write in between.
func (l *ledger) begin(id string, st State) (State, error) {
	db, opens, err := l.sdb.acquireCounted()
	if err != nil {
		return State{}, err
	}
	defer l.sdb.release()
	if end, err := l.ctl.ended(db, opens, id); err != nil || end.Status != "" {
		return end, err
	}
	return State{}, l.persist(id, st)
}

// persist records a state change. Final states of tasks with side effects
// are written at once, with everything buffered before them; the rest is
// buffered.
func (l *ledger) persist(id string, st State) error {
	info := l.infos[id]
	l.bufMu.Lock()
	l.bufferState(id, st)
	lazy := st.Status == StatusInProgress || info.noop || info.problem != "" || st.Status == StatusSkipped || MarkedNoop(st)
	big, failed := len(l.buf) >= lazyMax, l.behindFailed
	l.bufMu.Unlock()
	return l.writeBuffered(!lazy, big, failed)
}

// writeBuffered writes what persist or persistBatch buffered: at once when
// a change must be durable now (eager), behind the walk when the buffer is
// full, else not yet. failed is the error of a write behind that failed,
// read with the buffer.
func (l *ledger) writeBuffered(eager, big bool, failed error) error {
	switch {
	case eager:
		return l.flush()
	case big:
		return l.flushBehind()
	}
	return failed
}

// lazyMax is how many changes the buffer holds before they are written
// even though none must be durable yet. Tests lower it.
var lazyMax = 4096

// lateHook, when set (by tests), wraps the durable of each eager write.
var lateHook func(durable func() error) func() error

// behindHook, when set (by tests), runs on a write behind's goroutine
// before it writes; an error fails the write.
var behindHook func() error

// persistBatch records the final states of tasks that finished together,
// in one transaction when any of them needs to be durable now (group
// commit).
func (l *ledger) persistBatch(ids []string, states []State) error {
	eager := false
	l.bufMu.Lock()
	for i, id := range ids {
		st := states[i]
		l.bufferState(id, st)
		info := l.infos[id]
		if !(info.noop || info.problem != "" || st.Status == StatusSkipped) {
			eager = true
		}
	}
	big, failed := len(l.buf) >= lazyMax, l.behindFailed
	l.bufMu.Unlock()
	return l.writeBuffered(eager, big, failed)
}

// flushBehind writes the buffered changes, none of which must be durable
// before the walk goes on, in a transaction of their own on another
// goroutine: the walker keeps scheduling (a chain of 100,000 noop tasks
// spends most of its time in these writes). One such write is in flight
// at most; writes stay in the order their changes were buffered, since
// every other write waits for it first (waitBehind). A failed write fails
// the walk at the runner's next write. Only the walker's goroutine calls
// it, as it does flush.
func (l *ledger) flushBehind() error {
	if err := l.waitBehind(); err != nil {
		return err
	}
	l.bufMu.Lock()
	batch := l.buf
	l.buf = nil
	clear(l.started)
	done := make(chan struct{})
	l.behind = done
	l.bufMu.Unlock()
	if len(batch) == 0 {
		l.endBehind(done, nil)
		return nil
	}
	go func() {
		var err error
		if behindHook != nil {
			err = behindHook()
		}
		if err != nil {
			l.endBehind(done, err)
			return
		}
		err = l.sdb.Update(func(tx *store.Tx) error {
			if err := l.write(tx, batch); err != nil {
				return err
			}
			return l.ctl.checkStop(tx)
		})
		if err == nil {
			l.written(batch)
			l.recycle(batch)
		}
		l.endBehind(done, err)
	}()
	return nil
}

// endBehind records how the write behind that done stands for ended.
func (l *ledger) endBehind(done chan struct{}, err error) {
	l.bufMu.Lock()
	if err != nil && l.behindFailed == nil {
		l.behindFailed = err
	}
	l.behind = nil
	l.bufMu.Unlock()
	close(done)
}

// waitBehind waits for the write behind in flight, if any, and returns the
// error of any that failed.
func (l *ledger) waitBehind() error {
	l.bufMu.Lock()
	done := l.behind
	l.bufMu.Unlock()
	if done != nil {
		<-done
	}
	return l.behindErr()
}

// behindErr returns the error of a write behind that failed, if any.
func (l *ledger) behindErr() error {
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	return l.behindFailed
}

// pendingWrite is one buffered change: task id's state st, or write.
type pendingWrite struct {
	id    string
	st    State
	write func(*store.Tx) error
	task  string // the task write is for (an attempt's log, its processes' record)
}

// bufferState buffers task id's state st; the caller holds bufMu. A final
// state replaces the task's INPROGRESS one if that is still buffered: both
// would be written in one transaction, where the first is never seen.
func (l *ledger) bufferState(id string, st State) {
	if l.buf == nil {
		l.buf, l.spare = l.spare, nil
	}
	if st.Status == StatusInProgress {
		if l.started == nil {
			l.started = map[string]int{}
		}
		l.started[id] = len(l.buf)
	} else if i, ok := l.started[id]; ok {
		l.buf[i] = pendingWrite{}
		delete(l.started, id)
	}
	l.buf = append(l.buf, pendingWrite{id: id, st: st})
}

// take empties the buffer and returns what it held, in order.
func (l *ledger) take() []pendingWrite {
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	batch := l.buf
	l.buf = nil
	clear(l.started)
	return batch
}

// write writes batch, a buffer take returned, in tx.
func (l *ledger) write(tx *store.Tx, batch []pendingWrite) error {
	// One catalog for the batch, emptied for each task (apply): a batch
	// of noop tasks is thousands.
	cat := resources.NewCatalog(tx)
	for _, w := range batch {
		var err error
		switch {
		case w.write != nil:
			err = w.write(tx)
		case w.id != "":
			err = l.apply(tx, cat, w.id, w.st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recycle keeps batch, written, for the buffer to reuse.
func (l *ledger) recycle(batch []pendingWrite) {
	clear(batch)
	l.bufMu.Lock()
	l.spare = batch[:0]
	l.bufMu.Unlock()
}

// flush writes every buffered change in one transaction, which may become
// durable after flush returns: the walker syncs it (syncLast) before it
// starts a task that depends on others, or once it has started the tasks
// it can; the tasks that depend on it also wait for that just before
// their scripts start (gateOf).
func (l *ledger) flush() error {
	if err := l.waitBehind(); err != nil {
		return err
	}
	batch := l.take()
	if len(batch) == 0 {
		return nil
	}
	defer l.recycle(batch)
	durable, err := l.sdb.UpdateLate(func(tx *store.Tx) error {
		if err := l.write(tx, batch); err != nil {
			return err
		}
		if l.sdb.shared() {
			// On a shared store others write beside the run: look for
			// their edits here, which spares begin a transaction of its
			// own for the tasks that start next.
			if err := l.ctl.lookWhileWriting(tx); err != nil {
				return err
			}
		}
		return l.ctl.checkStop(tx)
	})
	if err == nil {
		l.written(batch)
		if lateHook != nil {
			durable = lateHook(durable)
		}
		l.bufMu.Lock()
		l.durable = durable
		l.bufMu.Unlock()
	}
	return err
}

// syncLast makes the last eager write durable, on the walker's goroutine
// (Walker.Sync): before it starts a task that waits for it in its gate,
// and when it is about to wait for tasks to end. A failed sync is
// reported by the gates and by the next write.
func (l *ledger) syncLast() {
	l.bufMu.Lock()
	durable := l.durable
	l.bufMu.Unlock()
	if durable != nil {
		_ = durable()
	}
}

// gateOf returns what task t's scripts wait for before they start: the
// sync of the last transaction written, which holds the final states and
// commits of every task t depends on (they finished before it started, and
// syncs happen in order). A task that depends on none starts at once.
func (l *ledger) gateOf(t *walk.Task) func() error {
	if len(t.In) == 0 && len(t.Earlier) == 0 {
		return nil
	}
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	return l.durable
}

// written forgets the outputs and inputs of the tasks whose final states
// batch held, now written: only their commit read them, and a run of
// 100,000 tasks kept them all until it ended. (A transaction retried
// calls apply again: they are kept until it is written.)
func (l *ledger) written(batch []pendingWrite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range batch {
		if w.id != "" && w.st.Status.Finished() {
			delete(l.outputs, w.id)
			delete(l.ran, w.id)
		}
	}
}

// flushOnClose writes buffered changes before the store closes for idling,
// so that other commands see the run as it is.
func (l *ledger) flushOnClose(db *store.DB, closing bool) {
	// Changes buffered after a write behind still in flight wait for it:
	// they must not reach the store before the older ones.
	var batch []pendingWrite
	l.bufMu.Lock()
	if l.behind == nil {
		batch = l.buf
		l.buf = nil
		clear(l.started)
	}
	l.bufMu.Unlock()
	// Idle checks come every few milliseconds: with nothing to write they
	// only look for a stop request, and not that often (a shared store
	// would see a transaction per check).
	now := time.Now().UnixNano()
	if !closing && len(batch) == 0 && now-l.stopLooked.Load() < int64(l.ctl.pollEvery()) {
		return
	}
	l.stopLooked.Store(now)
	err := db.Update(func(tx *store.Tx) error {
		// Called with the shared store held: its fence, by hand.
		if l.sdb.fence != nil {
			if err := l.sdb.fence(tx); err != nil {
				return err
			}
		}
		if err := l.write(tx, batch); err != nil {
			return err
		}
		return l.ctl.checkStop(tx)
	})
	if err == nil {
		l.written(batch)
	}
}

// drain writes what is still buffered, inside tx; nothing if a write
// behind failed, since what it held would then be missing before it.
func (l *ledger) drain(tx *store.Tx) error {
	batch := l.take()
	if l.behindErr() != nil {
		return nil
	}
	return l.write(tx, batch)
}

// resumedOutputs returns, for a pinned plan that an earlier run left
// unfinished, the values that run's outputs gave the inputs the remaining
// tasks wait for (pin.Later), by "resource.input" (ledger.sent): the task
// that sent them succeeded, so they are in its resource's record, where
// sendOutputs wrote them. Only those inputs are read there; a change
// staged on them since would make the plan stale.
func resumedOutputs(tx *store.Tx, states map[string]State, infos map[string]*taskInfo) (map[string]any, error) {
	var sent map[string]any
	cat := resources.NewCatalog(tx)
	for id, info := range infos {
		if info.pin == nil || states[id].Status.Finished() {
			continue
		}
		for in, from := range info.pin.Later {
			src, ok := info.pin.Sources[in]
			if !ok || states[from].Status != StatusSuccess {
				continue
			}
			if _, done := sent[src]; done {
				continue
			}
			i := strings.LastIndexByte(src, '.')
			r, err := cat.Get(src[:max(i, 0)])
			if errors.Is(err, resources.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if v, ok := r.Inputs[src[i+1:]]; ok && v != nil {
				if sent == nil {
					sent = map[string]any{}
				}
				sent[src] = v
			}
		}
	}
	return sent, nil
}

// untake puts batch, which take returned and whose write failed, back in
// front of what was buffered since.
func (l *ledger) untake(batch []pendingWrite) {
	if len(batch) == 0 {
		return
	}
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	l.buf = append(batch, l.buf...)
	clear(l.started)
}
