package cmd

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfile checks the hidden SOLAR_CPUPROFILE: a command run with it
// leaves a pprof profile (gzip-compressed) at the path, and one that
// cannot be made is reported on one line while the command still runs.
func TestProfile(t *testing.T) {
	dir := t.TempDir()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	t.Run("written", func(t *testing.T) {
		path := filepath.Join(dir, "cpu.prof")
		var out, errOut bytes.Buffer
		code := Main([]string{"--version"}, nil, &out, &errOut, env(map[string]string{profileVar: path}))
		if code != 0 || errOut.Len() != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut.String())
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("profile is not gzip (pprof): %v", err)
		}
		if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
			t.Fatalf("profile unreadable or empty: %d bytes, %v", len(raw), err)
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		var out, errOut bytes.Buffer
		path := filepath.Join(dir, "missing", "cpu.prof")
		code := Main([]string{"--version"}, nil, &out, &errOut, env(map[string]string{profileVar: path}))
		if code != 0 || !strings.HasPrefix(out.String(), "solar ") {
			t.Fatalf("exit %d, stdout %q: the command must run without a profile", code, out.String())
		}
		if !strings.HasPrefix(errOut.String(), "solar: no CPU profile: ") || strings.Count(errOut.String(), "\n") != 1 {
			t.Fatalf("stderr %q, want one line saying there is no profile", errOut.String())
		}
	})
}
