package resources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits on the files solar reads from the operator.
const (
	// MetaMax bounds a base's meta.yaml.
	MetaMax = 16 << 20
	// CompositionMax bounds a composition file (100,000 resources fit).
	CompositionMax = 64 << 20
	// RulesMax bounds a rules file given to events add -f.
	RulesMax = 16 << 20
)

// ErrInputFile means a file given as input cannot be read as one: not a
// regular file, too large, or holding a NUL byte.
var ErrInputFile = errors.New("bad input file")

// inputFileError says what is wrong with the file; it is an ErrInputFile.
type inputFileError struct{ msg string }

func (e *inputFileError) Error() string { return e.msg }
func (e *inputFileError) Unwrap() error { return ErrInputFile }

func badFile(format string, args ...any) error {
	return &inputFileError{msg: fmt.Sprintf(format, args...)}
}

// ReadInputFile reads a file the operator gave (meta.yaml, a composition, a
// rules file): only a regular file (after symlinks), opened without
// blocking so that a FIFO in its place cannot hang solar, at most limit
// bytes, with no NUL byte (YAML parsers stop at one silently). The error
// names the file and wraps ErrInputFile, or the open error.
func ReadInputFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, badFile("%s is not a regular file (%s)", path, describeMode(st.Mode()))
	}
	if st.Size() > limit {
		return nil, badFile("%s is %d bytes, more than the %d solar reads", path, st.Size(), limit)
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, badFile("%s is more than the %d bytes solar reads", path, limit)
	}
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		line := bytes.Count(raw[:i], []byte("\n")) + 1
		return nil, badFile("%s holds a NUL byte (line %d): not a text file", path, line)
	}
	return raw, nil
}

func describeMode(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
