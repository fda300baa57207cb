package bases

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/solarops/solar/store"
)

// Keys in the bases bucket: a base's files under its digest, and what lists
// show of it beside them.
func contentKey(digest string) string { return "content/" + digest }
func infoKey(digest string) string    { return "info/" + digest }

// Info is what the store knows of a stored base besides its files.
type Info struct {
	Name     string    `json:"name"`
	Version  string    `json:"version,omitempty"`
	Digest   string    `json:"digest"`
	Size     int64     `json:"size"`
	Files    int       `json:"files"`
	StoredAt time.Time `json:"stored_at"`
	// Source is the directory it was first read from, on the machine
	// that read it; nothing runs from there.
	Source string `json:"source,omitempty"`
}

// Put stores c under its digest unless it is there already, with info
// (whose Digest, Size and Files it fills in).
func Put(tx *store.Tx, c *Content, info Info) error {
	if tx.Has(store.Bases, contentKey(c.Digest)) {
		return nil
	}
	info.Digest, info.Size, info.Files = c.Digest, c.Size(), len(c.Files)
	raw, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if err := tx.Put(store.Bases, contentKey(c.Digest), Encode(c.Files)); err != nil {
		return err
	}
	return tx.Put(store.Bases, infoKey(c.Digest), raw)
}

// Has reports whether a base of that digest is stored.
func Has(tx *store.Tx, digest string) bool { return tx.Has(store.Bases, contentKey(digest)) }

// Get returns the stored base of that digest, verified: ErrUnknown when it
// is not stored, ErrCorrupt when its bytes do not match the digest. name
// is for the error only.
func Get(tx *store.Tx, name, digest string) (*Content, error) {
	// Get, not Peek: the files Decode returns share raw's bytes, and they
	// are used after the transaction (a bbolt file's pages are unmapped).
	raw, err := tx.Get(store.Bases, contentKey(digest))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s@%s is not in the store", ErrUnknown, name, Short(digest))
	}
	if err != nil {
		return nil, err
	}
	c, err := Decode(raw, digest)
	if err != nil {
		return nil, fmt.Errorf("base %s@%s: %w; nothing of it runs", name, Short(digest), err)
	}
	return c, nil
}

// GetInfo returns what the store knows of the base of that digest.
func GetInfo(tx *store.Tx, digest string) (*Info, error) {
	raw, err := tx.Peek(store.Bases, infoKey(digest))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no base has digest %s", ErrUnknown, Short(digest))
	}
	if err != nil {
		return nil, err
	}
	var in Info
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("decode base %s: %w", Short(digest), err)
	}
	return &in, nil
}

// List returns every stored base, by name then time stored.
func List(tx *store.Tx) ([]*Info, error) {
	var out []*Info
	err := tx.ForEach(store.Bases, "info/", func(_ string, raw []byte) error {
		var in Info
		if err := json.Unmarshal(raw, &in); err != nil {
			return err
		}
		out = append(out, &in)
		return nil
	})
	sortInfos(out)
	return out, err
}

// Delete removes the stored base of that digest.
func Delete(tx *store.Tx, digest string) error {
	if err := tx.Delete(store.Bases, contentKey(digest)); err != nil {
		return err
	}
	return tx.Delete(store.Bases, infoKey(digest))
}
