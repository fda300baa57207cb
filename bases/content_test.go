package bases

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeTree makes files under dir: path -> content; a content starting
// with "->" makes a symbolic link to the rest.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sample(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "web")
	writeTree(t, dir, map[string]string{
		"meta.yaml":          "handler: shell\n",
		"actions/run.sh":     "echo run\n",
		"actions/again.sh":   "->run.sh",
		"actions/lib/x.sh":   "x\n",
		"actions/lib/up.sh":  "->../run.sh",
		"templates/empty.tp": "",
	})
	if err := os.Chmod(filepath.Join(dir, "actions/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustRead(t *testing.T, dir string) *Content {
	t.Helper()
	c, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDigest: the digest of a base is the same however and wherever it is
// read, and changes with any path, mode, byte or link target.
func TestDigest(t *testing.T) {
	dir := sample(t)
	want := mustRead(t, dir)
	if len(want.Digest) != 64 {
		t.Fatalf("digest %q", want.Digest)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, moved); got.Digest != want.Digest {
		t.Errorf("moved: digest %s, want %s", got.Digest, want.Digest)
	}
	reversed := append([]File(nil), want.Files...)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	if got := New(reversed); got.Digest != want.Digest {
		t.Errorf("files in another order: digest %s, want %s", got.Digest, want.Digest)
	}
	for _, tt := range []struct {
		name string
		edit func(p string) error
	}{
		{"bytes", func(p string) error { return os.WriteFile(filepath.Join(p, "actions/lib/x.sh"), []byte("y\n"), 0o644) }},
		{"mode", func(p string) error { return os.Chmod(filepath.Join(p, "actions/lib/x.sh"), 0o755) }},
		{"path", func(p string) error {
			return os.Rename(filepath.Join(p, "actions/lib/x.sh"), filepath.Join(p, "actions/lib/z.sh"))
		}},
		{"link target", func(p string) error {
			l := filepath.Join(p, "actions/again.sh")
			if err := os.Remove(l); err != nil {
				return err
			}
			return os.Symlink("lib/x.sh", l)
		}},
		{"empty dir", func(p string) error { return os.Mkdir(filepath.Join(p, "more"), 0o755) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "web")
			if err := Export(want, p); err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, p); got.Digest != want.Digest {
				t.Fatalf("exported copy: digest %s, want %s", got.Digest, want.Digest)
			}
			if err := tt.edit(p); err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, p); got.Digest == want.Digest {
				t.Errorf("the %s changed and the digest did not", tt.name)
			}
		})
	}
}

