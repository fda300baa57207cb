package fileread

import (
	"errors"
	"fmt"
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
	// Plain system calls: an *os.File would also register the descriptor
	// with the poller and stat it again, which a result file read after
	// every task pays for.
	fd, err := openNoEINTR(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, Kind(fileMode(st.Mode)))
	}
	if st.Size > limit {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, st.Size, limit)
	}
	// The size stat gives may be wrong (a /proc file says 0, a file may
	// grow meanwhile): read up to one byte past the limit to see it
	// exceeded, until a read returns nothing.
	size := st.Size
	if size == 0 {
		// Likely a /proc file: room for what they usually hold, rather
		// than a read per doubling of one byte (9 for a process's stat).
		size = 1 << 10
	}
	data := make([]byte, 0, min(size, limit)+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		want := min(int64(cap(data)), limit+1)
		n, err := syscall.Read(fd, data[len(data):want])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
		}
		if n == 0 {
			return data, nil
		}
	}
}

// openNoEINTR opens name read-only without blocking (a FIFO) and without
// leaking the descriptor into children.
func openNoEINTR(name string) (int, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// fileMode turns a stat mode's type bits into an os.FileMode for Kind.
func fileMode(m uint32) os.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return os.ModeNamedPipe
	case syscall.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFBLK:
		return os.ModeDevice
	case syscall.S_IFSOCK:
		return os.ModeSocket
	case syscall.S_IFDIR:
		return os.ModeDir
	case syscall.S_IFLNK:
		return os.ModeSymlink
	}
	return os.ModeIrregular
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

// MaxPrivateKey bounds a private key file: the largest OpenSSH writes (RSA
// of 16384 bits) is about 13 KiB.
const MaxPrivateKey = 64 << 10

// PrivateKey reads the file an operator named as a private key (a node's
// ssh_key) as Read does, at most MaxPrivateKey bytes: a device such as
// /dev/zero or a huge file would otherwise be read until memory runs out,
// and a FIFO would block whoever reads it. It does not parse the key. Its
// errors wrap Read's and say what to give instead; the caller adds which
// node and input named the file.
func PrivateKey(name string) ([]byte, error) {
	raw, err := Read(name, MaxPrivateKey)
	switch {
	case errors.Is(err, ErrNotRegular):
		return nil, fmt.Errorf("%w: give the path of a private key file", err)
	case errors.Is(err, ErrTooLarge):
		return nil, fmt.Errorf("%w: a private key is a few KiB; give the path of a private key file", err)
	}
	return raw, err
}
