package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// Completion that knows the store: resource names, plan uids, staged keys,
// task ids, node names and --format values complete in bash, zsh and fish
// (cobra's __complete). A completion never fails the shell: a missing or
// busy store completes nothing.

// completer lists candidates from the store, read-only.
type completer struct{ a *app.App }

type lister func(tx *store.Tx, args []string) []string

func (c completer) list(fn lister) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []string
		_ = c.a.View(func(tx *store.Tx) error {
			for _, s := range fn(tx, args) {
				if strings.HasPrefix(s, prefix) {
					out = append(out, s)
				}
			}
			return nil
		})
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// atArg completes argument i (counting from 0) with fn, and nothing after
// argument max (-1: no limit).
func (c completer) atArg(max int, fn lister) cobra.CompletionFunc {
	inner := c.list(fn)
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if max >= 0 && len(args) > max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return inner(cmd, args, prefix)
	}
}

func resourceNames(tx *store.Tx, _ []string) []string {
	list, err := resources.NewCatalog(tx).List(nil)
	if err != nil {
		return nil
	}
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Name
	}
	return out
}

func nodeNames(tx *store.Tx, _ []string) []string {
	list, err := nodes.List(resources.NewCatalog(tx))
	if err != nil {
		return nil
	}
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = n.Name
	}
	return out
}

func planRefs(tx *store.Tx, _ []string) []string {
	uids, err := orch.UIDs(tx)
	if err != nil || len(uids) == 0 {
		return nil
	}
	return append([]string{"last"}, uids...)
}

func stagedKeys(tx *store.Tx, _ []string) []string {
	ents, err := staging.List(tx)
	if err != nil {
		return nil
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Key
	}
	return out
}

// taskIDs lists the tasks of the plan named by the first argument.
func taskIDs(tx *store.Tx, args []string) []string {
	ref := "last"
	if len(args) > 0 {
		ref = args[0]
	}
	uid, err := orch.Resolve(tx, ref)
	if err != nil {
		return nil
	}
	rec, err := orch.Load(tx, uid)
	if err != nil {
		return nil
	}
	out := make([]string, len(rec.Plan.Nodes))
	for i, n := range rec.Plan.Nodes {
		out[i] = n.ID
	}
	return out
}

// addCompletion wires the completions into the tree built by NewRoot.
func addCompletion(a *app.App, root *cobra.Command) {
	c := completer{a}
	find := func(path string) *cobra.Command {
		cmd, _, err := root.Find(strings.Fields(path))
		if err != nil || cmd == root {
			return nil
		}
		return cmd
	}
	args := map[string]cobra.CompletionFunc{
		"resource show":    c.atArg(0, resourceNames),
		"resource update":  c.atArg(0, resourceNames),
		"resource tag":     c.atArg(0, resourceNames),
		"resource remove":  c.atArg(-1, resourceNames),
		"connect":          c.atArg(1, resourceNames),
		"disconnect":       c.atArg(1, resourceNames),
		"connections show": c.atArg(0, resourceNames),
		"inputs backtrack": c.atArg(0, resourceNames),
		"events list":      c.atArg(0, resourceNames),
		"node trust":       c.atArg(0, nodeNames),
		"node check":       c.atArg(-1, nodeNames),
		"ch discard":       c.atArg(-1, stagedKeys),
		"ch staged-item":   c.atArg(0, stagedKeys),
	}
	for _, verb := range []string{"show", "dg", "run-once", "resume", "retry", "restart", "reset", "stop", "filter", "report", "check"} {
		args["orch "+verb] = c.atArg(0, planRefs)
	}
	args["orch noop"] = func(cmd *cobra.Command, a []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(a) == 0 {
			return c.list(planRefs)(cmd, a, prefix)
		}
		return c.list(taskIDs)(cmd, a, prefix)
	}
	args["orch logs"] = func(cmd *cobra.Command, a []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(a) {
		case 0:
			return c.list(planRefs)(cmd, a, prefix)
		case 1:
			return c.list(taskIDs)(cmd, a, prefix)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	args["resource action"] = func(cmd *cobra.Command, a []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(a) {
		case 0:
			return c.list(resourceNames)(cmd, a, prefix)
		case 1:
			return c.list(func(tx *store.Tx, _ []string) []string { return stageActions(tx, a[0]) })(cmd, a, prefix)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for path, fn := range args {
		if cmd := find(path); cmd != nil {
			cmd.ValidArgsFunction = fn
		}
	}
	flags := []struct {
		path, flag string
		fn         cobra.CompletionFunc
	}{
		{"ch stage", "name", c.list(resourceNames)},
		{"ch stage", "action", func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			name := ""
			if f := cmd.Flags().Lookup("name"); f != nil {
				name = f.Value.String()
			}
			return c.list(func(tx *store.Tx, _ []string) []string { return stageActions(tx, name) })(cmd, args, prefix)
		}},
		{"orch filter", "start", c.list(taskIDs)},
		{"orch filter", "end", c.list(taskIDs)},
		{"orch dg", "format", cobra.FixedCompletions([]cobra.Completion{"dot", "mermaid"}, cobra.ShellCompDirectiveNoFileComp)},
	}
	for _, f := range flags {
		if cmd := find(f.path); cmd != nil && cmd.Flags().Lookup(f.flag) != nil {
			_ = cmd.RegisterFlagCompletionFunc(f.flag, f.fn)
		}
	}
}

// stageActions lists the actions of resource name ("ch stage -n NAME"),
// or of every resource when none is given yet.
func stageActions(tx *store.Tx, name string) []string {
	cat := resources.NewCatalog(tx)
	var list []*resources.Resource
	if name != "" {
		if r, err := cat.Get(name); err == nil {
			list = []*resources.Resource{r}
		}
	} else if all, err := cat.List(nil); err == nil {
		list = all
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range list {
		for _, act := range r.Base.ActionNames() {
			if !seen[act] {
				seen[act] = true
				out = append(out, act)
			}
		}
	}
	return out
}
