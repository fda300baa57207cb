package inputs

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/store"
)

// BacktrackOptions are the inputs of "solar inputs backtrack".
type BacktrackOptions struct {
	App   *app.App
	Name  string
	Input string // "" for every input
	JSON  bool
}

// NewCmdBacktrack builds "solar inputs backtrack".
func NewCmdBacktrack(a *app.App, runF func(*BacktrackOptions) error) *cobra.Command {
	opts := &BacktrackOptions{App: a}
	c := &cobra.Command{
		Use:   "backtrack NAME [INPUT]",
		Short: "Show where an input's value comes from, through connections and computations",
		Long: `Show, as a tree per input, where the resource's effective value comes from
(every input of the resource when INPUT is omitted). Each line is
RESOURCE.INPUT = VALUE and its source:

  connected            connections feed it; below, the emitter input of each
                       mapping, marked "key K" when it fills one key of a
                       hash and "element E" when it makes one element of a
                       list (E, the emitter's name, tags the element)
  computed from EXPR   the base computes it; below, the inputs EXPR names
  own value            the value set at create or update, no connection
  default              the base's default, no connection
  unset                no value

and each line below is backtracked the same way, down to the emitter that
owns the value. An input already traced higher up the same tree is marked
"(see above)" and not traced again. Sensitive values are masked, as in
resource show. --json gives the same tree: per input resource, input, key,
element, source, expr, value, sensitive, repeated, from.` + "\n" + app.ExitHelp,
		Example: `  solar inputs backtrack ks db_host     # ks.db_host <- db.ip <- node1.ip
  solar inputs backtrack ks             # every input of ks
  solar inputs backtrack ks --json | jq '.inputs[] | {input, source}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if len(args) > 1 {
				opts.Input = args[1]
			}
			if runF != nil {
				return runF(opts)
			}
			return backtrackRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

// originView is one node of a backtracked tree, as --json prints it.
type originView struct {
	Resource  string       `json:"resource"`
	Input     string       `json:"input"`
	Key       string       `json:"key"`
	Element   string       `json:"element"`
	Source    string       `json:"source"`
	Expr      string       `json:"expr"`
	Value     any          `json:"value"`
	Sensitive bool         `json:"sensitive"`
	Repeated  bool         `json:"repeated"`
	From      []originView `json:"from"`
}

type backtrackView struct {
	FormatVersion int          `json:"format_version"`
	Resource      string       `json:"resource"`
	Inputs        []originView `json:"inputs"`
}

func backtrackRun(opts *BacktrackOptions) error {
	var origins []resources.Origin
	err := opts.App.View(func(tx *store.Tx) error {
		var inputs []string
		if opts.Input != "" {
			inputs = []string{opts.Input}
		}
		var err error
		origins, err = resources.NewCatalog(tx).Backtrack(opts.Name, inputs...)
		return err
	})
	if err != nil {
		return err
	}
	v := backtrackView{FormatVersion: app.FormatVersion, Resource: opts.Name, Inputs: views(origins)}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, v)
	}
	return printBacktrack(opts.App.IO.Out, v)
}

// views converts origins, masking every sensitive value here, once, so that
// neither view can print one.
func views(origins []resources.Origin) []originView {
	out := make([]originView, 0, len(origins))
	for _, o := range origins {
		val := o.Value
		if o.Sensitive && val != nil {
			val = app.Mask
		}
		out = append(out, originView{Resource: o.Resource, Input: o.Input, Key: o.Key, Element: o.Element,
			Source: o.Source, Expr: o.Expr, Value: val, Sensitive: o.Sensitive, Repeated: o.Repeated, From: views(o.From)})
	}
	return out
}

func printBacktrack(w io.Writer, v backtrackView) error {
	for i, o := range v.Inputs {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintln(w, line(o)); err != nil {
			return err
		}
		if err := printTree(w, o.From, ""); err != nil {
			return err
		}
	}
	return nil
}

// printTree prints the children of one node, each under indent.
func printTree(w io.Writer, from []originView, indent string) error {
	for i, o := range from {
		branch, next := "├─ ", "│  "
		if i == len(from)-1 {
			branch, next = "└─ ", "   "
		}
		if _, err := fmt.Fprintln(w, indent+branch+line(o)); err != nil {
			return err
		}
		if err := printTree(w, o.From, indent+next); err != nil {
			return err
		}
	}
	return nil
}

// line renders one node: "[key K |element E ]RES.INPUT = VALUE  (SOURCE)".
func line(o originView) string {
	var b strings.Builder
	switch {
	case o.Key != "":
		b.WriteString("key " + app.Escape(o.Key) + ": ")
	case o.Element != "":
		b.WriteString("element " + app.Escape(o.Element) + ": ")
	}
	b.WriteString(o.Resource + "." + o.Input + " = " + formatValue(o.Value) + "  (")
	switch o.Source {
	case resources.SourceComputed:
		b.WriteString("computed from " + app.Escape(o.Expr))
	case resources.SourceOwn:
		b.WriteString("own value")
	default:
		b.WriteString(o.Source)
	}
	b.WriteString(")")
	if o.Repeated {
		b.WriteString(" (see above)")
	}
	return b.String()
}

func formatValue(v any) string {
	if v == nil {
		return "-"
	}
	if s, ok := v.(string); ok && s == app.Mask {
		return s
	}
	return app.Escape(schema.Format(v))
}
