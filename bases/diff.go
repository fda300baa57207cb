package bases

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Ways an entry of a base differs between two contents.
const (
	Added   = "add"
	Removed = "remove"
	Changed = "change"
)

// Difference is one entry of a base that two contents do not share: a
// file, directory or link added, removed, or changed in mode, type or
// bytes. Old and New identify the entry's state (Fingerprint), never its
// bytes; "" where it does not exist.
type Difference struct {
	Op   string
	Path string
	Old  string
	New  string
}

// Diff lists how the base goes from from to to, by path. Directories are listed
// only when added, removed or changed in mode themselves: the files under
// them are listed on their own.
func Diff(from, to *Content) []Difference {
	var out []Difference
	i, j := 0, 0
	for i < len(from.Files) || j < len(to.Files) {
		switch {
		case j == len(to.Files) || i < len(from.Files) && from.Files[i].Path < to.Files[j].Path:
			out = append(out, Difference{Op: Removed, Path: from.Files[i].Path, Old: Fingerprint(&from.Files[i])})
			i++
		case i == len(from.Files) || to.Files[j].Path < from.Files[i].Path:
			out = append(out, Difference{Op: Added, Path: to.Files[j].Path, New: Fingerprint(&to.Files[j])})
			j++
		default:
			o, n := Fingerprint(&from.Files[i]), Fingerprint(&to.Files[j])
			if o != n {
				out = append(out, Difference{Op: Changed, Path: to.Files[j].Path, Old: o, New: n})
			}
			i, j = i+1, j+1
		}
	}
	return out
}

// Fingerprint is the short digest (Short) of an entry's mode and bytes:
// equal for entries that are the same, whatever their paths.
func Fingerprint(f *File) string {
	h := sha256.New()
	var m [binary.MaxVarintLen64]byte
	h.Write(m[:binary.PutUvarint(m[:], uint64(f.Mode))])
	h.Write(f.Data)
	return Short(hex.EncodeToString(h.Sum(nil)))
}
