package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
)

// TestHelp checks what every command's help promises a new user: examples,
// the exit status, and example lines a shell runs as written.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	root := NewRoot(app.New(nil, &out, &out, func(string) string { return "" }))
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range cmds {
		t.Run(c.CommandPath(), func(t *testing.T) {
			if !strings.HasSuffix(c.Long, app.ExitHelp) {
				t.Errorf("help does not end with the exit status")
			}
			if c.Example == "" {
				t.Errorf("help has no example")
			}
			for _, line := range strings.Split(c.Example, "\n") {
				if i := unquoted(line, "->"); i >= 0 {
					t.Errorf("example %q: the shell reads the > of -> at column %d as a redirection; quote the mapping", line, i+1)
				}
			}
		})
	}
}

// unquoted returns the index of the first s in line outside shell quotes,
// or -1.
func unquoted(line, s string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '#' && (i == 0 || line[i-1] == ' '):
			return -1 // a comment
		case strings.HasPrefix(line[i:], s):
			return i
		}
	}
	return -1
}

func TestUnquoted(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{
		{`solar connect a b 'ip->db_host'`, -1},
		{`solar connect a b "ip->db_host"`, -1},
		{`solar connect a b ip->db_host`, 20},
		{`solar connect a b 'x' ip->db_host`, 24},
		{`solar orch dg last | dot -Tsvg > plan.svg`, -1},
		{`solar events list  # a->b`, -1},
		{`solar orch filter last --end a.run#1 a->b`, 38},
	} {
		t.Run(tc.line, func(t *testing.T) {
			if got := unquoted(tc.line, "->"); got != tc.want {
				t.Errorf("unquoted(%q) = %d, want %d", tc.line, got, tc.want)
			}
		})
	}
}

// A build from a clone reports its VCS revision instead of "dev".
func TestVersionOfACloneIsItsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds solar")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if err := exec.Command("git", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not in a git checkout")
	}
	bin := filepath.Join(t.TempDir(), "solar")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "github.com/solarops/solar/cmd/solar")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if info, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !bytes.Contains(info, []byte("vcs.revision=")) {
		t.Skip("go stamped no VCS revision in this checkout (a git worktree?)")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^solar rev [0-9a-f]{12}(-dirty)? \(go`).Match(out) {
		t.Fatalf("--version printed %q, want the revision", out)
	}
}
