package resources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputFilesAreCheckedBeforeParsing: meta.yaml and a composition are
// read only as regular files, within a limit, without NUL bytes; each
// refusal is an ErrBase (exit 2) naming the file. Each case runs with a
// deadline: a FIFO used to block solar for ever.
func TestInputFilesAreCheckedBeforeParsing(t *testing.T) {
	for _, tt := range []struct {
		name string
		make func(t *testing.T, path string, limit int64) // makes meta.yaml or c.yaml at path
		want []string
		// base is what LoadBase says instead, when the whole base
		// directory refuses the file before meta.yaml is read (bases.Read).
		base []string
	}{
		{"FIFO", func(t *testing.T, p string, _ int64) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a regular file (a FIFO)"}, []string{"is a FIFO; a base holds only files"}},
		{"symlink to /dev/zero", func(t *testing.T, p string, _ int64) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a regular file (a device)"}, []string{"is a symbolic link leading out of the base (to /dev/zero)"}},
		{"NUL byte", func(t *testing.T, p string, _ int64) {
			writeFile(t, p, "handler: noop\n# \x00\nresources: []\n")
		}, []string{"holds a NUL byte (line 2): not a text file"}, nil},
		{"too large", func(t *testing.T, p string, limit int64) {
			writeFile(t, p, "handler: noop\n"+strings.Repeat("#", int(limit)))
		},
			[]string{"more than the", "solar reads"}, nil},
	} {
		t.Run("meta.yaml/"+tt.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := filepath.Join(dir, "meta.yaml")
			tt.make(t, meta, MetaMax)
			err := within(t, func() error { _, err := LoadBase(dir); return err })
			if tt.base != nil {
				wantErr(t, err, ErrBase, append([]string{meta}, tt.base...)...)
				return
			}
			wantErr(t, err, ErrBase, append([]string{meta}, tt.want...)...)
			if !errors.Is(err, ErrInputFile) {
				t.Errorf("error %v does not wrap ErrInputFile", err)
			}
		})
		t.Run("composition/"+tt.name, func(t *testing.T) {
			comp := filepath.Join(t.TempDir(), "c.yaml")
			tt.make(t, comp, CompositionMax)
			err := within(t, func() error { _, err := LoadComposition(comp, os.Getenv); return err })
			wantErr(t, err, ErrBase, append([]string{"composition: " + comp}, tt.want...)...)
		})
	}
}

// within runs fn and fails the test if it does not return within 10s.
func within(t *testing.T, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still blocked after 10s")
		return nil
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadInputFromAStream(t *testing.T) {
	raw, err := ReadInput(strings.NewReader("a.run -> b.run\n"), "standard input", 100)
	if err != nil || string(raw) != "a.run -> b.run\n" {
		t.Fatalf("ReadInput = %q, %v", raw, err)
	}
	// An endless stream (stdin from /dev/zero) stops at the limit.
	_, err = ReadInput(zeros{}, "standard input", 1<<20)
	wantErr(t, err, ErrInputFile, "standard input is more than the 1048576 bytes solar reads")
	_, err = ReadInput(strings.NewReader("x\ny\x00z"), "standard input", 100)
	wantErr(t, err, ErrInputFile, "standard input holds a NUL byte (line 2)")
}

// zeros reads as /dev/zero does, for ever.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
