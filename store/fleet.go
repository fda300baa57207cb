package store

import "github.com/solarops/solar/store/kv"

// Fleet returns the store's fleet of runners (kv.Fleet); ok is false on a
// backend that has one runner per plan (a bbolt file).
func (db *DB) Fleet() (f kv.Fleet, ok bool) {
	f, ok = db.be.(kv.Fleet)
	return f, ok
}

// Fleet returns what the transaction can do to the fleet's rows
// (kv.FleetTx); ok is false on a backend without a fleet.
func (t *Tx) Fleet() (f kv.FleetTx, ok bool) {
	f, ok = t.t.(kv.FleetTx)
	return f, ok
}
