package resources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/solarops/solar/internal/fileread"
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
	raw, err := fileread.Read(path, limit)
	switch {
	case errors.Is(err, fileread.ErrNotRegular):
		return nil, badFile("%s is %v", path, err)
	case errors.Is(err, fileread.ErrTooLarge):
		if st, serr := os.Stat(path); serr == nil && st.Size() > limit {
			return nil, badFile("%s is %d bytes, more than the %d solar reads", path, st.Size(), limit)
		}
		return nil, badFile("%s is more than the %d bytes solar reads", path, limit)
	case err != nil:
		return nil, err
	}
	return raw, textOnly(path, raw)
}

// ReadInput reads what the operator pipes in (a rules file given as "-")
// under the rules of ReadInputFile: at most limit bytes, no NUL byte. name
// stands for the stream in errors.
func ReadInput(r io.Reader, name string, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(raw)) > limit {
		return nil, badFile("%s is more than the %d bytes solar reads", name, limit)
	}
	return raw, textOnly(name, raw)
}

// textOnly refuses a NUL byte, naming its line.
func textOnly(name string, raw []byte) error {
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		line := bytes.Count(raw[:i], []byte("\n")) + 1
		return badFile("%s holds a NUL byte (line %d): not a text file", name, line)
	}
	return nil
}
