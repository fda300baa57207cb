package kvtest

import (
	"fmt"
	"testing"

	"github.com/solarops/solar/store/kv"
)

// Bench runs the benchmarks every backend reports, so that their figures
// compare side by side (benchstat): one transaction of 40,000 puts (a
// 10,000-resource composition), 1,000 small transactions of 10 puts (a
// runner's task records), and a scan of 10,000 keys. open returns an empty
// store with Buckets, closed by the caller's cleanup.
func Bench(b *testing.B, open func(b *testing.B) kv.Backend) {
	value := make([]byte, 200)
	for i := range value {
		value[i] = byte(i)
	}
	b.Run("Put/one-update/n=40000", func(b *testing.B) {
		s := open(b)
		round := 0
		for b.Loop() {
			round++ // new keys each round: inserts, not rewrites of equal values
			if err := s.Update(func(tx kv.Tx) error {
				for i := range 40000 {
					if err := tx.Put("one", fmt.Sprintf("r%03d/%06d", round, i), value); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Update/small/updates=1000/puts=10", func(b *testing.B) {
		s := open(b)
		round := 0
		for b.Loop() {
			round++
			for u := range 1000 {
				if err := s.Update(func(tx kv.Tx) error {
					if _, err := tx.Get("two", fmt.Sprintf("t%03d/%04d", round, u)); err != nil && err != kv.ErrNotFound {
						return err
					}
					for i := range 10 {
						if err := tx.Put("two", fmt.Sprintf("t%03d/%04d/%d", round, u, i), value); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("ForEach/n=10000", func(b *testing.B) {
		s := open(b)
		if err := s.Update(func(tx kv.Tx) error {
			for i := range 10000 {
				if err := tx.Put("one", fmt.Sprintf("k%06d", i), value); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			n := 0
			if err := s.View(func(tx kv.Tx) error {
				return tx.ForEach("one", "k", func(string, []byte) error { n++; return nil })
			}); err != nil || n != 10000 {
				b.Fatalf("%d keys, %v", n, err)
			}
		}
	})
}