// TestEncodeDecode: Decode gives back what Encode wrote; bytes that do not
// match the digest, or that match it but do not parse, are ErrCorrupt.
func TestEncodeDecode(t *testing.T) {
	c := mustRead(t, sample(t))
	raw := Encode(c.Files)
	got, err := Decode(raw, c.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != c.Digest || len(got.Files) != len(c.Files) {
		t.Fatalf("decoded %d files, digest %s", len(got.Files), got.Digest)
	}
	for i, f := range c.Files {
		g := got.Files[i]
		if g.Path != f.Path || g.Mode != f.Mode || !bytes.Equal(g.Data, f.Data) {
			t.Errorf("file %d: %q %v %q, want %q %v %q", i, g.Path, g.Mode, g.Data, f.Path, f.Mode, f.Data)
		}
	}
	damaged := bytes.Clone(raw)
	damaged[len(damaged)/2] ^= 1
	if _, err := Decode(damaged, c.Digest); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a flipped bit: %v, want ErrCorrupt", err)
	}
	for _, bad := range [][]byte{raw[:len(raw)-1], {0x05, 'a'}, {0x01, 'a', 0xff}} {
		// The digest matches (of the damaged bytes): the parse refuses.
		if _, err := Decode(bad, New(nil).Digest); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%q) with a wrong digest: %v", bad, err)
		}
		d := digestOf(bad)
		if _, err := Decode(bad, d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func digestOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// TestMaterialize: a stored base is written once into root/<digest>, 0700,
// with its modes and links; a directory there that was edited (or half
// written) is replaced; one that verifies is used as it is.
func TestMaterialize(t *testing.T) {
	c := mustRead(t, sample(t))
	root := filepath.Join(t.TempDir(), "cache")
	dir, err := Materialize(c, root)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(root, c.Digest) {
		t.Errorf("dir %s", dir)
	}
	for _, p := range []string{root, dir} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want 0700", p, st.Mode(), err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "actions/run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v, %v; want 0755", st.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "actions/lib/up.sh")); err != nil || target != "../run.sh" {
		t.Errorf("up.sh: %q, %v; want a link to ../run.sh", target, err)
	}
	if got := mustRead(t, dir); got.Digest != c.Digest {
		t.Fatalf("materialized: digest %s", got.Digest)
	}
	marker := filepath.Join(dir, "actions/lib/x.sh")
	st0, _ := os.Stat(marker)
	if again, err := Materialize(c, root); err != nil || again != dir {
		t.Fatalf("again: %s, %v", again, err)
	}
	if st1, _ := os.Stat(marker); !os.SameFile(st0, st1) {
		t.Error("a verified directory was written again")
	}
	if err := os.WriteFile(filepath.Join(dir, "actions/run.sh"), []byte("rm -rf /\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "extra"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialize(c, root); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, dir); got.Digest != c.Digest {
		t.Errorf("an edited cache directory was used as it was")
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("cache holds %d entries, want the base alone", len(entries))
	}
}

// TestReadRefuses: what a base may not hold is refused naming the file,
// wrapping ErrBase.
func TestReadRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		make func(t *testing.T, dir string) string // returns the file to name
		want string
	}{
		{"symlink out", func(t *testing.T, dir string) string {
			writeTree(t, dir, map[string]string{"actions/out.sh": "->../../elsewhere/x.sh"})
			return "actions/out.sh"
		}, "is a symbolic link leading out of the base (to ../../elsewhere/x.sh)"},
		{"absolute symlink", func(t *testing.T, dir string) string {
			writeTree(t, dir, map[string]string{"etc": "->/etc/passwd"})
			return "etc"
		}, "is a symbolic link leading out of the base (to /etc/passwd)"},
		{"FIFO", func(t *testing.T, dir string) string {
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
			return "pipe"
		}, "is a FIFO; a base holds only files, directories and links"},
		{"socket", func(t *testing.T, dir string) string {
			l, err := net.Listen("unix", filepath.Join(dir, "sock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return "sock"
		}, "is a socket"},
		{"too large", func(t *testing.T, dir string) string {
			f, err := os.Create(filepath.Join(dir, "big"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(MaxSize + 1); err != nil {
				t.Fatal(err)
			}
			return "big"
		}, "is larger than 64 MiB in all"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			writeTree(t, dir, map[string]string{"meta.yaml": "handler: noop\n"})
			file := tt.make(t, dir)
			_, err := Read(dir)
			if !errors.Is(err, ErrBase) || !strings.Contains(err.Error(), filepath.Join(dir, file)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read = %v; want ErrBase naming %s: %s", err, file, tt.want)
			}
		})
	}
}

// TestReadUnreadable: a file the reader may not read is refused naming
// it. Root reads every file, so as root the test runs its check as the
// user nobody (runuser), on a copy of its own binary.
func TestReadUnreadable(t *testing.T) {
	if dir := os.Getenv("BASES_UNREADABLE_DIR"); dir != "" {
		_, err := Read(dir)
		io.WriteString(os.Stdout, "READ: "+errString(err)+"\n")
		return
	}
	tmp, err := os.MkdirTemp("", "bases-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	dir := filepath.Join(tmp, "b")
	writeTree(t, dir, map[string]string{"meta.yaml": "handler: noop\n", "secret": "s3cret"})
	if err := os.Chmod(filepath.Join(dir, "secret"), 0); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "secret") + " cannot be read: permission denied"
	if os.Geteuid() != 0 {
		if _, err := Read(dir); !errors.Is(err, ErrBase) || !strings.Contains(err.Error(), want) {
			t.Errorf("Read = %v; want ErrBase: %s", err, want)
		}
		return
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		if os.Getenv("SOLAR_TEST_REQUIRE_ALL") == "1" {
			t.Fatalf("runuser is required as root (SOLAR_TEST_REQUIRE_ALL=1): %v", err)
		}
		t.Skip("as root, the check needs runuser to run as nobody")
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "bases.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tmp, dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(runuser, "-u", "nobody", "--", bin, "-test.run=^TestReadUnreadable$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BASES_UNREADABLE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "READ: invalid base: "+want) && !strings.Contains(string(out), "READ: "+want) {
		t.Errorf("as nobody, Read said:\n%s\nwant: %s", out, want)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
