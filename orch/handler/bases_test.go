package handler_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/resources"
)

// This test reads the bundled bases with package resources, which imports
// this package (for the handlers' names): it is an external test.

// TestCheckModeBasesListed checks that every bundled shell base lists
// exactly run and update under check, and that TestCheckMode covers each.
func TestCheckModeBasesListed(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "testdata", "resources"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := resources.LoadBase(filepath.Join(root, e.Name()))
		if err != nil {
			t.Fatalf("base %s: %v", e.Name(), err)
		}
		switch {
		case b.Handler == "ansible":
			// Playbooks run under --check (ansible.txtar covers webconf).
		case b.Handler == "noop":
			if len(b.Check) != 0 {
				t.Errorf("noop base %s lists check %v: noop tasks predict themselves", e.Name(), b.Check)
			}
		case !slices.Equal(b.Check, []string{"run", "update"}):
			t.Errorf("shell base %s: check = %v, want [run update]", e.Name(), b.Check)
		default:
			listed = append(listed, e.Name())
		}
	}
	covered := handler.CheckModeCovered()
	if diff := cmp.Diff(listed, covered); diff != "" {
		t.Errorf("bases with check support (-listed in meta.yaml +covered by TestCheckMode):\n%s", diff)
	}
}
