package base

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/internal/invalid"
)

// TestParse: each verb's command line becomes the options its run
// function gets.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"list", apptest.Parser(NewCmdList), []string{"--json"}, ListOptions{JSON: true}},
		{"show", apptest.Parser(NewCmdShow), []string{"web@abcdef", "--json"}, ShowOptions{Ref: "web@abcdef", JSON: true}},
		{"export", apptest.Parser(NewCmdExport), []string{"web", "out"}, ExportOptions{Ref: "web", Dir: "out"}},
		{"prune", apptest.Parser(NewCmdPrune), []string{"-n", "--json"}, PruneOptions{DryRun: true, JSON: true}},
	})
}

// TestRun: each verb's run function, given buffers, on a store holding
// two resources of one base.
func TestRun(t *testing.T) {
	e := apptest.New(t)
	a := e.App
	res := apptest.Resources(t)
	e.Create(t, "web", res+"/noop")
	e.Create(t, "api", res+"/noop")
	out := filepath.Join(t.TempDir(), "out")
	digest := regexp.MustCompile(`[0-9a-f]{64}`)
	short := regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	paths := strings.NewReplacer(res, "$RES", out, "$OUT")
	e.Replace = func(s string) string {
		s = short.ReplaceAllString(digest.ReplaceAllString(paths.Replace(s), "$$DIGEST"), "$$SHORT")
		return stamp.ReplaceAllString(s, "$$TIME")
	}
	e.Steps(t, []apptest.Step{
		{Name: "list", Run: func() error { return listRun(&ListOptions{App: a}) }, Out: `NAME  VERSION  DIGEST        SIZE  FILES  RESOURCES  STORED
noop  1.0.0    $SHORT  674   6      2          $TIME
`},
		{Name: "show", Run: func() error { return showRun(&ShowOptions{App: a, Ref: "noop"}) }, Out: `noop@$DIGEST
  version:   1.0.0
  size:      674 bytes in 6 entries
  stored:    $TIME
  source:    $RES/noop (read there once; nothing runs from it)
  resources: api, web
  plans:     -

TYPE  MODE  SIZE  PATH
dir   0755  0     actions
file  0755  66    actions/remove.sh
file  0755  67    actions/restart.sh
file  0755  63    actions/run.sh
file  0755  66    actions/update.sh
file  0644  412   meta.yaml
`},
		{Name: "show unknown", Run: func() error { return showRun(&ShowOptions{App: a, Ref: "web"}) }, WantErr: bases.ErrUnknown},
		{Name: "export", Run: func() error { return exportRun(&ExportOptions{App: a, Ref: "noop", Dir: out}) },
			Out: "exported noop@$SHORT (6 entries) into $OUT\n"},
		{Name: "export again", Run: func() error { return exportRun(&ExportOptions{App: a, Ref: "noop", Dir: out}) }, WantErr: invalid.ErrInput},
		{Name: "prune", Run: func() error { return pruneRun(&PruneOptions{App: a, DryRun: true}) }, Out: "would remove 0 bases, 0 bytes\n"},
	})
	if c, err := bases.Read(out); err != nil || c.Digest != mustRead(t, res+"/noop").Digest {
		t.Errorf("exported base: %v, digest differs from the bundled one", err)
	}
}

func mustRead(t *testing.T, dir string) *bases.Content {
	t.Helper()
	c, err := bases.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
