package resource

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// CreateOptions are the inputs of "solar resource create".
type CreateOptions struct {
	App    *app.App
	Name   string
	Base   string
	Values []string
	Tags   []string
	Meta   []string
}

// NewCmdCreate builds "solar resource create". runF replaces the run step in
// tests; nil means the real one.
func NewCmdCreate(a *app.App, runF func(*CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{App: a}
	c := &cobra.Command{
		Use:   "create NAME BASE_DIR|COMPOSITION.yaml [INPUT=VALUE | JSON]...",
		Short: "Create a resource from a base, or many from a composition file",
		Long: `Create a resource from a base directory and stage its run action.

Values are INPUT=VALUE (VALUE is read as YAML for non-string inputs, so
port=3306 is a number and backends=[a,b] a list) or one JSON object. NAME is
[a-z0-9][a-z0-9_.-]*. Every resource carries the tag resource=NAME.

Given a composition file instead of a base, every resource in it is created,
its "other::input" references become connections and its events become rules,
all or nothing. Ids in the file are used as written; each resource also gets
the tag composition=NAME.` + "\n" + app.ExitHelp,
		Example: `  solar resource create node1 testdata/resources/node ip=10.0.0.1 --tags env1
  solar resource create db testdata/resources/mariadb '{"dir": "/tmp/solar", "root_password": "s3cret"}' --tags env1,role=db
  solar resource create web testdata/resources/haproxy dir=/tmp/solar --meta retry=2,timeout=30s --meta sema=web:1,sema=disk:2
  SOLAR_DEMO_DIR=/tmp/demo solar resource create openstack testdata/examples/openstack/composition.yaml`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.Base, opts.Values = args[0], args[1], args[2:]
			if runF != nil {
				return runF(opts)
			}
			return createRun(opts)
		},
	}
	// Split by hand, not as CSV: pflag's CSV reader ends a value at a line
	// break and silently drops the rest ("k=a\nb" lost b).
	c.Flags().StringArrayVarP(&opts.Tags, "tags", "t", nil, "tags k=v or bare labels, comma separated (repeatable)")
	c.Flags().StringArrayVar(&opts.Meta, "meta", nil, "metaparameters retry=N, delay=D, timeout=D, sema=NAME:N, drift_ignore=NAME, rate=NAME:N/UNIT[:BURST], limit=N/UNIT, burst=N, comma separated (repeatable; sema, drift_ignore and rate add to their lists)")
	return c
}

// parseMeta reads --meta values: each holds comma-separated key=value
// pairs, like --tags ("retry=3,delay=200ms"), and --meta may be repeated.
// A sema value is one NAME:COUNT, so a piece without "=" right after a
// sema pair continues it: "sema=db:1,web:2" stays the list it always was.
// Splitting is by hand, not as CSV, for the reason --tags gives.
func parseMeta(items []string) (resources.Meta, error) {
	var m resources.Meta
	for _, it := range items {
		list := ""
		for _, piece := range strings.Split(it, ",") {
			k, v, ok := strings.Cut(piece, "=")
			if !ok && list != "" && strings.TrimSpace(piece) != "" {
				k, v = list, piece
			} else if !ok {
				return m, fmt.Errorf("%w: --meta %q: want key=value pairs separated by commas", resources.ErrInvalid, it)
			}
			list = ""
			if resources.IsListMeta(k) {
				list = k
			}
			if err := m.SetMeta(k, v); err != nil {
				return m, err
			}
		}
	}
	return m, nil
}

func createRun(opts *CreateOptions) error {
	var items []string
	for _, t := range opts.Tags {
		items = append(items, strings.Split(t, ",")...)
	}
	ts, err := tags.ParseList(items)
	if err != nil {
		return err
	}
	meta, err := parseMeta(opts.Meta)
	if err != nil {
		return err
	}
	if resources.IsComposition(opts.Base) {
		if len(opts.Values) > 0 || len(opts.Tags) > 0 || len(opts.Meta) > 0 {
			return app.Usagef("a composition takes no values, --tags or --meta; set them in %s", opts.Base)
		}
		return createComposition(opts)
	}
	vals, err := resources.ParseValues(opts.Values)
	if err != nil {
		return err
	}
	base, err := resources.LoadBase(opts.Base)
	if err != nil {
		return err
	}
	var staged []*staging.Entry
	err = opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if _, err := cat.Create(resources.CreateSpec{Name: opts.Name, Base: base, Values: vals, Tags: ts, Meta: meta}, false); err != nil {
			return err
		}
		staged, err = staging.New(cat, opts.App.Now).By(opts.App.Actor()).Touch("create", opts.Name)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "created %s from %s%s\n", opts.Name, app.Escape(base.Name), stagedNote(staged))
	return nil
}

// stagedNote tells the user what a change staged.
func stagedNote(ents []*staging.Entry) string {
	if len(ents) == 0 {
		return " (nothing staged)"
	}
	keys := make([]string, len(ents))
	for i, e := range ents {
		keys[i] = e.Key
	}
	if len(keys) > 4 {
		keys = append(keys[:4], fmt.Sprintf("and %d more", len(ents)-4))
	}
	return "; staged " + strings.Join(keys, ", ")
}

func createComposition(opts *CreateOptions) error {
	comp, err := resources.LoadComposition(opts.Base, opts.App.Getenv)
	if err != nil {
		return err
	}
	rules := make([]events.Rule, 0, len(comp.Events))
	for _, ev := range comp.Events {
		r, err := events.Parse(ev.Text)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", comp.Path, ev.Line, err)
		}
		rules = append(rules, r)
	}
	var (
		res    *resources.CompositionResult
		staged []*staging.Entry
		added  int
	)
	err = opts.App.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		var err error
		if res, err = cat.CreateComposition(opts.Name, comp); err != nil {
			return err
		}
		if added, err = events.Add(tx, cat, rules...); err != nil {
			return fmt.Errorf("%s: %w", comp.Path, err)
		}
		if added, err = addDefaultRules(tx, cat, res.Connections, added); err != nil {
			return err
		}
		names := make([]string, len(res.Resources))
		for i, r := range res.Resources {
			names[i] = r.Name
		}
		staged, err = staging.New(cat, opts.App.Now).By(opts.App.Actor()).Touch("create", names...)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "created %s, %s and %s from %s; staged %s\n",
		app.Count(len(res.Resources), "resource"), app.Count(len(res.Connections), "connection"), app.Count(added, "rule"), app.Escape(opts.Base), app.Count(len(staged), "entry"))
	return nil
}

// addDefaultRules adds the dependency rules every connection implies
// (SPEC section 4), as "solar connect" does.
func addDefaultRules(tx *store.Tx, cat *resources.Catalog, conns []resources.Connection, added int) (int, error) {
	pairs := make([]events.Pair, len(conns))
	for i, c := range conns {
		pairs[i] = events.Pair{Emitter: c.Emitter, Receiver: c.Receiver}
	}
	owned, _, err := events.AddDefaults(tx, cat, pairs...)
	if err != nil {
		return added, err
	}
	for i, c := range conns {
		if len(owned[i]) == 0 {
			continue
		}
		if err := cat.AddConnectionRules(c.Emitter, c.Receiver, owned[i]); err != nil {
			return added, err
		}
		added += len(owned[i])
	}
	return added, nil
}
