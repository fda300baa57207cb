package staging_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

func BenchmarkScratch(b *testing.B) {
	base, err := resources.LoadBase("../testdata/resources/noop")
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range []string{"none", "fanout", "chain"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/n=%d", shape, n), func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					db, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.Options{})
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					var tc, tn, tt time.Duration
					err = db.Update(func(tx *store.Tx) error {
						cat := resources.NewCatalog(tx)
						names := make([]string, n)
						t0 := time.Now()
						for i := range names {
							names[i] = fmt.Sprintf("r%d", i)
							if _, err := cat.Create(resources.CreateSpec{Name: names[i], Base: base, Tags: tags.Set{"env": "e1"}}, true); err != nil {
								return err
							}
						}
						t1 := time.Now()
						for i := 1; i < n && shape != "none"; i++ {
							from := names[0]
							if shape == "chain" {
								from = names[i-1]
							}
							if _, err := cat.Connect(from, names[i], nil); err != nil {
								return err
							}
						}
						t2 := time.Now()
						_, err := staging.New(cat, time.Now).Touch("create", names...)
						tc, tn, tt = t1.Sub(t0), t2.Sub(t1), time.Since(t2)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					b.Logf("create %v connect %v touch %v", tc, tn, tt)
					db.Close()
					b.StartTimer()
				}
			})
		}
	}
}
