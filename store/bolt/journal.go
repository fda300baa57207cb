package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	bbolt "go.etcd.io/bbolt"

	"github.com/solarops/solar/store/kv"
)

// The journal makes a runner's commits cheap without making them less
// durable. A bbolt commit costs two fdatasyncs and a dozen page writes; a
// journaled commit appends one checksummed record of the transaction's
// writes to <store>.journal and fdatasyncs it once. The writes stay in
// memory (pending) on top of the file, where this process's later
// transactions see them, until a checkpoint folds them into the file in one
// ordinary bbolt commit: when pending grows past checkpointEntries or
// checkpointBytes, and on Close.
//
// A checkpoint while the process runs happens behind its commits: the
// journal is renamed <store>.journal.old and a new one started (the
// directory synced before a record goes into it), and a goroutine folds
// the old one's writes into the file, then removes it; meanwhile those
// writes stay a layer under pending, and the commits go on into the new
// journal. One fold runs at a time. On Close the rest is folded at once.
//
// The process holds the file's lock all that time, so no other process
// sees the file without the journal's writes. If it dies, the next Open
// (any process) replays the journal before anything else: records are
// absolute (a key's new value, a deletion, a counter's new value), so
// replaying one already folded in changes nothing; an old journal is
// replayed before the journal, whose records are all newer. A record that
// was being written when the process died fails its length or checksum and
// is ignored, with everything after it: its transaction never returned.
type journal struct {
	mu      sync.RWMutex // Update: write; View: read
	path    string       // of the journal file
	fold    *behind      // the fold running behind the commits, or its failure; nil if none
	f       *os.File
	end     int64 // bytes of whole records in f
	alloc   int64 // bytes of f written, records or zeros
	pending overlay
	buf     []byte
	// spare is a transaction's overlay kept for the next one, and
	// folded the pending writes of the last fold, both emptied with their
	// room kept: growing a map to a few thousand keys cost a tenth of a
	// 100,000-task run's allocations.
	spare, folded *overlay
	noSync        bool
	broken        error // a failed sync or fold: no record may follow

	// A record's sync may come after its transaction returned (UpdateLate),
	// under syncMu alone, while the next transaction runs. Records are
	// counted: written once a record is wholly written, synced once a sync
	// covered it. What changes f or empties it holds syncMu too, having
	// synced every record written so far.
	syncMu  sync.Mutex
	written atomic.Int64
	synced  int64       // under syncMu
	syncErr error       // under syncMu: a failed sync, final
	failed  atomic.Bool // syncErr is set
}

// behind is a fold of an old journal's writes into the file, running on a
// goroutine of its own. w is frozen: the fold and every transaction read
// it at once. err is set before done is closed.
type behind struct {
	w    *overlay
	done chan struct{}
	err  error
}

// foldBehindAt is how many writes may wait in pending while a fold runs
// behind before a commit waits for it.
const foldBehindAt = 4 * checkpointEntries

// Checkpoint thresholds: enough to fold a few hundred tasks at once, small
// enough that a scan merging them with the file stays cheap.
const (
	checkpointEntries = 4096
	checkpointBytes   = 8 << 20
)

// The journal grows by journalChunk bytes of zeros at a time, ahead of the
// records. An fdatasync of a write that extends a file must also commit the
// file's new size (on ext4, a commit of the filesystem's own journal, with
// whatever else is in it: the scripts' files); of a write over blocks already
// written it flushes the data alone. Measured on the project's machine with
// a script appending to a file between commits: 194-229 µs per record
// appended, 118-129 µs per record written over zeros. Replay stops at the
// zeros: they are not a record.
const journalChunk = 1 << 20

var zeros [64 << 10]byte

// recordMagic starts every record: [magic][length][crc32c][payload].
const recordMagic = 0x534a5231 // "SJR1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Operations in a record's payload.
const (
	opPut    = 'P'
	opDelete = 'D'
	opSeq    = 'S'
)

func journalPath(path string) string { return path + ".journal" }

// oldJournalPath is where a journal being folded behind the commits is.
func oldJournalPath(path string) string { return journalPath(path) + ".old" }

