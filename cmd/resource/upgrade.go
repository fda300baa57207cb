package resource

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// UpgradeOptions are the inputs of "solar resource upgrade".
type UpgradeOptions struct {
	App *app.App
	// Name is the resource to upgrade; "" when Tags select them.
	Name string
	// Dir is the base directory to read; "" is each resource's own.
	Dir  string
	Tags []string
	JSON bool
}

// NewCmdUpgrade builds "solar resource upgrade".
func NewCmdUpgrade(a *app.App, runF func(*UpgradeOptions) error) *cobra.Command {
	opts := &UpgradeOptions{App: a}
	c := &cobra.Command{
		Use:   "upgrade NAME [DIR] | upgrade -t TAGS [DIR]",
		Short: "Give resources the base files as they are now in a directory, and stage the change",
		Long: `A resource runs the base files stored when it was created: editing the
directory afterwards changes nothing until "resource upgrade" reads it again
(DIR, by default the directory the resource was created from), stores the
new files and stages NAME.update (run if it was never committed) whose
diff names what changed:

  ~ base: web@3f2a9c1b2d4e >> web@8c1d0e7f9a2b
  + actions/new.sh        - actions/old.sh        ~ actions/run.sh
  + newinput: default     - oldinput: value

Inputs the new meta.yaml adds take their defaults; those it drops lose their
values, unless a connection maps into or out of them: that is refused (exit
2), disconnect first. A DIR whose base has another name re-points the
resource to it. A base with the same digest as now changes nothing.
Discarding the staged entry (solar ch discard NAME.update) puts the old base
back.

With -t, every resource the tag expression selects is upgraded, all or
nothing: the members of a composition are tagged composition=NAME. Without
DIR each is read from its own directory; with DIR only those created from
DIR are upgraded.

Exit status 0 means every resource was upgraded or unchanged; 2, a bad base
directory, a connected input dropped or another bad input (nothing was
changed); 1, an error (store busy, I/O).` + "\n" + app.ExitHelp,
		Example: `  vi bases/web/actions/run.sh
  solar resource upgrade web
  solar ch diff web.update
  solar resource upgrade web /srv/bases/web-v2
  solar resource upgrade -t composition=openstack
  solar resource upgrade -t composition=openstack testdata/resources/mariadb --json`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case len(opts.Tags) > 0 && len(args) > 1:
				return app.Usagef("with -t, give at most DIR")
			case len(opts.Tags) > 0 && len(args) == 1:
				opts.Dir = args[0]
			case len(opts.Tags) > 0:
			case len(args) == 0:
				return app.Usagef("give the resource to upgrade (NAME) or -t TAGS")
			default:
				opts.Name = args[0]
				if len(args) == 2 {
					opts.Dir = args[1]
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return upgradeRun(opts)
		},
	}
	c.Flags().StringArrayVarP(&opts.Tags, "tag", "t", nil, "upgrade every resource this tag expression selects (repeatable: union)")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

// upgradeJSON is the --json document of "resource upgrade".
type upgradeJSON struct {
	FormatVersion int           `json:"format_version"`
	Resources     []upgradeView `json:"resources"`
}

// upgradeView is what upgrading one resource did.
type upgradeView struct {
	Name      string            `json:"name"`
	Old       resources.BaseRef `json:"old"`
	New       resources.BaseRef `json:"new"`
	Dir       string            `json:"dir"`
	Unchanged bool              `json:"unchanged"`
	Repointed bool              `json:"repointed"`
	// OldFilesStored is false for a resource created before bases were
	// stored: Files then lists nothing.
	OldFilesStored bool                    `json:"old_files_stored"`
	Files          []fileView              `json:"files"`
	InputsAdded    []string                `json:"inputs_added"`
	InputsRemoved  []string                `json:"inputs_removed"`
	InputsChanged  []resources.InputChange `json:"inputs_changed"`
	Staged         []string                `json:"staged"`
}

// fileView is one file of a base that changed; old and new are
// fingerprints of its mode and bytes, never the bytes.
type fileView struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

func upgradeRun(opts *UpgradeOptions) error {
	names, dirs, err := upgradeTargets(opts)
	if err != nil {
		return err
	}
	// The directories are read before the store is locked, each once.
	loaded := map[string]*resources.Base{}
	for i, dir := range dirs {
		if loaded[dir] != nil {
			continue
		}
		if loaded[dir], err = resources.LoadBase(dir); err != nil {
			if opts.Dir == "" {
				return fmt.Errorf("%s: %w (give the directory: solar resource upgrade %s DIR)", names[i], err, names[i])
			}
			return err
		}
	}
	views := make([]upgradeView, 0, len(names))
	err = opts.App.Update(func(tx *store.Tx) error {
		views = views[:0]
		cat := resources.NewCatalog(tx)
		st := staging.New(cat, opts.App.Now).By(opts.App.Actor())
		for i, name := range names {
			v, err := upgradeOne(cat, st, name, loaded[dirs[i]])
			if err != nil {
				return err
			}
			views = append(views, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, upgradeJSON{FormatVersion: app.FormatVersion, Resources: views})
	}
	for _, v := range views {
		printUpgrade(opts.App.IO.Out, v)
	}
	return nil
}

// upgradeTargets returns the resources to upgrade with the directory each
// is read from.
func upgradeTargets(opts *UpgradeOptions) (names, dirs []string, err error) {
	var filter *tags.Expr
	if len(opts.Tags) > 0 {
		if filter, err = tags.ParseAny(opts.Tags); err != nil {
			return nil, nil, err
		}
	}
	want := ""
	if opts.Dir != "" {
		if want, err = filepath.Abs(opts.Dir); err != nil {
			return nil, nil, app.Usagef("directory %s: %v", opts.Dir, err)
		}
	}
	err = opts.App.View(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		if filter == nil {
			r, err := cat.Get(opts.Name)
			if err != nil {
				return err
			}
			names, dirs = []string{r.Name}, []string{r.Base.Dir}
			if want != "" {
				dirs[0] = want
			}
			return nil
		}
		list, err := cat.List(filter)
		if err != nil {
			return err
		}
		for _, r := range list {
			if want == "" || r.Base.Dir == want {
				names, dirs = append(names, r.Name), append(dirs, r.Base.Dir)
			}
		}
		return nil
	})
	if err == nil && len(names) == 0 {
		expr := strings.Join(opts.Tags, " | ")
		if want != "" {
			return nil, nil, fmt.Errorf("%w: no resource tagged %s was created from %s (see solar resource list -t '%s')", resources.ErrNotFound, expr, opts.Dir, expr)
		}
		return nil, nil, fmt.Errorf("%w: no resource is tagged %s (see solar resource list)", resources.ErrNotFound, expr)
	}
	return names, dirs, err
}

// upgradeOne upgrades one resource and stages the change.
func upgradeOne(cat *resources.Catalog, st *staging.Stager, name string, b *resources.Base) (upgradeView, error) {
	u, err := cat.Upgrade(name, b)
	if err != nil {
		return upgradeView{}, err
	}
	v := upgradeView{Name: name, Old: u.Old, New: u.New, Dir: b.Dir, Unchanged: u.Unchanged, Repointed: u.Old.Name != u.New.Name,
		OldFilesStored: u.OldFiles, Files: []fileView{}, InputsAdded: u.Added, InputsRemoved: u.Removed, InputsChanged: u.Changed, Staged: []string{}}
	if u.Unchanged {
		v.Repointed, v.InputsAdded, v.InputsRemoved, v.InputsChanged = u.Moved, []string{}, []string{}, []resources.InputChange{}
		return v, nil
	}
	for _, d := range u.Files {
		v.Files = append(v.Files, fileView{Op: d.Op, Path: d.Path, Old: d.Old, New: d.New})
	}
	staged, err := st.Upgrade(u)
	if err != nil {
		return upgradeView{}, err
	}
	for _, e := range staged {
		v.Staged = append(v.Staged, e.Key)
	}
	return v, nil
}

// printUpgrade renders what upgrading one resource did.
func printUpgrade(w io.Writer, v upgradeView) {
	if v.Unchanged {
		moved := ""
		if v.Repointed {
			moved = "; its directory is now " + app.Escape(v.Dir)
		}
		fmt.Fprintf(w, "%s: base unchanged (digest %s)%s\n", v.Name, bases.Short(v.New.Digest), moved)
		return
	}
	verb := "upgraded"
	if v.Repointed {
		verb = "re-pointed"
	}
	var what []string
	if !v.OldFilesStored {
		what = append(what, "old files not stored")
	} else {
		what = append(what, app.Count(len(v.Files), "file")+" changed")
	}
	for _, n := range []struct {
		n    int
		verb string
	}{{len(v.InputsAdded), "added"}, {len(v.InputsRemoved), "removed"}, {len(v.InputsChanged), "changed"}} {
		if n.n > 0 {
			what = append(what, app.Count(n.n, "input")+" "+n.verb)
		}
	}
	staged := " (nothing staged)"
	if len(v.Staged) > 0 {
		staged = "; staged " + strings.Join(v.Staged, ", ")
	}
	fmt.Fprintf(w, "%s %s: base %s → %s (%s)%s\n", verb, v.Name, app.Escape(v.Old.String()), app.Escape(v.New.String()), strings.Join(what, ", "), staged)
	for _, c := range v.InputsChanged {
		fmt.Fprintf(w, "  input %s: %s\n", c.Name, app.Escape(c.What))
	}
}
