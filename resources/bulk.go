package resources

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/solarops/solar/store"
)

// bbolt splits a node only when the transaction commits, so every key a
// transaction inserts into a bucket lands in one growing node, and a key
// inserted before others moves all of them. A composition inserts four or
// five keys per resource (the resource, its connection and the index entry
// of it, its effective values and their sensitivity) in creation order,
// which is not key order (r10 sorts before r2): 100,000 chained resources
// took a minute, two thirds of it moving node entries. During a
// composition the catalog therefore keeps its writes to its own buckets in
// memory (a bulk write) and stores them in key order when it ends, where
// each insert lands after the one before and the cost stays linear.
//
// Reads see the pending writes. Lookups of one key are a map access; a
// prefix scan over one group of keys of the connections bucket (everything
// up to and including the first NUL: a resource's connections in or out)
// merges the group's pending keys into what the store holds; any other scan
// first stores what is pending.

// bulk is the write buffer of a catalog during a composition.
type bulk struct {
	writes map[bulkKey]bulkWrite
	// groups holds, per bucket and group prefix, the keys written in the
	// group: unordered, possibly repeated, possibly no longer pending (a
	// scan sorts them and looks each up in writes). A slice, not a set: a
	// composition has two groups per connection, most of one key. Only
	// the connections bucket is scanned by group (see grouped).
	groups map[bulkKey][]string
	// fresh holds the resources this bulk write created that had no
	// pending write before: the store holds nothing of them in the
	// effective bucket (Delete forgets it) nor connections (Delete
	// removes them), so forgetting them drops pending writes, and their
	// connections are read from the pending writes, without looking in
	// the store.
	fresh map[string]bool
}

type bulkKey struct{ bucket, key string }

// bulkWrite is a pending value, or a pending deletion when del is set.
type bulkWrite struct {
	value []byte
	del   bool
}

// grouped reports whether the keys of bucket are kept by group: the
// buckets whose groups are scanned during a bulk write.
func grouped(bucket string) bool { return bucket == store.Connections }

// freshGroup reports whether the group prefix of the connections bucket
// ("in/NAME\x00" or "out/NAME\x00") is of a resource this bulk write
// created (see fresh).
func (b *bulk) freshGroup(prefix string) bool {
	_, rest, ok := strings.Cut(prefix, "/")
	return ok && b.fresh[strings.TrimSuffix(rest, "\x00")]
}

// group returns the group prefix of key ("in/r1\x00" for "in/r1\x00r2"),
// or "" for a key without NUL, which belongs to no group.
func group(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		return key[:i+1]
	}
	return ""
}

// startBulk makes the catalog keep its writes until endBulk; hint is the
// number of writes expected.
func (c *Catalog) startBulk(hint int) {
	c.bulk = &bulk{writes: make(map[bulkKey]bulkWrite, hint), groups: make(map[bulkKey][]string, hint/2), fresh: map[string]bool{}}
}

// endBulk stores the pending writes and ends the bulk write.
func (c *Catalog) endBulk() error {
	err := c.flushBulk()
	c.bulk = nil
	return err
}

// flushBulk stores the pending writes, bucket by bucket in key order.
func (c *Catalog) flushBulk() error {
	b := c.bulk
	if b == nil || len(b.writes) == 0 {
		return nil
	}
	// Bucket by bucket, each sorted on a core of its own.
	type entry struct {
		key string
		bulkWrite
	}
	count := map[string]int{}
	for k := range b.writes {
		count[k.bucket]++
	}
	byBucket := make(map[string][]entry, len(count))
	for name, n := range count {
		byBucket[name] = make([]entry, 0, n)
	}
	for k, w := range b.writes {
		byBucket[k.bucket] = append(byBucket[k.bucket], entry{k.key, w})
	}
	buckets := slices.Sorted(maps.Keys(byBucket))
	var wg sync.WaitGroup
	for _, name := range buckets {
		wg.Go(func() {
			slices.SortFunc(byBucket[name], func(x, y entry) int { return strings.Compare(x.key, y.key) })
		})
	}
	wg.Wait()
	for _, name := range buckets {
		for _, e := range byBucket[name] {
			var err error
			if e.del {
				err = c.tx.Delete(name, e.key)
			} else {
				err = c.tx.Put(name, e.key, e.value)
			}
			if err != nil {
				return err
			}
		}
	}
	clear(b.writes)
	clear(b.groups)
	clear(b.fresh)
	return nil
}

