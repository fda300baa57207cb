package bases

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// CacheDir is the private directory of this machine and user where
// Materialize writes bases: $SOLAR_CACHE_DIR, else the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache) with solar/bases, else one under
// the temporary directory named by the user id.
func CacheDir(getenv func(string) string) string {
	if d := getenv("SOLAR_CACHE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "solar", "bases")
	}
	if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "solar", "bases")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("solar-%d", os.Getuid()), "bases")
}

// Materialize makes sure root/<digest> holds exactly c, and returns that
// directory. A directory there that does not verify (edited, half written
// by a process that died) is replaced. root is made 0700; so is each base's
// directory, whatever the modes inside it.
func Materialize(c *Content, root string) (string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("base cache %s: %w", root, err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return "", fmt.Errorf("base cache %s: %w", root, err)
	}
	dir := filepath.Join(root, c.Digest)
	if have, err := Read(dir); err == nil && have.Digest == c.Digest {
		return dir, nil
	}
	tmp := filepath.Join(root, ".tmp-"+c.Digest[:12]+"-"+randomSuffix())
	if err := write(c, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("base cache %s: %w", root, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("base cache %s: %w", root, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if have, rerr := Read(dir); rerr == nil && have.Digest == c.Digest {
			return dir, nil // another run put it there first
		}
		return "", fmt.Errorf("base cache %s: %w", root, err)
	}
	return dir, nil
}

// Export writes c into dir (which must not exist or be empty), with the
// modes it was stored with.
func Export(c *Content, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFiles(c, dir)
}

func write(c *Content, dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := writeFiles(c, dir); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// writeFiles writes every entry of c under dir: directories first made
// writable, given their modes last (deepest first), so that a read-only
// directory can still be filled.
func writeFiles(c *Content, dir string) error {
	var dirs []File
	for _, f := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		switch {
		case f.Mode.IsDir():
			if err := os.Mkdir(p, 0o700); err != nil && !os.IsExist(err) {
				return err
			}
			dirs = append(dirs, f)
		case f.Mode&fs.ModeSymlink != 0:
			if err := os.Symlink(string(f.Data), p); err != nil {
				return err
			}
		default:
			if err := os.WriteFile(p, f.Data, 0o600); err != nil {
				return err
			}
			if err := os.Chmod(p, f.Mode.Perm()); err != nil {
				return err
			}
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].Path > dirs[j].Path })
	for _, f := range dirs {
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(f.Path)), f.Mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sortInfos(list []*Info) {
	sort.Slice(list, func(i, j int) bool {
		if list[i].Name != list[j].Name {
			return list[i].Name < list[j].Name
		}
		return list[i].StoredAt.Before(list[j].StoredAt)
	})
}
