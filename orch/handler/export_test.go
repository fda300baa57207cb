package handler

import "slices"

// CheckModeCovered returns, sorted, the bundled bases TestCheckMode covers,
// for the external TestCheckModeBasesListed.
func CheckModeCovered() []string {
	var out []string
	for _, cb := range checkBases {
		out = append(out, cb.base)
	}
	slices.Sort(out)
	return out
}