// get reads key from bucket, pending writes first. The bytes may be the
// store's own (store.Tx.Peek): callers decode them before they write.
func (c *Catalog) get(bucket, key string) ([]byte, error) {
	if c.bulk != nil {
		if w, ok := c.bulk.writes[bulkKey{bucket, key}]; ok {
			if w.del {
				return nil, store.ErrNotFound
			}
			return w.value, nil
		}
		if name, _, _ := strings.Cut(key, "\x00"); bucket == store.Effective && c.bulk.fresh[name] {
			return nil, store.ErrNotFound // see fresh
		}
	}
	return c.tx.Peek(bucket, key)
}

// put writes key in bucket, or keeps the write during a bulk write.
func (c *Catalog) put(bucket, key string, value []byte) error {
	if c.bulk == nil {
		return c.tx.Put(bucket, key, value)
	}
	if !c.tx.Writable() {
		return store.ErrReadOnly
	}
	if value == nil {
		value = []byte{}
	}
	c.pend(bucket, key, bulkWrite{value: value})
	return nil
}

// del deletes key from bucket, or keeps the deletion during a bulk write.
// A key the store does not hold needs no deletion, only its pending write
// dropped.
func (c *Catalog) del(bucket, key string) error {
	if c.bulk == nil {
		return c.tx.Delete(bucket, key)
	}
	if !c.tx.Writable() {
		return store.ErrReadOnly
	}
	if !c.tx.Has(bucket, key) {
		delete(c.bulk.writes, bulkKey{bucket, key})
		return nil
	}
	c.pend(bucket, key, bulkWrite{del: true})
	return nil
}

func (c *Catalog) pend(bucket, key string, w bulkWrite) {
	k := bulkKey{bucket, key}
	if _, ok := c.bulk.writes[k]; !ok && grouped(bucket) {
		if g := group(key); g != "" {
			gk := bulkKey{bucket, g}
			c.bulk.groups[gk] = append(c.bulk.groups[gk], key)
		}
	}
	c.bulk.writes[k] = w
}

// forEach calls fn for every key of bucket with the given prefix, in key
// order, pending writes included, as store.Tx.ForEach does.
func (c *Catalog) forEach(bucket, prefix string, fn func(key string, value []byte) error) error {
	if c.bulk == nil {
		return c.tx.ForEach(bucket, prefix, fn)
	}
	if prefix == "" || group(prefix) != prefix || !grouped(bucket) {
		if err := c.flushBulk(); err != nil {
			return err
		}
		return c.tx.ForEach(bucket, prefix, fn)
	}
	gk := bulkKey{bucket, prefix}
	keys := c.bulk.groups[gk]
	// A resource this bulk write created has no connections in the store
	// (Delete removes them with it): only pending ones.
	stored := !c.bulk.freshGroup(prefix)
	if len(keys) == 0 {
		if !stored {
			return nil
		}
		return c.tx.ForEach(bucket, prefix, fn)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	c.bulk.groups[gk] = keys
	// Collect what the store holds (fn may write, which a store scan does
	// not allow), then merge the pending keys in.
	type kv struct {
		key   string
		value []byte
	}
	var all []kv
	if stored {
		if err := c.tx.ForEach(bucket, prefix, func(k string, v []byte) error {
			if _, pending := c.bulk.writes[bulkKey{bucket, k}]; !pending {
				all = append(all, kv{k, slices.Clone(v)})
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if w, ok := c.bulk.writes[bulkKey{bucket, k}]; ok && !w.del {
			all = append(all, kv{k, w.value})
		}
	}
	slices.SortFunc(all, func(x, y kv) int { return strings.Compare(x.key, y.key) })
	for _, e := range all {
		if err := fn(e.key, e.value); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}
