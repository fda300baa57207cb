package store

import "github.com/solarops/solar/store/kv"

// Rates returns the store's shared rates (kv.Rates) for a process without
// a lock client of its own (the fleet's runners); ok is false for a
// backend whose rates only its lock clients take (a bbolt file's: see
// OpenLocks).
func (db *DB) Rates() (r kv.Rates, ok bool) {
	r, ok = db.be.(kv.Rates)
	return r, ok
}
