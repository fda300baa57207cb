// Package fileread reads a file that solar did not write and must not
// trust: a script's result file, a base's meta.yaml, a composition. It
// opens without blocking, so that a FIFO put in the file's place cannot
// hang solar, insists on a regular file, and reads at most a limit.
package fileread

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Errors of Read, wrapped with details.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("too large")
)

// Read returns the content of the regular file name, at most limit bytes.
// A file of another kind wraps ErrNotRegular (naming the kind), a longer
// one ErrTooLarge (giving its size when known). With an error it returns no
// data.
func Read(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode()))
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, st.Size(), limit)
	}
	// The size stat gives may be wrong (a /proc file says 0, a file may
	// grow meanwhile): read one byte past the limit to see it exceeded.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// Kind names what a file is, for an error message.
func Kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}
