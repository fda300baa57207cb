package fileread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// read runs Read with a deadline, so that a regression that blocks (on a
// FIFO without a writer) fails the test instead of hanging it.
func read(t *testing.T, name string, limit int64) ([]byte, error) {
	t.Helper()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := Read(name, limit)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("Read(%s) still blocks after 10s", name)
		return nil, nil
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "linked")
	if err := os.Symlink(file("target", "via a link"), linked); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		path  string
		limit int64
		want  string // content, when no error
		err   error
		msg   string
	}{
		{name: "regular file", path: file("ok", "hello"), limit: 5, want: "hello"},
		{name: "empty file", path: file("empty", ""), limit: 5, want: ""},
		{name: "symlink to a regular file", path: linked, limit: 100, want: "via a link"},
		{name: "one byte over the limit", path: file("big", "hello!"), limit: 5, err: ErrTooLarge, msg: "6 bytes, more than 5"},
		{name: "FIFO", path: fifo, limit: 100, err: ErrNotRegular, msg: "a FIFO"},
		{name: "symlink to /dev/zero", path: zero, limit: 100, err: ErrNotRegular, msg: "a device"},
		{name: "directory", path: dir, limit: 100, err: ErrNotRegular, msg: "a directory"},
		// /proc files are regular but claim size 0: the limit still holds,
		// counted while reading.
		{name: "file larger than its stated size", path: "/proc/self/maps", limit: 10, err: ErrTooLarge, msg: "more than 10 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := read(t, tt.path, tt.limit)
			if tt.err == nil {
				if err != nil || string(data) != tt.want {
					t.Fatalf("Read = %q, %v; want %q", data, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Read error = %v, want %v mentioning %q", err, tt.err, tt.msg)
			}
			if data != nil {
				t.Errorf("Read returned %d bytes with its error", len(data))
			}
		})
	}
	// A /proc file claiming size 0 is read whole, past the room made for
	// it at first.
	if data, err := read(t, "/proc/self/maps", 1<<20); err != nil || len(data) <= 1<<10 || data[len(data)-1] != '\n' {
		t.Errorf("Read(/proc/self/maps) = %d bytes, %v; want all of it, over 1 KiB", len(data), err)
	}
	if _, err := read(t, filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file = %v, want os.ErrNotExist", err)
	}
}

// PrivateKey reads a key file as Read does, bounded at MaxPrivateKey, and
// its errors say what to give instead while errors.Is still sees Read's.
func TestPrivateKey(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := PrivateKey(key); err != nil || !strings.HasPrefix(string(data), "-----BEGIN") {
		t.Errorf("PrivateKey of a key file = %q, %v", data, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxPrivateKey+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, msg string
		err       error
	}{
		{fifo, "not a regular file (a FIFO): give the path of a private key file", ErrNotRegular},
		{"/dev/zero", "not a regular file (a device): give the path of a private key file", ErrNotRegular},
		{big, "too large: 65537 bytes, more than 65536: a private key is a few KiB; give the path of a private key file", ErrTooLarge},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := PrivateKey(tt.path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != tt.msg || !errors.Is(err, tt.err) {
				t.Errorf("PrivateKey(%s) = %v, want %q wrapping %v", tt.path, err, tt.msg, tt.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("PrivateKey(%s) still blocks after 10s", tt.path)
		}
	}
}
