package main

import (
	"bytes"
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"
)

// cmdDamage is "damage MODE FILE [ARG]": damage a closed store the way
// disks and people do.
//
//	damage truncate FILE SIZE   cut the file to SIZE bytes
//	damage scribble FILE        overwrite every page after the two meta pages
//	damage nullplan FILE        replace every plan record with {"plan":null}
func cmdDamage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: damage truncate|scribble|nullplan FILE [SIZE]")
	}
	file := ts.MkAbs(args[1])
	switch args[0] {
	case "truncate":
		if len(args) != 3 {
			ts.Fatalf("usage: damage truncate FILE SIZE")
		}
		size, err := strconv.ParseInt(args[2], 10, 64)
		ts.Check(err)
		ts.Check(os.Truncate(file, size))
	case "scribble":
		raw, err := os.ReadFile(file)
		ts.Check(err)
		for i := 2 * 4096; i < len(raw); i++ {
			raw[i] = byte(i*7 + 3)
		}
		ts.Check(os.WriteFile(file, raw, 0o600))
	case "nullplan":
		db, err := bolt.Open(file, 0o600, nil)
		ts.Check(err)
		defer db.Close()
		ts.Check(db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("plans"))
			var keys [][]byte
			c := b.Cursor()
			for k, _ := c.Seek([]byte("plan/")); k != nil && bytes.HasPrefix(k, []byte("plan/")); k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			if len(keys) == 0 {
				ts.Fatalf("damage nullplan: no plan in %s", file)
			}
			for _, k := range keys {
				if err := b.Put(k, []byte(`{"plan":null}`)); err != nil {
					return err
				}
			}
			return nil
		}))
	default:
		ts.Fatalf("damage: unknown mode %q", args[0])
	}
}
