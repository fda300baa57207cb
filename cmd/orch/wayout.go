package orch

import (
	"fmt"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// printIdle answers "orch stop" of plan uid when no process runs it: the
// plan's state and what finishes it (orch.IdleAdvice), never a bare "not
// running" that leaves an unfinished plan with no way forward.
func printIdle(a *app.App, db *store.DB, uid string) error {
	var advice string
	err := db.View(func(tx *store.Tx) error {
		var err error
		advice, err = orch.IdleAdvice(tx, uid)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(a.IO.Out, advice)
	return nil
}
