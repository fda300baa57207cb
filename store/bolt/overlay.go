package bolt

import (
	"bytes"
	"errors"
	"slices"

	"github.com/solarops/solar/store/kv"
)

// overlay is a set of writes not yet in the bbolt file (kv.Writes).
type overlay = kv.Writes

// overlayTx reads through its layers (newest first) to the bbolt
// transaction below, and writes into the top layer, w. A view has no w.
type overlayTx struct {
	base   *tx
	layers []*overlay // newest first; layers[0] == w when writable
	w      *overlay
}

func (t *overlayTx) Writable() bool { return t.w != nil }

func (t *overlayTx) lookup(bucket, key string) (kv.Entry, bool) {
	for _, o := range t.layers {
		if v, ok := o.Lookup(bucket, key); ok {
			return v, true
		}
	}
	return kv.Entry{}, false
}

func (t *overlayTx) Get(bucket, key string) ([]byte, error) {
	v, err := t.Peek(bucket, key)
	return bytes.Clone(v), err
}

// Peek returns the bytes the overlay or the file holds (a write replaces
// an overlay's value, never changes it).
func (t *overlayTx) Peek(bucket, key string) ([]byte, error) {
	if v, ok := t.lookup(bucket, key); ok {
		if v.Deleted {
			return nil, kv.ErrNotFound
		}
		return v.V, nil
	}
	return t.base.Peek(bucket, key)
}

func (t *overlayTx) Has(bucket, key string) bool {
	if v, ok := t.lookup(bucket, key); ok {
		return !v.Deleted
	}
	return t.base.Has(bucket, key)
}

func (t *overlayTx) Put(bucket, key string, value []byte) error {
	if t.w == nil {
		return kv.ErrReadOnly
	}
	t.base.bucket(bucket) // an unknown bucket is a bug, as in bbolt
	if value == nil {
		value = []byte{}
	}
	t.w.Set(bucket, key, bytes.Clone(value), false)
	return nil
}

func (t *overlayTx) Delete(bucket, key string) error {
	if t.w == nil {
		return kv.ErrReadOnly
	}
	t.base.bucket(bucket)
	t.w.Set(bucket, key, nil, true)
	return nil
}

func (t *overlayTx) NextSequence(bucket string) (uint64, error) {
	if t.w == nil {
		return 0, kv.ErrReadOnly
	}
	n, _ := t.Sequence(bucket)
	n++
	t.w.SetSeq(bucket, n)
	return n, nil
}

func (t *overlayTx) Sequence(bucket string) (uint64, error) {
	for _, o := range t.layers {
		if n, ok := o.Seq(bucket); ok {
			return n, nil
		}
	}
	return t.base.sequence(bucket), nil
}

func (t *overlayTx) SetSequence(bucket string, n uint64) error {
	if t.w == nil {
		return kv.ErrReadOnly
	}
	t.base.bucket(bucket)
	t.w.SetSeq(bucket, n)
	return nil
}

// pending returns the overlay's keys with prefix in order, each with the
// newest layer's word on it.
func (t *overlayTx) pending(bucket, prefix string) ([]string, []kv.Entry) {
	var keys []string
	for _, o := range t.layers {
		keys = append(keys, o.Keys(bucket, prefix)...)
	}
	if len(t.layers) > 1 {
		slices.Sort(keys)
		keys = slices.Compact(keys)
	}
	vals := make([]kv.Entry, len(keys))
	for i, k := range keys {
		vals[i], _ = t.lookup(bucket, k)
	}
	return keys, vals
}

func (t *overlayTx) ForEach(bucket, prefix string, fn func(key string, value []byte) error) error {
	keys, vals := t.pending(bucket, prefix)
	if len(keys) == 0 {
		return t.base.ForEach(bucket, prefix, fn)
	}
	i, stopped := 0, false
	// emit sends the overlay's keys before limit (all of them when
	// limit is ""), skipping deletions.
	emit := func(limit string, all bool) error {
		for ; i < len(keys) && (all || keys[i] < limit); i++ {
			if vals[i].Deleted {
				continue
			}
			if err := fn(keys[i], vals[i].V); err != nil {
				i++
				return err
			}
		}
		return nil
	}
	err := t.base.ForEach(bucket, prefix, func(k string, v []byte) error {
		if err := emit(k, false); err != nil {
			stopped = true
			return err
		}
		if i < len(keys) && keys[i] == k {
			i++
			if vals[i-1].Deleted {
				return nil
			}
			v = vals[i-1].V
		}
		if err := fn(k, v); err != nil {
			stopped = true
			return err
		}
		return nil
	})
	if err != nil || stopped {
		return err
	}
	if err := emit("", true); err != nil && !errors.Is(err, kv.ErrStop) {
		return err
	}
	return nil
}

func (t *overlayTx) Last(bucket, prefix string) (string, []byte, error) {
	keys, vals := t.pending(bucket, prefix)
	if len(keys) == 0 {
		return t.base.Last(bucket, prefix)
	}
	// The overlay's greatest live key competes with the file's greatest
	// key that the overlay does not delete.
	var (
		ok    string
		ov    []byte
		found bool
	)
	for j := len(keys) - 1; j >= 0; j-- {
		if !vals[j].Deleted {
			ok, ov, found = keys[j], vals[j].V, true
			break
		}
	}
	bk, bv, err := t.base.Last(bucket, prefix)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return "", nil, err
	}
	if err == nil {
		if v, hit := t.lookup(bucket, bk); hit && v.Deleted {
			// Rare: the file's last key is deleted; walk the merged view.
			var (
				lk   string
				lv   []byte
				seen bool
			)
			if err := t.ForEach(bucket, prefix, func(k string, v []byte) error {
				lk, lv, seen = k, v, true
				return nil
			}); err != nil {
				return "", nil, err
			}
			if !seen {
				return "", nil, kv.ErrNotFound
			}
			return lk, bytes.Clone(lv), nil
		}
		if !found || bk > ok {
			if v, hit := t.lookup(bucket, bk); hit {
				bv = bytes.Clone(v.V)
			}
			return bk, bv, nil
		}
	}
	if !found {
		return "", nil, kv.ErrNotFound
	}
	return ok, bytes.Clone(ov), nil
}
