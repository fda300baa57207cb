package store

import (
	"context"

	"github.com/solarops/solar/store/kv"
)

// Listen delivers the key of every notification on topic (Tx.Notify) that
// any process of the store commits from now on, until ctx ends (see
// kv.Notifier); ok is false when the backend cannot notify (a bbolt file),
// and its users must poll. Notifications may be lost: poll as well.
func (db *DB) Listen(ctx context.Context, topic string) (keys <-chan string, ok bool, err error) {
	n, can := db.be.(kv.Notifier)
	if !can {
		return nil, false, nil
	}
	keys, err = n.Listen(ctx, topic)
	return keys, err == nil, err
}

// CanNotify reports whether the store tells listeners of notifications
// (Listen): a PostgreSQL store.
func (db *DB) CanNotify() bool {
	_, ok := db.be.(kv.Notifier)
	return ok
}

// Notify tells the store's listeners of topic about key when the
// transaction commits, and only if it does; on a backend that cannot
// notify it does nothing, and listeners learn of the change by polling.
func (t *Tx) Notify(topic, key string) error {
	if n, ok := t.t.(kv.NotifyTx); ok {
		return n.Notify(topic, key)
	}
	return nil
}