// openJournal folds a journal left by a dead process into the file, then,
// with Options.Journal, starts an empty one for this process.
func (s *Store) openJournal() error {
	jp, op := journalPath(s.path), oldJournalPath(s.path)
	old, err := os.ReadFile(op)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read journal %s: %w", op, err)
	}
	data, err := os.ReadFile(jp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read journal %s: %w", jp, err)
	}
	if len(old) > 0 || len(data) > 0 {
		if s.opts.ReadOnly {
			return errNeedsWrite
		}
		// The old journal's records are older than every one of the
		// journal's: they go first.
		var o overlay
		replay(old, &o)
		replay(data, &o)
		if o.Len() > 0 {
			if err := s.db.Update(func(btx *bbolt.Tx) error { return fold(btx, &o) }); err != nil {
				return err
			}
		}
		// Folded (bbolt synced it). Empty the journal durably before
		// anything else writes: replayed over newer writes, it would undo
		// them. The old one, older still, goes.
		if len(data) > 0 {
			if err := emptyFile(jp); err != nil {
				return err
			}
		}
	}
	if s.opts.ReadOnly {
		return nil
	}
	if rerr := os.Remove(op); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return fmt.Errorf("remove journal %s: %w", op, rerr)
	}
	if !s.opts.Journal {
		if rerr := os.Remove(jp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("remove journal %s: %w", jp, rerr)
		}
		return nil
	}
	f, err := os.OpenFile(jp, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open journal %s: %w", jp, err)
	}
	s.jr = &journal{f: f, path: jp, noSync: s.opts.NoSync}
	return nil
}

// emptyFile truncates the file at path durably.
func emptyFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("empty journal: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("empty journal %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("empty journal %s: %w", path, err)
	}
	return nil
}

// replay reads whole records from data into o, in order, and stops at the
// first one that is incomplete or fails its checksum (a torn tail).
func replay(data []byte, o *overlay) int {
	n := 0
	le := binary.LittleEndian
	for len(data) >= 12 {
		if le.Uint32(data) != recordMagic {
			break
		}
		size := le.Uint32(data[4:])
		if uint64(size) > uint64(len(data)-12) {
			break
		}
		payload := data[12 : 12+size]
		if crc32.Checksum(payload, castagnoli) != le.Uint32(data[8:]) {
			break
		}
		var w overlay
		if !decodeRecord(payload, &w) {
			break
		}
		o.Merge(&w)
		data = data[12+size:]
		n++
	}
	return n
}

func decodeRecord(p []byte, o *overlay) bool {
	next := func() (string, bool) {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return "", false
		}
		s := string(p[k : k+int(l)])
		p = p[k+int(l):]
		return s, true
	}
	for len(p) > 0 {
		op := p[0]
		p = p[1:]
		bucket, ok := next()
		if !ok {
			return false
		}
		switch op {
		case opPut, opDelete:
			key, ok := next()
			if !ok {
				return false
			}
			if op == opDelete {
				o.Set(bucket, key, nil, true)
				continue
			}
			v, ok := next()
			if !ok {
				return false
			}
			o.Set(bucket, key, []byte(v), false)
		case opSeq:
			n, k := binary.Uvarint(p)
			if k <= 0 {
				return false
			}
			p = p[k:]
			o.SetSeq(bucket, n)
		default:
			return false
		}
	}
	return true
}

// encode renders w as one record into buf.
func encode(buf []byte, w *overlay) []byte {
	buf = append(buf[:0], make([]byte, 12)...)
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	for _, b := range w.Buckets() {
		for _, k := range w.Keys(b, "") {
			v, _ := w.Lookup(b, k)
			if v.Deleted {
				buf = append(buf, opDelete)
				str(b)
				str(k)
				continue
			}
			buf = append(buf, opPut)
			str(b)
			str(k)
			buf = binary.AppendUvarint(buf, uint64(len(v.V)))
			buf = append(buf, v.V...)
		}
	}
	for _, b := range w.SeqBuckets() {
		n, _ := w.Seq(b)
		buf = append(buf, opSeq)
		str(b)
		buf = binary.AppendUvarint(buf, n)
	}
	le := binary.LittleEndian
	le.PutUint32(buf, recordMagic)
	le.PutUint32(buf[4:], uint32(len(buf)-12))
	le.PutUint32(buf[8:], crc32.Checksum(buf[12:], castagnoli))
	return buf
}

