package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"sync"
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
// ordinary bbolt commit and empties the journal: when pending grows past
// checkpointEntries or checkpointBytes, and on Close.
//
// The process holds the file's lock all that time, so no other process
// sees the file without the journal's writes. If it dies, the next Open
// (any process) replays the journal before anything else: records are
// absolute (a key's new value, a deletion, a counter's new value), so
// replaying one already folded in changes nothing. A record that was being
// written when the process died fails its length or checksum and is
// ignored, with everything after it: its transaction never returned.
type journal struct {
	mu      sync.RWMutex // Update: write; View: read
	f       *os.File
	end     int64 // bytes of whole records in f
	alloc   int64 // bytes of f written, records or zeros
	pending overlay
	buf     []byte
	noSync  bool
	broken  error // a failed sync: no record may follow
}

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

// openJournal folds a journal left by a dead process into the file, then,
// with Options.Journal, starts an empty one for this process.
func (s *Store) openJournal() error {
	jp := journalPath(s.path)
	data, err := os.ReadFile(jp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read journal %s: %w", jp, err)
	}
	if len(data) > 0 {
		if s.opts.ReadOnly {
			return errNeedsWrite
		}
		var o overlay
		replay(data, &o)
		if o.Len() > 0 {
			if err := s.db.Update(func(btx *bbolt.Tx) error { return fold(btx, &o) }); err != nil {
				return err
			}
		}
	}
	if len(data) > 0 {
		// Folded (bbolt synced it). Empty the journal durably before
		// anything else writes: replayed over newer writes, it would undo
		// them.
		if err := emptyFile(jp); err != nil {
			return err
		}
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
	s.jr = &journal{f: f, noSync: s.opts.NoSync}
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

// journaled runs fn over the file and the pending writes, then makes its
// own writes durable as one journal record.
func (s *Store) journaled(fn func(kv.Tx) error) error {
	j := s.jr
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return j.broken
	}
	w := &overlay{}
	err := s.db.View(func(btx *bbolt.Tx) error {
		return fn(&overlayTx{base: &tx{tx: btx}, layers: []*overlay{w, &j.pending}, w: w})
	})
	if err != nil || w.Len() == 0 {
		return err
	}
	j.buf = encode(j.buf, w)
	if err := j.grow(j.end + int64(len(j.buf))); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	if _, err := j.f.WriteAt(j.buf, j.end); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	if !j.noSync {
		if err := syscall.Fdatasync(int(j.f.Fd())); err != nil {
			// Whether the record reached the disk is unknown: a later
			// record must not follow it, so nothing more is written.
			j.broken = fmt.Errorf("sync journal: %w", err)
			return j.broken
		}
	}
	j.end += int64(len(j.buf))
	if cap(j.buf) > 16<<20 {
		j.buf = nil
	}
	j.pending.Merge(w)
	if j.pending.Len() >= checkpointEntries || j.pending.Bytes() >= checkpointBytes {
		return s.checkpointLocked()
	}
	return nil
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
	if j.pending.Len() == 0 {
		return nil
	}
	if err := s.db.Update(func(btx *bbolt.Tx) error { return fold(btx, &j.pending) }); err != nil {
		return err
	}
	// The file now has everything (bbolt synced it). Empty the journal
	// durably: a record written after the truncation must not be followed
	// by older ones coming back after a power loss.
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
	_ = s.jr.f.Close()
	if err == nil {
		_ = os.Remove(journalPath(s.path))
	}
	s.jr = nil
	return err
}
