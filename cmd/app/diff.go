package app

import "github.com/solarops/solar/staging"

// ChangeView is one line of a diff as commands print it in JSON: the
// values before and after, masked when sensitive, and the text form.
type ChangeView struct {
	Op         string `json:"op"`
	Key        string `json:"key"`
	Connection bool   `json:"connection"`
	Old        any    `json:"old,omitempty"` // absent when the input had no value
	New        any    `json:"new,omitempty"` // absent when it has none now
	Text       string `json:"text"`
	// File marks a line of a base's files ("." the base itself), which
	// "resource upgrade" stages.
	File bool `json:"file"`
}

// DiffView renders a diff for JSON; never nil.
func DiffView(d []staging.Change) []ChangeView {
	out := make([]ChangeView, 0, len(d))
	for _, c := range d {
		out = append(out, ChangeView{Op: c.Op, Key: c.Key, Connection: c.Connection, File: c.File,
			Old: masked(c, c.Old), New: masked(c, c.New), Text: staging.FormatChange(c)})
	}
	return out
}

func masked(c staging.Change, v any) any {
	if c.Sensitive && v != nil {
		return Mask
	}
	return v
}