// fold writes o into the file, key by key in order.
func fold(btx *bbolt.Tx, o *overlay) error {
	for _, name := range o.Buckets() {
		b := btx.Bucket([]byte(name))
		if b == nil {
			return kv.Damagedf("the journal names bucket %q, which the store does not have", name)
		}
		b.FillPercent = fillPercent
		for _, k := range o.Keys(name, "") {
			v, _ := o.Lookup(name, k)
			var err error
			if v.Deleted {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v.V)
			}
			if err != nil {
				return err
			}
		}
	}
	for _, name := range o.SeqBuckets() {
		n, _ := o.Seq(name)
		b := btx.Bucket([]byte(name))
		if b == nil {
			return kv.Damagedf("the journal names bucket %q, which the store does not have", name)
		}
		if err := b.SetSequence(n); err != nil {
			return err
		}
	}
	return nil
}

// journaled runs fn over the file and the pending writes, then writes its
// own writes as one journal record and returns the record's number. The
// record is durable on return unless late: then syncTo(record) makes it so.
func (s *Store) journaled(fn func(kv.Tx) error, late bool) (record int64, err error) {
	j := s.jr
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.settle(j.pending.Len() >= foldBehindAt); err != nil {
		return 0, err
	}
	w := j.spare
	if w == nil {
		w = &overlay{}
	}
	j.spare = nil
	layers := []*overlay{w, &j.pending}
	if j.fold != nil {
		layers = append(layers, j.fold.w)
	}
	err = s.db.View(func(btx *bbolt.Tx) error {
		return fn(&overlayTx{base: &tx{tx: btx}, layers: layers, w: w})
	})
	if err != nil || w.Len() == 0 {
		j.keepSpare(w)
		return 0, err
	}
	j.buf = encode(j.buf, w)
	if err := j.grow(j.end + int64(len(j.buf))); err != nil {
		return 0, fmt.Errorf("write journal: %w", err)
	}
	if _, err := j.f.WriteAt(j.buf, j.end); err != nil {
		return 0, fmt.Errorf("write journal: %w", err)
	}
	record = j.written.Add(1)
	if !late {
		if err := j.syncTo(record); err != nil {
			// Whether the record reached the disk is unknown: a later
			// record must not follow it, so nothing more is written.
			j.broken = err
			return 0, err
		}
	}
	j.end += int64(len(j.buf))
	if cap(j.buf) > 16<<20 {
		j.buf = nil
	}
	if j.pending.Len() == 0 {
		// Nothing pending (a fold has just taken it): the transaction's
		// writes become the pending ones as they are, rather than be
		// copied key by key (24,000 keys for 4,096 noop tasks), and the
		// room pending had is the next transaction's.
		j.pending, *w = *w, j.pending
	} else {
		j.pending.Merge(w)
	}
	j.keepSpare(w)
	if (j.pending.Len() >= checkpointEntries || j.pending.Bytes() >= checkpointBytes) && j.fold == nil {
		// This transaction is durable whatever happens to the fold: a
		// failure to start one fails the next transaction.
		if err := s.foldBehind(); err != nil {
			j.broken = err
		}
	}
	return record, nil
}

// syncTo makes the first n records durable: one fdatasync covers every
// record written when it starts, so a sync that finds its record covered
// by another returns at once. A failed sync fails every later one.
func (j *journal) syncTo(n int64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	return j.syncLocked(n)
}

// syncData makes f's data durable; tests replace it to hold or fail a sync.
var syncData = func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// syncLocked is syncTo with syncMu held.
func (j *journal) syncLocked(n int64) error {
	if j.syncErr != nil {
		return j.syncErr
	}
	if n <= j.synced {
		return nil
	}
	target := j.written.Load()
	if !j.noSync {
		if err := syncData(j.f); err != nil {
			j.syncErr = fmt.Errorf("sync journal: %w", err)
			j.failed.Store(true)
			return j.syncErr
		}
	}
	j.synced = target
	return nil
}

// settle ends what the fold behind the commits left, if it is done, or
// with wait once it is. A failed fold breaks the journal for good: its
// writes are still in the old journal and stay a layer of every
// transaction, but no other fold can start behind it.
func (j *journal) settle(wait bool) error {
	if j.broken != nil {
		return j.broken
	}
	if j.failed.Load() {
		j.syncMu.Lock()
		j.broken = j.syncErr
		j.syncMu.Unlock()
		return j.broken
	}
	f := j.fold
	if f == nil {
		return nil
	}
	if wait {
		<-f.done
	} else {
		select {
		case <-f.done:
		default:
			return nil
		}
	}
	if f.err != nil {
		j.broken = fmt.Errorf("fold the journal into the store: %w", f.err)
		return j.broken
	}
	j.fold = nil
	// No view reads it any more: they hold mu, as the caller does.
	if f.w.Room() <= roomMax {
		f.w.Reset()
		j.folded = f.w
	}
	return nil
}

