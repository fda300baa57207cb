package pg_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
)

// TestNotifyReachesListenersOnCommitOnly: a notification reaches the
// listeners of its topic in its store once its transaction commits, within
// a second; one of a rolled back transaction, of another topic or of
// another store (schema) on the same server never does; the listener
// stops when its context ends.
func TestNotifyReachesListenersOnCommitOnly(t *testing.T) {
	db := pgtest.Shared(t)
	a := open(t, db+"&schema=note_a", opts())
	b := open(t, db+"&schema=note_b", opts())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, err := a.Listen(ctx, "stop")
	if err != nil {
		t.Fatal(err)
	}
	notify := func(s kv.Backend, topic, key string, fail bool) {
		t.Helper()
		err := s.Update(func(tx kv.Tx) error {
			if err := tx.(kv.NotifyTx).Notify(topic, key); err != nil {
				return err
			}
			if fail {
				return errors.New("rolled back")
			}
			return nil
		})
		if (err != nil) != fail {
			t.Fatalf("notify %s %s: %v", topic, key, err)
		}
	}
	notify(a, "stop", "rolled-back", true)
	notify(a, "other", "other-topic", false)
	notify(b, "stop", "other-store", false)
	start := time.Now()
	notify(a, "stop", "plan-1", false)
	select {
	case k := <-keys:
		if k != "plan-1" {
			t.Fatalf("listener got %q, want only plan-1", k)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("notification took %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after 5s")
	}
	select {
	case k := <-keys:
		t.Fatalf("listener got %q after plan-1", k)
	case <-time.After(200 * time.Millisecond):
	}
	if err := a.View(func(tx kv.Tx) error { return tx.(kv.NotifyTx).Notify("stop", "x") }); !errors.Is(err, kv.ErrReadOnly) {
		t.Errorf("Notify in a View: %v, want ErrReadOnly", err)
	}
	cancel()
	select {
	case _, open := <-keys:
		if open {
			t.Fatal("a key after the context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel is still open 5s after the context ended")
	}
}
