package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/solarops/solar/store"
)

// docMarker put on the line before a fenced block of README.md or docs/*.md
// makes TestDocs run that block. A marked block is one of:
//
//   - a file: its first line is "# /tmp/PATH"; the block is written there
//     (a .sh file executable), for the blocks after it to use;
//   - a session: lines "$ COMMAND" (a line ending in "\" goes on on the
//     next), each followed by what the command prints, stdout and stderr
//     as a terminal shows them; a line "..." stands for any lines;
//   - a script: anything else, run by "sh -e", which must exit 0.
//
// A line "<!-- doccheck: SHELL -->" outside a block is a script of its
// own, run where it stands: the state a block assumes without showing it
// (resources an example names, say).
const docMarker = "<!-- doccheck -->"

// docSetup is the start of a setup line; "-->" ends it.
const docSetup = "<!-- doccheck:"

// docBlock is one marked fenced block of a document.
type docBlock struct {
	line  int // of its first line in the document, for messages
	lines []string
	setup bool // a docSetup line: a script, whatever it looks like
}

// docCommand is one "$ COMMAND" of a session and the lines shown under it.
type docCommand struct {
	line int
	cmd  string
	want []string
}

// TestDocs runs the marked blocks of each document in order, in a fresh
// store and working directory per document, and compares what each command
// prints with what the document shows under it. Paths under /tmp/ are
// redirected to a scratch directory; testdata/ is the repository's.
func TestDocs(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(repo, "README.md")}, docs...)
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := markedBlocks(string(raw))
		if len(blocks) == 0 {
			continue
		}
		name, _ := filepath.Rel(repo, doc)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newDocRun(t, repo)
			for _, b := range blocks {
				d.block(t, name, b)
			}
		})
	}
}

// markedBlocks are the fenced blocks of doc whose fence follows docMarker.
func markedBlocks(doc string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	inFence, marked := false, false
	for i, line := range strings.Split(doc, "\n") {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case fence && inFence:
			if cur != nil {
				blocks = append(blocks, *cur)
			}
			cur, inFence = nil, false
		case fence:
			if marked {
				cur = &docBlock{line: i + 2}
			}
			inFence = true
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case !inFence && strings.HasPrefix(strings.TrimSpace(line), docSetup):
			body := strings.TrimPrefix(strings.TrimSpace(line), docSetup)
			blocks = append(blocks, docBlock{line: i + 1, setup: true,
				lines: []string{strings.TrimSpace(strings.TrimSuffix(body, "-->"))}})
		}
		marked = !inFence && strings.TrimSpace(line) == docMarker
	}
	return blocks
}

// docRun is the world one document's blocks run in.
type docRun struct {
	work    string // working directory, with testdata linked to the repository's
	scratch string // stands for /tmp
	env     []string
}

