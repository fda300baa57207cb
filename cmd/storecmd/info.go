package storecmd

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/store"
)

// InfoOptions are the inputs of "solar store info".
type InfoOptions struct {
	App  *app.App
	JSON bool
}

// NewCmdInfo builds "solar store info".
func NewCmdInfo(a *app.App, runF func(*InfoOptions) error) *cobra.Command {
	opts := &InfoOptions{App: a}
	c := &cobra.Command{
		Use:   "info",
		Short: "Print the store's backend, location, schema version and key counts",
		Long: `Print which backend holds the store (bbolt or postgresql), where it is (a URL's
password is never shown), the schema version, and how many keys each bucket
holds.` + "\n" + app.ExitHelp,
		Example: "  solar store info\n  solar store info --json\n  solar --db postgres://solar@db1/solar?schema=team_a store info",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return infoRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type infoView struct {
	FormatVersion int            `json:"format_version"`
	Backend       string         `json:"backend"`
	Location      string         `json:"location"`
	SchemaVersion int            `json:"schema_version"`
	Keys          int            `json:"keys"`
	Buckets       map[string]int `json:"buckets"`
}

func infoRun(opts *InfoOptions) error {
	a := opts.App
	p, err := a.StorePath()
	if err != nil {
		return err
	}
	db, err := a.OpenAt(p, true, true)
	if err != nil {
		return err
	}
	defer db.Close()
	v := infoView{FormatVersion: app.FormatVersion, Backend: db.Kind(), Location: db.Location(), SchemaVersion: store.SchemaVersion}
	err = db.View(func(tx *store.Tx) error {
		c, err := store.Count(tx)
		v.Buckets, v.Keys = c, c.Total()
		return err
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(a.IO.Out, v)
	}
	fmt.Fprintf(a.IO.Out, "backend:        %s\nlocation:       %s\nschema version: %d\nkeys:           %d\n",
		v.Backend, app.Escape(v.Location), v.SchemaVersion, v.Keys)
	rows := [][]string{}
	for _, b := range slices.Sorted(maps.Keys(v.Buckets)) {
		rows = append(rows, []string{b, strconv.Itoa(v.Buckets[b])})
	}
	return app.Table(a.IO.Out, []string{"BUCKET", "KEYS"}, rows)
}
