package pg

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/store/kv"
)

// Notifications travel on one PostgreSQL channel, notifyChannel, for every
// store of a server; the payload says which store (its schema), which
// topic and which key: "schema topic key". A schema is an identifier
// without spaces (schemaName), so the first two spaces split it.
const notifyChannel = "solar"

// listenRetry is how long a listener whose connection was lost waits
// before it connects again.
const listenRetry = time.Second

// Notify queues a notification of topic about key, sent with the
// transaction's COMMIT (pg_notify), so that only a committed transaction
// notifies (kv.NotifyTx). The same notification twice is sent once.
func (t *tx) Notify(topic, key string) error {
	if !t.writable {
		return kv.ErrReadOnly
	}
	p := t.s.loc.schema + " " + topic + " " + key
	for _, n := range t.notes {
		if n == p {
			return nil
		}
	}
	t.notes = append(t.notes, p)
	return nil
}

// queueNotes queues the transaction's notifications in b, in front of its
// COMMIT.
func (t *tx) queueNotes(b *pgx.Batch) {
	for _, p := range t.notes {
		b.Queue("SELECT pg_notify($1, $2)", notifyChannel, p)
	}
}

// Listen delivers the keys of the notifications of topic in this store
// (kv.Notifier), on a connection of its own, not the pool's: it LISTENs
// there and waits, and connects again listenRetry after losing it, until
// ctx ends. The first connection is made before Listen returns: its
// failure is Listen's error.
func (s *Store) Listen(ctx context.Context, topic string) (<-chan string, error) {
	conn, err := s.listenConn(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan string, 16)
	prefix := s.loc.schema + " " + topic + " "
	go func() {
		defer close(out)
		for {
			err := s.relay(ctx, conn, prefix, out)
			_ = conn.Close(context.Background())
			if ctx.Err() != nil || err == nil {
				return
			}
			for conn = nil; conn == nil; {
				select {
				case <-ctx.Done():
					return
				case <-time.After(listenRetry):
				}
				conn, _ = s.listenConn(ctx)
			}
		}
	}()
	return out, nil
}

// listenConn connects to the store's server and LISTENs on notifyChannel.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.ConnConfig.Copy())
	if err != nil {
		return nil, s.fail("listen", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{notifyChannel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, s.fail("listen", err)
	}
	return conn, nil
}

// relay passes the keys of conn's notifications that start with prefix to
// out, dropping those out has no room for, until ctx ends (nil) or the
// connection fails (its error).
func (s *Store) relay(ctx context.Context, conn *pgx.Conn, prefix string, out chan<- string) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		key, ok := strings.CutPrefix(n.Payload, prefix)
		if !ok {
			continue
		}
		select {
		case out <- key:
		default:
		}
	}
}
