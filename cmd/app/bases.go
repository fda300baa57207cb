package app

import (
	"fmt"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// warnMissingBases says on stderr, in one line and once per command, that
// the store has resources whose base files it lacks: made by an earlier
// solar, their directory was gone when the store was upgraded. The line
// names them and the command that re-points them; runs of them are
// refused on their own (resources.CheckBase). A store without such
// resources costs one empty read.
func (a *App) warnMissingBases(db *store.DB) {
	if a.warned {
		return
	}
	a.warned = true
	var list []resources.MissingBase
	err := db.View(func(tx *store.Tx) error {
		var err error
		list, err = resources.MissingBases(tx)
		return err
	})
	if err != nil || len(list) == 0 {
		return
	}
	fmt.Fprintf(a.IO.Err, "solar: warning: %s\n", Escape(resources.BaseMissing(list).Error()))
}
