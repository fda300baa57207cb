package bases

import (
	"strings"

	"github.com/solarops/solar/store"
)

// missingKey marks a resource whose base directory could not be read when
// a store of an earlier version was upgraded (schema version 4): its
// files are not in the store.
func missingKey(resource string) string { return "missing/" + resource }

// MarkMissing records that the base of resource, recorded as dir, could
// not be stored. The mark is a hint for warnings (package resources checks
// that the resource still lacks its base before it tells anyone); the
// resource record itself, with no digest, is what refuses a run.
func MarkMissing(tx *store.Tx, resource, dir string) error {
	return tx.Put(store.Bases, missingKey(resource), []byte(dir))
}

// Missing returns the marks MarkMissing left: resource -> directory.
func Missing(tx *store.Tx) (map[string]string, error) {
	out := map[string]string{}
	err := tx.ForEach(store.Bases, "missing/", func(k string, v []byte) error {
		out[strings.TrimPrefix(k, "missing/")] = string(v)
		return nil
	})
	return out, err
}

// Unmark drops the mark of resource (its base is stored now, or it is gone).
func Unmark(tx *store.Tx, resource string) error {
	return tx.Delete(store.Bases, missingKey(resource))
}
