package kv

import "context"

// Notifier is a Backend that tells its listeners, as it happens, what
// other processes of the store committed (PostgreSQL: LISTEN/NOTIFY). A
// backend without it leaves them to poll; one with it does not spare them
// polling either, only lets them poll slowly: a notification sent while a
// listener is not connected (a server restart, a network cut) is lost.
type Notifier interface {
	// Listen delivers the key of every notification on topic (NotifyTx)
	// that a transaction of any process of the store commits after Listen
	// returned, until ctx ends; then it closes the channel. Its
	// connection is its own: it lives until ctx ends, whether or not the
	// Backend is closed, and connects again when it is lost. A listener
	// that falls behind loses notifications rather than blocking anyone.
	Listen(ctx context.Context, topic string) (<-chan string, error)
}

// NotifyTx is a Tx that can notify the listeners of its store (Notifier):
// Notify(topic, key) reaches them when the transaction commits, and only
// if it does. A transaction retried from the start notifies once, for its
// last run.
type NotifyTx interface {
	Notify(topic, key string) error
}
