package bases

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/solarops/solar/internal/invalid"
)

// Errors of bases.
var (
	// ErrBase means a base directory cannot be stored as it is: it names
	// the file that is wrong.
	ErrBase = invalid.New("invalid base")
	// ErrUnknown means no base of that name or digest is stored.
	ErrUnknown = invalid.New("no such base")
	// ErrCorrupt means a stored base does not match its digest: the record
	// was damaged, and nothing of it may run.
	ErrCorrupt = errors.New("stored base does not match its digest")
)

// MaxSize bounds a base's bytes in all (files and link targets).
const MaxSize = 64 << 20

// File is one entry of a base: a regular file, a directory or a symbolic
// link, by its slash-separated path inside the base.
type File struct {
	Path string
	// Mode is the type (fs.ModeDir, fs.ModeSymlink or none for a regular
	// file) and the permission bits.
	Mode fs.FileMode
	// Data is a regular file's bytes, or a link's target as written.
	Data []byte
}

// Content is a base's files, sorted by path, and their digest.
type Content struct {
	Files  []File
	Digest string // hex sha256 of the canonical encoding (Encode)
}

// Size is the bytes of all files and link targets.
func (c *Content) Size() int64 {
	var n int64
	for _, f := range c.Files {
		n += int64(len(f.Data))
	}
	return n
}

// File returns the entry at path p.
func (c *Content) File(p string) (*File, bool) {
	i := sort.Search(len(c.Files), func(i int) bool { return c.Files[i].Path >= p })
	if i < len(c.Files) && c.Files[i].Path == p {
		return &c.Files[i], true
	}
	return nil, false
}

// Short is the first 12 digits of a digest, as lists show it.
func Short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// Read takes the base in dir into a Content. Errors wrap ErrBase and name
// the file: a symlink leading out of dir (or absolute), a FIFO, socket or
// device, an unreadable file, more than MaxSize bytes in all.
func Read(dir string) (*Content, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBase, dir, err)
	}
	var files []File
	var size int64
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		shown := filepath.Join(dir, strings.TrimPrefix(p, root))
		if err != nil {
			return fmt.Errorf("%w: %s cannot be read: %v", ErrBase, shown, unwrapPath(err))
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("%w: %s cannot be read: %v", ErrBase, shown, unwrapPath(err))
		}
		f := File{Path: rel, Mode: info.Mode() & (fs.ModeType | fs.ModePerm)}
		switch t := info.Mode().Type(); {
		case t == fs.ModeDir:
		case t == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("%w: %s cannot be read: %v", ErrBase, shown, unwrapPath(err))
			}
			if !inside(rel, target) {
				return fmt.Errorf("%w: %s is a symbolic link leading out of the base (to %s); copy the file in instead", ErrBase, shown, target)
			}
			f.Mode = fs.ModeSymlink | 0o777
			f.Data = []byte(target)
		case t.IsRegular():
			if size+info.Size() > MaxSize {
				return fmt.Errorf("%w: %s is larger than %d MiB in all (at %s)", ErrBase, dir, MaxSize>>20, shown)
			}
			if f.Data, err = os.ReadFile(p); err != nil {
				return fmt.Errorf("%w: %s cannot be read: %v", ErrBase, shown, unwrapPath(err))
			}
		default:
			return fmt.Errorf("%w: %s is a %s; a base holds only files, directories and links", ErrBase, shown, kindOf(t))
		}
		size += int64(len(f.Data))
		if size > MaxSize {
			return fmt.Errorf("%w: %s is larger than %d MiB in all (at %s)", ErrBase, dir, MaxSize>>20, shown)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return New(files), nil
}

// New makes the Content of files, sorting them and computing the digest.
func New(files []File) *Content {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	sum := sha256.Sum256(Encode(files))
	return &Content{Files: files, Digest: hex.EncodeToString(sum[:])}
}

// inside reports whether a link at rel (slash-separated, inside the base)
// with target stays inside the base.
func inside(rel, target string) bool {
	if target == "" || path.IsAbs(filepath.ToSlash(target)) {
		return false
	}
	joined := path.Join(path.Dir(rel), filepath.ToSlash(target))
	return joined != ".." && !strings.HasPrefix(joined, "../")
}

func kindOf(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// unwrapPath drops the path a *fs.PathError repeats: messages name the
// file once, as the user wrote it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Encode is the canonical encoding of files sorted by path, which the
// digest is taken over and the store keeps: per entry, its path, mode and
// data, each length-prefixed.
func Encode(files []File) []byte {
	n := 0
	for _, f := range files {
		n += len(f.Path) + len(f.Data) + 3*binary.MaxVarintLen64
	}
	out := make([]byte, 0, n)
	for _, f := range files {
		out = binary.AppendUvarint(out, uint64(len(f.Path)))
		out = append(out, f.Path...)
		out = binary.AppendUvarint(out, uint64(f.Mode))
		out = binary.AppendUvarint(out, uint64(len(f.Data)))
		out = append(out, f.Data...)
	}
	return out
}

// Decode reads what Encode wrote and checks it against digest.
func Decode(raw []byte, digest string) (*Content, error) {
	sum := sha256.Sum256(raw)
	if hex.EncodeToString(sum[:]) != digest {
		return nil, ErrCorrupt
	}
	var files []File
	for len(raw) > 0 {
		var f File
		var ok bool
		var p, d []byte
		if p, raw, ok = field(raw); !ok {
			return nil, ErrCorrupt
		}
		mode, k := binary.Uvarint(raw)
		if k <= 0 {
			return nil, ErrCorrupt
		}
		raw = raw[k:]
		if d, raw, ok = field(raw); !ok {
			return nil, ErrCorrupt
		}
		f.Path, f.Mode, f.Data = string(p), fs.FileMode(mode), d
		files = append(files, f)
	}
	return &Content{Files: files, Digest: digest}, nil
}

func field(raw []byte) ([]byte, []byte, bool) {
	n, k := binary.Uvarint(raw)
	if k <= 0 || uint64(len(raw)-k) < n {
		return nil, nil, false
	}
	return raw[k : k+int(n)], raw[k+int(n):], true
}
