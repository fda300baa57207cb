package pg

import (
	"slices"
	"strings"
)

// writes are a transaction's pending writes: per bucket the new value of
// each key written (or its deletion), and the counters set. Keys are
// kept for ordered scans as a sorted run plus an unsorted tail of new keys,
// merged when a scan needs them: a transaction that writes 40,000 keys and
// never scans pays one sort, not 40,000 insertions into a sorted slice.
type writes struct {
	buckets map[string]*pending
	seqs    map[string]uint64
}

type pending struct {
	vals   map[string]entry
	sorted []string
	tail   []string // keys of vals not in sorted
}

type entry struct {
	v       []byte
	deleted bool
}

func (w *writes) set(bucket, key string, v []byte, deleted bool) {
	p := w.buckets[bucket]
	if p == nil {
		if w.buckets == nil {
			w.buckets = map[string]*pending{}
		}
		p = &pending{vals: map[string]entry{}}
		w.buckets[bucket] = p
	}
	if _, ok := p.vals[key]; !ok {
		p.tail = append(p.tail, key)
	}
	p.vals[key] = entry{v: v, deleted: deleted}
}

func (w *writes) lookup(bucket, key string) (entry, bool) {
	p := w.buckets[bucket]
	if p == nil {
		return entry{}, false
	}
	e, ok := p.vals[key]
	return e, ok
}

// setSeq sets the bucket's counter.
func (w *writes) setSeq(bucket string, n uint64) {
	if w.seqs == nil {
		w.seqs = map[string]uint64{}
	}
	w.seqs[bucket] = n
}

// keys returns the pending keys of bucket with prefix, in order. The slice
// stays valid while the transaction writes on: writes make new slices.
func (w *writes) keys(bucket, prefix string) []string {
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

// sortedKeys merges the tail into the sorted run and returns it.
func (p *pending) sortedKeys() []string {
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
