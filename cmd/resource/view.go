package resource

import (
	"fmt"
	"io"
	"strings"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
)

// inputView is one input as shown to users.
type inputView struct {
	Name      string `json:"name"`
	Schema    string `json:"schema"`
	Value     any    `json:"value"`
	Sensitive bool   `json:"sensitive"`
	// From lists the emitter inputs the value follows ("node1.ip").
	From []string `json:"from"`
	// Computed is set for an input its base computes (meta.yaml
	// computable:); Computable is then the expression.
	Computed   bool   `json:"computed"`
	Computable string `json:"computable,omitempty"`
}

type metaView struct {
	Retry   int      `json:"retry"`
	Delay   string   `json:"delay"`
	Timeout string   `json:"timeout"`
	Sema    []string `json:"sema"`
	// The rates its attempts take from, and its own limit (orch/rates.go);
	// left out when unset.
	Rate  []string `json:"rate,omitempty"`
	Limit string   `json:"limit,omitempty"`
	Burst int      `json:"burst,omitempty"`
}

// resourceView is a resource as shown. BaseDir is the directory its base
// was created from, on the machine that read it (nothing runs from there);
// BaseDigest names the base's files in the store (solar base show), "" for
// a resource of an older store whose directory was gone.
type resourceView struct {
	FormatVersion int         `json:"format_version,omitempty"`
	Name          string      `json:"name"`
	Base          string      `json:"base"`
	BaseDir       string      `json:"base_dir"`
	BaseDigest    string      `json:"base_digest"`
	Handler       string      `json:"handler"`
	Location      string      `json:"location"`
	Removing      bool        `json:"removing"`
	Tags          []string    `json:"tags"`
	Actions       []string    `json:"actions"`
	Inputs        []inputView `json:"inputs"`
	Meta          metaView    `json:"meta"`
}

func maskValue(sensitive bool, v any) any {
	if sensitive && v != nil {
		return app.Mask
	}
	return v
}

func newView(cat *resources.Catalog, r *resources.Resource) (resourceView, error) {
	eff, err := cat.Effective(r.Name)
	if err != nil {
		return resourceView{}, err
	}
	conns, err := cat.Incoming(r.Name)
	if err != nil {
		return resourceView{}, err
	}
	v := resourceView{Name: r.Name, Base: r.Base.Name, BaseDir: r.Base.Dir, BaseDigest: r.Base.Digest, Handler: r.Base.Handler, Removing: r.Removing,
		Tags: r.Tags.Strings(), Actions: r.Base.ActionNames(), Inputs: []inputView{}}
	if loc, ok := eff[resources.LocationInput].(string); ok {
		v.Location = loc
	}
	sens, err := cat.SensitiveInputs(r.Name)
	if err != nil {
		return resourceView{}, err
	}
	for _, d := range r.Base.Inputs {
		// Sensitivity follows the value through connections.
		iv := inputView{Name: d.Name, Schema: d.Schema.String(), Value: maskValue(sens[d.Name], eff[d.Name]), Sensitive: sens[d.Name], From: []string{},
			Computed: d.Computable != "", Computable: d.Computable}
		for _, c := range conns {
			for _, m := range c.Mappings {
				if m.To == d.Name {
					iv.From = append(iv.From, c.Emitter+"."+m.From)
				}
			}
		}
		v.Inputs = append(v.Inputs, iv)
	}
	m := r.EffectiveMeta()
	v.Meta = metaView{Sema: []string{}}
	if m.Retry != nil {
		v.Meta.Retry = *m.Retry
	}
	if m.Delay != nil {
		v.Meta.Delay = m.Delay.String()
	}
	if m.Timeout != nil {
		v.Meta.Timeout = m.Timeout.String()
	}
	if m.Sema != nil {
		v.Meta.Sema = m.Sema
	}
	v.Meta.Rate, v.Meta.Limit = m.Rate, m.Limit
	if m.Burst != nil {
		v.Meta.Burst = *m.Burst
	}
	return v, nil
}

func formatValue(v any) string {
	if v == nil {
		return "-"
	}
	if s, ok := v.(string); ok && s == app.Mask {
		return s
	}
	return schema.Format(v)
}

func printView(w io.Writer, v resourceView) error {
	state := ""
	if v.Removing {
		state = " (removal staged)"
	}
	fmt.Fprintf(w, "%s%s\n", v.Name, state)
	fmt.Fprintf(w, "  base:     %s (%s, %s)\n", app.Escape(v.Base), v.Handler, app.Escape(v.BaseDir))
	digest := v.BaseDigest
	if digest == "" {
		digest = "- (not in the store: solar resource upgrade " + v.Name + " DIR)"
	}
	fmt.Fprintf(w, "  digest:   %s\n", digest)
	if v.Location != "" {
		fmt.Fprintf(w, "  location: %s\n", app.Escape(v.Location))
	}
	fmt.Fprintf(w, "  tags:     %s\n", app.Escape(strings.Join(v.Tags, ", ")))
	fmt.Fprintf(w, "  actions:  %s\n", strings.Join(v.Actions, ", "))
	meta := fmt.Sprintf("retry=%d", v.Meta.Retry)
	if v.Meta.Delay != "" {
		meta += " delay=" + v.Meta.Delay
	}
	if v.Meta.Timeout != "" {
		meta += " timeout=" + v.Meta.Timeout
	}
	if len(v.Meta.Sema) > 0 {
		meta += " sema=" + strings.Join(v.Meta.Sema, ",")
	}
	if len(v.Meta.Rate) > 0 {
		meta += " rate=" + strings.Join(v.Meta.Rate, ",")
	}
	if v.Meta.Limit != "" {
		meta += " limit=" + v.Meta.Limit
	}
	if v.Meta.Burst > 0 {
		meta += fmt.Sprintf(" burst=%d", v.Meta.Burst)
	}
	fmt.Fprintf(w, "  meta:     %s\n\n", meta)
	rows := make([][]string, 0, len(v.Inputs))
	for _, in := range v.Inputs {
		from := strings.Join(in.From, ", ")
		if in.Computed {
			from = "= " + app.Escape(in.Computable)
		}
		rows = append(rows, []string{in.Name, in.Schema, formatValue(in.Value), from})
	}
	return app.Table(w, []string{"input", "schema", "value", "from"}, rows)
}
