package main

import (
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// cmdUnpin is "unpin PLAN": make plan PLAN ("last" works) of the store
// $SOLAR_DB look as a solar from before pins made it, with no pin of any
// task and no mark that it was pinned, so that scripts can show how such
// a plan reads.
func cmdUnpin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unpin PLAN")
	}
	db, err := store.Open(ts.Getenv("SOLAR_DB"), store.Options{LockWait: 10 * time.Second})
	ts.Check(err)
	defer db.Close()
	ts.Check(db.Update(func(tx *store.Tx) error {
		uid, err := orch.Resolve(tx, args[0])
		if err != nil {
			return err
		}
		if !orch.Pinned(tx, uid) {
			ts.Fatalf("unpin: plan %s has no pins", uid)
		}
		if err := tx.DeletePrefix(store.Plans, "pin/"+uid+"/"); err != nil {
			return err
		}
		return tx.Delete(store.Plans, "pinned/"+uid)
	}))
}