// roomMax is the most keys an emptied overlay may have had room for to be
// kept: more is memory held for good after a rare big transaction.
const roomMax = 4 * foldBehindAt

// keepSpare keeps w, which the transaction is done with, for the next one.
func (j *journal) keepSpare(w *overlay) {
	if w.Room() > roomMax {
		return
	}
	w.Reset()
	j.spare = w
}

// foldBehind starts folding the pending writes into the file on a
// goroutine: the journal becomes the old journal, a new one takes the
// commits, and the writes stay a layer until they are in the file. No
// fold may be running.
func (s *Store) foldBehind() error {
	j := s.jr
	// Every record of the old journal is durable before it is renamed: a
	// late sync must not find the new file under its record.
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if err := j.syncLocked(j.written.Load()); err != nil {
		return err
	}
	op := oldJournalPath(s.path)
	if err := os.Rename(j.path, op); err != nil {
		return fmt.Errorf("start a new journal: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("start a new journal: %w", err)
	}
	if !j.noSync {
		// The rename and the new file reach the disk before a record goes
		// into it: else a crash could lose the new file's records, or
		// bring the old journal back under the new one's name.
		if err := syncDir(filepath.Dir(j.path)); err != nil {
			_ = f.Close()
			return fmt.Errorf("start a new journal: %w", err)
		}
	}
	_ = j.f.Close()
	j.f, j.end, j.alloc = f, 0, 0
	w := new(overlay)
	*w = j.pending
	w.Freeze()
	j.pending = overlay{}
	if j.folded != nil {
		j.pending, j.folded = *j.folded, nil
	}
	b := &behind{w: w, done: make(chan struct{})}
	j.fold = b
	go func() {
		defer close(b.done)
		b.err = s.db.Update(func(btx *bbolt.Tx) error { return fold(btx, w) })
		if b.err == nil {
			if err := os.Remove(op); err != nil && !errors.Is(err, fs.ErrNotExist) {
				b.err = err
			}
		}
	}()
	return nil
}

// syncDir makes the entries of directory dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// grow writes zeros past the records, in whole chunks, until the file has
// size bytes written. They reach the disk with the next record's sync.
func (j *journal) grow(size int64) error {
	if size <= j.alloc {
		return nil
	}
	target := (size + journalChunk - 1) / journalChunk * journalChunk
	for j.alloc < target {
		n := min(int64(len(zeros)), target-j.alloc)
		if _, err := j.f.WriteAt(zeros[:n], j.alloc); err != nil {
			return err
		}
		j.alloc += n
	}
	return nil
}

// checkpoint folds the pending writes into the file and empties the
// journal.
func (s *Store) checkpoint() error {
	s.jr.mu.Lock()
	defer s.jr.mu.Unlock()
	return s.checkpointLocked()
}

func (s *Store) checkpointLocked() error {
	j := s.jr
	if err := j.settle(true); err != nil {
		return err
	}
	if j.pending.Len() == 0 {
		return nil
	}
	if err := s.db.Update(func(btx *bbolt.Tx) error { return fold(btx, &j.pending) }); err != nil {
		return err
	}
	// The file now has everything (bbolt synced it), the records not yet
	// synced too: a late sync has nothing left to do.
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.syncErr != nil {
		return j.syncErr
	}
	j.synced = j.written.Load()
	// Empty the journal durably: a record written after the truncation
	// must not be followed by older ones coming back after a power loss.
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("empty journal: %w", err)
	}
	if !j.noSync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("empty journal: %w", err)
		}
	}
	j.end, j.alloc = 0, 0
	j.pending.Reset()
	return nil
}

// closeJournal folds what is pending into the file and removes the
// emptied journal.
func (s *Store) closeJournal() error {
	err := s.checkpoint()
	j := s.jr
	j.syncMu.Lock()
	_ = j.f.Close()
	j.syncMu.Unlock()
	if err == nil {
		_ = os.Remove(journalPath(s.path))
	}
	s.jr = nil
	return err
}
