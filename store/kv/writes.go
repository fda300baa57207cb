package kv

import (
	"maps"
	"slices"
	"strings"
)

// Writes are writes not yet in a backend's storage: per bucket the new
// value of each key written (or its deletion), and the counters set. A
// backend keeps a transaction's writes in one (PostgreSQL until commit),
// or many transactions' (bbolt's journal until a checkpoint), and reads
// through them. Keys are kept for ordered scans as a sorted run plus an
// unsorted tail of new keys, merged when a scan needs them: writing 40,000
// keys and never scanning costs one sort, not 40,000 insertions into a
// sorted slice. The zero value is empty and ready.
type Writes struct {
	buckets map[string]*pendingBucket
	seqs    map[string]uint64
	entries int // keys written
	bytes   int // of keys and values
	room    int // the most keys held before a Reset
}

type pendingBucket struct {
	vals   map[string]Entry
	sorted []string
	tail   []string // keys of vals not in sorted
}

// Entry is what Writes holds for a key: its new value, or its deletion.
type Entry struct {
	V       []byte
	Deleted bool
}

// Set records a put of v, or with deleted a deletion, of key.
func (w *Writes) Set(bucket, key string, v []byte, deleted bool) {
	p := w.buckets[bucket]
	if p == nil {
		if w.buckets == nil {
			w.buckets = map[string]*pendingBucket{}
		}
		p = &pendingBucket{vals: map[string]Entry{}}
		w.buckets[bucket] = p
	}
	if old, ok := p.vals[key]; ok {
		w.bytes -= len(old.V)
	} else {
		p.tail = append(p.tail, key)
		w.entries++
		w.bytes += len(bucket) + len(key)
	}
	p.vals[key] = Entry{V: v, Deleted: deleted}
	w.bytes += len(v)
}

// Lookup returns the entry of key: ok false when nothing was written to it.
func (w *Writes) Lookup(bucket, key string) (Entry, bool) {
	p := w.buckets[bucket]
	if p == nil {
		return Entry{}, false
	}
	e, ok := p.vals[key]
	return e, ok
}

// SetSeq sets the bucket's counter.
func (w *Writes) SetSeq(bucket string, n uint64) {
	if w.seqs == nil {
		w.seqs = map[string]uint64{}
	}
	w.seqs[bucket] = n
}

// Seq returns the bucket's counter, if it was set.
func (w *Writes) Seq(bucket string) (uint64, bool) {
	n, ok := w.seqs[bucket]
	return n, ok
}

// Keys returns the written keys of bucket with prefix, in order. The
// slice stays valid while writes go on: they make new slices.
func (w *Writes) Keys(bucket, prefix string) []string {
	p := w.buckets[bucket]
	if p == nil {
		return nil
	}
	all := p.sortedKeys()
	i, _ := slices.BinarySearch(all, prefix)
	j := i
	for j < len(all) && strings.HasPrefix(all[j], prefix) {
		j++
	}
	return all[i:j:j]
}

// Buckets returns the buckets written to, in order.
func (w *Writes) Buckets() []string { return slices.Sorted(maps.Keys(w.buckets)) }

// SeqBuckets returns the buckets whose counter was set, in order.
func (w *Writes) SeqBuckets() []string { return slices.Sorted(maps.Keys(w.seqs)) }

// Len is the number of keys written and counters set.
func (w *Writes) Len() int { return w.entries + len(w.seqs) }

// Bytes is the size of the keys and values written.
func (w *Writes) Bytes() int { return w.bytes }

// Merge records every write of o, which is newer, in w.
func (w *Writes) Merge(o *Writes) {
	for _, b := range o.Buckets() {
		p := o.buckets[b]
		for _, k := range p.sortedKeys() {
			e := p.vals[k]
			w.Set(b, k, e.V, e.Deleted)
		}
	}
	for b, n := range o.seqs {
		w.SetSeq(b, n)
	}
}

// Freeze readies w for reads from many goroutines at once: a scan sorts
// the keys it finds unsorted in place, a write in all but name. Writes
// after Freeze undo it.
func (w *Writes) Freeze() {
	for _, p := range w.buckets {
		p.sortedKeys()
	}
}

// Reset forgets everything. It keeps the room its maps grew to: the
// journal fills them again, to about the same size, after every
// checkpoint.
func (w *Writes) Reset() {
	w.room = max(w.room, w.entries)
	for _, p := range w.buckets {
		clear(p.vals)
		p.sorted, p.tail = nil, p.tail[:0]
	}
	clear(w.seqs)
	w.entries, w.bytes = 0, 0
}

// Room is about how many keys w's maps have room for: the most it held,
// now or before a Reset.
func (w *Writes) Room() int { return max(w.room, w.entries) }

// sortedKeys merges the tail into the sorted run and returns it.
func (p *pendingBucket) sortedKeys() []string {
	if len(p.tail) == 0 {
		return p.sorted
	}
	slices.Sort(p.tail)
	merged := make([]string, 0, len(p.sorted)+len(p.tail))
	a, b := p.sorted, p.tail
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			merged, a = append(merged, a[0]), a[1:]
		} else {
			merged, b = append(merged, b[0]), b[1:]
		}
	}
	merged = append(append(merged, a...), b...)
	p.sorted, p.tail = merged, nil
	return merged
}