func newDocRun(t *testing.T, repo string) *docRun {
	root := t.TempDir()
	d := &docRun{work: filepath.Join(root, "work"), scratch: filepath.Join(root, "tmp")}
	bin := filepath.Join(root, "bin")
	for _, dir := range []string{d.work, d.scratch, bin, filepath.Join(root, "home")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(d.work, "testdata")); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("dot"); err != nil {
		// The tour pipes a graph into graphviz; without it, a dot that
		// swallows the graph keeps the rest of the tour checked.
		if err := os.WriteFile(filepath.Join(bin, "dot"), []byte("#!/bin/sh\ncat >/dev/null\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// PATH has solar: TestMain put the test binary there under that name.
	d.env = []string{
		"PATH=" + bin + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(root, "home"),
		"SOLAR_DB=" + filepath.Join(root, "solar.db"),
		"SOLAR_CACHE_DIR=" + filepath.Join(root, "cache"),
		"SOLAR_ACTOR=alice@laptop",
		"NO_COLOR=1", "TZ=UTC", "LC_ALL=C",
	}
	// A fresh store, made before the first block: a document shows a
	// session in a store its reader already has, not the notice a new one
	// prints.
	db, err := store.Open(filepath.Join(root, "solar.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

// block runs or writes one marked block of the document named doc.
func (d *docRun) block(t *testing.T, doc string, b docBlock) {
	t.Helper()
	if len(b.lines) == 0 {
		t.Fatalf("%s:%d: an empty marked block", doc, b.line)
	}
	if path, ok := strings.CutPrefix(b.lines[0], "# /tmp/"); ok && !strings.ContainsAny(path, " \t") {
		d.writeFile(t, path, b.lines)
		return
	}
	var cmds []docCommand
	if !b.setup {
		cmds = sessionCommands(b)
	}
	if len(cmds) == 0 {
		out, err := d.run(strings.Join(b.lines, "\n"), "-e")
		if err != nil {
			t.Errorf("%s:%d: the block fails: %v\n%s", doc, b.line, err, out)
		}
		return
	}
	for _, c := range cmds {
		out, _ := d.run(c.cmd, "")
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if out == "" {
			got = nil
		}
		if !linesMatch(normLines(c.want), normLines(got)) {
			t.Errorf("%s:%d: $ %s\nthe document shows:\n%s\nsolar printed:\n%s", doc, c.line, c.cmd,
				strings.Join(c.want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// writeFile writes a file block to its path under the scratch directory.
func (d *docRun) writeFile(t *testing.T, path string, lines []string) {
	t.Helper()
	full := filepath.Join(d.scratch, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o644)
	if strings.HasSuffix(path, ".sh") {
		mode = 0o755
	}
	if err := os.WriteFile(full, []byte(strings.Join(lines, "\n")+"\n"), mode); err != nil {
		t.Fatal(err)
	}
}

// run runs script by sh in the document's world, /tmp/ redirected, and
// returns stdout and stderr interleaved as written, /tmp/ put back.
func (d *docRun) run(script, flag string) (string, error) {
	args := []string{"-c", strings.ReplaceAll(script, "/tmp/", d.scratch+"/")}
	if flag != "" {
		args = append([]string{flag}, args...)
	}
	c := exec.Command("sh", args...)
	c.Dir, c.Env = d.work, d.env
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return strings.ReplaceAll(out.String(), d.scratch+"/", "/tmp/"), err
}

// sessionCommands are the commands of a session block with the lines shown
// under each; none if the block has no "$ " line.
func sessionCommands(b docBlock) []docCommand {
	var cmds []docCommand
	cont := false
	for i, line := range b.lines {
		switch {
		case cont:
			c := &cmds[len(cmds)-1]
			c.cmd += "\n" + line
			cont = strings.HasSuffix(line, `\`)
		case strings.HasPrefix(line, "$ "):
			cmds = append(cmds, docCommand{line: b.line + i, cmd: line[2:]})
			cont = strings.HasSuffix(line, `\`)
		case len(cmds) > 0:
			c := &cmds[len(cmds)-1]
			c.want = append(c.want, line)
		}
	}
	return cmds
}

// docNorms turn what differs from run to run into a fixed word. Order
// matters: a plan uid is digits before it could be read as anything else.
var docNorms = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`), "TIME"},
	{regexp.MustCompile(`\b\d{8}-\d{6}-\d{4}\b`), "UID"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|µs|m)\b`), "DUR"},
	{regexp.MustCompile(`\b[0-9a-f]{12,64}\b`), "HEX"},
	// who ran, on which host: the machine's name differs
	{regexp.MustCompile(`(@\S+) on \S+`), "$1 on HOST"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

// normLines are lines with docNorms applied and trailing blanks dropped,
// so columns that widen with a value still compare.
func normLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, n := range docNorms {
			l = n.re.ReplaceAllString(l, n.with)
		}
		out[i] = strings.TrimRight(l, " ")
	}
	return out
}

// linesMatch says whether got is want, a want line "..." matching any
// number of lines.
func linesMatch(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if linesMatch(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && linesMatch(want[1:], got[1:])
}

// TestDocsHarness pins the parts of TestDocs that decide what a document
// says: which blocks are marked, how commands split, and what matches.
func TestDocsHarness(t *testing.T) {
	doc := "```\n$ z\n<!-- doccheck: no -->\n```\n<!-- doccheck: $ solar x -->\nx\n" + docMarker + "\n```\n$ a \\\n  b\nout\n...\n$ c\n```\n```\n$ d\n```\n"
	blocks := markedBlocks(doc)
	if len(blocks) != 2 || !blocks[0].setup || blocks[0].lines[0] != "$ solar x" || blocks[1].setup {
		t.Fatalf("marked blocks: %+v", blocks)
	}
	cmds := sessionCommands(blocks[1])
	if len(cmds) != 2 || cmds[0].cmd != "a \\\n  b" || fmt.Sprint(cmds[0].want) != "[out ...]" ||
		cmds[1].cmd != "c" || len(cmds[1].want) != 0 || cmds[1].line != 13 {
		t.Errorf("commands: %+v", cmds)
	}
	for _, tc := range []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"plan 20261122-070605-0001: 1 success in 0.01s"}, []string{"plan 20300101-000000-0042: 1 success in 1.5s"}, true},
		{[]string{"a   b"}, []string{"a b  "}, true},
		{[]string{"a", "...", "z"}, []string{"a", "b", "c", "z"}, true},
		{[]string{"a", "..."}, []string{"a"}, true},
		{[]string{"a"}, []string{"a", "b"}, false},
		{[]string{"SUCCESS"}, []string{"ERROR"}, false},
	} {
		if linesMatch(normLines(tc.want), normLines(tc.got)) != tc.ok {
			t.Errorf("linesMatch(%q, %q) = %v", tc.want, tc.got, !tc.ok)
		}
	}
}
