package orch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store"
)

// TestRunWaitsForAConnectionSlot: mid-run, another client takes every
// connection slot of the runner's role as soon as one is free (the server
// refuses more with SQLSTATE 53300, as when max_connections is exhausted),
// for three seconds, while the runner's pooled connections expire and must
// be made anew (pool_max_conn_lifetime). The runner waits for a slot
// instead of aborting ("persist INPROGRESS of task ...: cannot connect"),
// and the run succeeds.
func TestRunWaitsForAConnectionSlot(t *testing.T) {
	db := pgtest.Shared(t)
	ctx := context.Background()
	super, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	name := strings.SplitN(strings.TrimPrefix(db, "postgres:///"), "?", 2)[0]
	role := "limited_" + name
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 4",
		"ALTER DATABASE " + name + " OWNER TO " + role,
	} {
		if _, err := super.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	asRole := strings.Replace(db, "user=postgres", "user="+role, 1)
	u := asRole + "&pool_max_conn_lifetime=200ms"

	writeFile := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work, base := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "actions"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(filepath.Join(base, "meta.yaml"), "handler: shell\nactions:\n  run: actions/run.sh\ninputs:\n  dir: {schema: str!}\n")
	writeFile(filepath.Join(base, "actions", "run.sh"), `#!/bin/sh
: > "$SOLAR_INPUT_DIR/started"
sleep 0.2
echo "$SOLAR_RESOURCE" >> "$SOLAR_INPUT_DIR/runs.log"
`)
	const n = 25
	_, uid := benchStoreAt(t, u, "chain", n, base, map[string]any{"dir": work})

	type result struct {
		states map[string]State
		err    error
	}
	done := make(chan result, 1)
	go func() {
		r := &Runner{Store: store.NewHandle(u), UID: uid, Concurrency: 4, PerNode: 4}
		_, states, err := r.Run(ctx, nil)
		done <- result{states, err}
	}()
	// The run is under way once its first task has started.
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(work, "started")); err == nil {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the run ended before its first task started: %v", r.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no task started within 60s")
		}
	}

	// The other client: it takes every free slot, at once, for 3s.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var refusals int
	wg.Add(1)
	go func() {
		defer wg.Done()
		var held []*pgx.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close(ctx)
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := pgx.Connect(ctx, asRole)
			if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "53300" {
				refusals++
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			held = append(held, c)
		}
	}()
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	if refusals == 0 {
		t.Fatal("the other client never found every slot taken")
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("run: %v", r.err)
		}
		for id, st := range r.states {
			if st.Status != StatusSuccess {
				t.Errorf("task %s ended %s: %s", id, st.Status, st.Err)
			}
		}
		if len(r.states) != n {
			t.Errorf("%d tasks, want %d", len(r.states), n)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end within 2 minutes of the slots being given back")
	}
}
