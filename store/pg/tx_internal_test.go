package pg

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
)

// TestIgnoredReadErrorFailsTheUpdate: Has cannot return its error, and
// PostgreSQL aborts the transaction after it; Update must fail with that
// error, not with the commit's "transaction is aborted", so that a
// serialization failure there still leads to a retry.
func TestIgnoredReadErrorFailsTheUpdate(t *testing.T) {
	s, err := Open(pgtest.Shared(t), Options{Buckets: []string{"meta", "one"}, Meta: "meta", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	good := s.sql.has
	s.sql.has = "SELECT no_such_column FROM " + s.sql.schema + ".kv WHERE bucket = $1 AND key = $2"
	err = s.Update(func(tx kv.Tx) error {
		if tx.Has("one", "k") {
			t.Error("Has of a failed query said yes")
		}
		return tx.Put("one", "k", []byte("v"))
	})
	s.sql.has = good
	if !isCode(err, "42703") {
		t.Fatalf("Update after a failed Has: %v, want the query's error (42703)", err)
	}
	_ = s.View(func(tx kv.Tx) error {
		if tx.Has("one", "k") {
			t.Error("the failed Update committed its put")
		}
		return nil
	})
}

// exchanges records what a store sends, one entry per round trip: the
// statements of a query or of a batch.
type exchanges struct {
	mu  sync.Mutex
	log [][]string
}

func (e *exchanges) add(sqls ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, sqls)
}

// take returns what was sent since the last take, once at least n
// exchanges were (a View's rollback is sent in the background).
func (e *exchanges) take(t *testing.T, n int) [][]string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		e.mu.Lock()
		if len(e.log) >= n || time.Now().After(deadline) {
			got := e.log
			e.log = nil
			e.mu.Unlock()
			return got
		}
		e.mu.Unlock()
	}
}

func (e *exchanges) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	e.add(d.SQL)
	return ctx
}

func (e *exchanges) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (e *exchanges) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	e.add(sqls...)
	return ctx
}

func (e *exchanges) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (e *exchanges) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

var traced atomic.Int64

// openTraced opens a store of a new schema whose statements ex records.
func openTraced(t *testing.T) (*Store, *exchanges) {
	t.Helper()
	s, err := parse(fmt.Sprintf("%s&schema=traced%d", pgtest.Shared(t), traced.Add(1)),
		Options{Buckets: []string{"meta", "one"}, Meta: "meta", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	ex := &exchanges{}
	s.cfg.ConnConfig.Tracer = ex
	if err := s.connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ex.take(t, 0)
	return s, ex
}

// TestRoundTrips: BEGIN rides with a transaction's first statement and
// COMMIT with its writes, a transaction that sends no statement begins
// nothing, and a Get after a Has of a small value asks nothing more.
func TestRoundTrips(t *testing.T) {
	s, ex := openTraced(t)
	sql := s.sql
	get := func(tx kv.Tx, key, want string) {
		t.Helper()
		v, err := tx.Get("one", key)
		if want == "" && !errors.Is(err, kv.ErrNotFound) || want != "" && (err != nil || string(v) != want) {
			t.Errorf("Get(%q) = %q %v, want %q", key, v, err, want)
		}
	}
	big := strings.Repeat("b", hasValueMax+1)
	for _, c := range []struct {
		name   string
		update bool
		fn     func(tx kv.Tx) error
		want   [][]string
	}{
		{"empty update", true, func(kv.Tx) error { return nil }, nil},
		{"empty view", false, func(kv.Tx) error { return nil }, nil},
		{"update that only writes", true, func(tx kv.Tx) error {
			_ = tx.Put("one", "big", []byte(big))
			return tx.Put("one", "k", []byte("v"))
		}, [][]string{{beginUpdate, sql.upsert, "COMMIT"}}},
		{"update that reads and writes", true, func(tx kv.Tx) error {
			get(tx, "k", "v")
			get(tx, "k", "v")
			return tx.Put("one", "k", []byte("w"))
		}, [][]string{{beginUpdate, sql.get}, {sql.upsert, "COMMIT"}}},
		{"update that only reads", true, func(tx kv.Tx) error {
			get(tx, "nothing", "")
			if tx.Has("one", "nothing") {
				t.Error("Has of a key Get did not find")
			}
			return nil
		}, [][]string{{beginUpdate, sql.get}, {"COMMIT"}}},
		{"update that fails", true, func(tx kv.Tx) error {
			get(tx, "k", "w")
			return errors.New("no")
		}, [][]string{{beginUpdate, sql.get}, {"ROLLBACK"}}},
		{"view: Has then Get", false, func(tx kv.Tx) error {
			if !tx.Has("one", "k") || !tx.Has("one", "big") || tx.Has("one", "nothing") {
				t.Error("Has is wrong")
			}
			get(tx, "k", "w")
			get(tx, "nothing", "")
			get(tx, "big", big) // too large to come with Has
			return nil
		}, [][]string{{beginView, sql.has}, {sql.has}, {sql.has}, {sql.get}, {"ROLLBACK"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.update {
				err = s.Update(c.fn)
			} else {
				err = s.View(c.fn)
			}
			if err != nil && c.name != "update that fails" {
				t.Fatal(err)
			}
			if got := ex.take(t, len(c.want)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("sent\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// TestFailedFirstStatement: the first statement fails in the batch that
// begins the transaction, when prepared (nothing began) or when run (the
// transaction is aborted). Update and View return its error, Update commits
// nothing, and the connection serves the next transactions.
func TestFailedFirstStatement(t *testing.T) {
	s, ex := openTraced(t)
	good := s.sql.get
	for _, c := range []struct {
		name, where, code string
		rollback          bool
	}{
		{"does not prepare", "no_such_column = 1", "42703", false},
		{"fails running", "octet_length($2) / 0 = 1", "22012", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.sql.get = good + " AND " + c.where
			err := s.Update(func(tx kv.Tx) error {
				if _, err := tx.Get("one", "k"); !isCode(err, c.code) {
					t.Errorf("Get: %v, want %s", err, c.code)
				}
				return tx.Put("one", "k", []byte("v"))
			})
			if !isCode(err, c.code) {
				t.Fatalf("Update: %v, want %s", err, c.code)
			}
			err = s.View(func(tx kv.Tx) error { _, err := tx.Get("one", "k"); return err })
			if !isCode(err, c.code) {
				t.Fatalf("View: %v, want %s", err, c.code)
			}
			want := [][]string{{beginUpdate, s.sql.get}, {beginView, s.sql.get}}
			if c.rollback {
				want = [][]string{{beginUpdate, s.sql.get}, {"ROLLBACK"}, {beginView, s.sql.get}, {"ROLLBACK"}}
			}
			if got := ex.take(t, len(want)); !reflect.DeepEqual(got, want) {
				t.Errorf("sent\n%q\nwant\n%q", got, want)
			}
			s.sql.get = good
			for range 3 { // more than the connections the failures used
				if err := s.Update(func(tx kv.Tx) error {
					if _, err := tx.Get("one", "k"); !errors.Is(err, kv.ErrNotFound) {
						t.Errorf("Get after a failed Update: %v, want ErrNotFound", err)
					}
					return tx.Put("one", "k2", nil)
				}); err != nil {
					t.Fatal(err)
				}
			}
			ex.take(t, 0)
		})
	}
}

// TestSerializationFailureOfFirstStatementIsRetried injects SQLSTATE 40001
// into the first read, which travels with BEGIN: Update runs fn again.
func TestSerializationFailureOfFirstStatementIsRetried(t *testing.T) {
	s, _ := openTraced(t)
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	// nextval is not rolled back: only the first call fails.
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, "CREATE SEQUENCE "+s.sql.schema+".tries; "+
		"CREATE FUNCTION "+s.sql.schema+".flaky() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN "+
		"IF nextval('"+s.sql.schema+".tries') = 1 THEN RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END IF; "+
		"RETURN true; END $$"); err != nil {
		t.Fatal(err)
	}
	s.sql.get = "SELECT value FROM " + s.sql.schema + ".kv WHERE bucket = $1 AND key = $2 AND " + s.sql.schema + ".flaky()"
	runs := 0
	err := s.Update(func(tx kv.Tx) error {
		runs++
		v, err := tx.Get("one", "k")
		if err != nil {
			return err
		}
		return tx.Put("one", "k", append(v, '+'))
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs, want nil after 2", err, runs)
	}
	s.sql.get = newStatements(s.sql.schema).get
	_ = s.View(func(tx kv.Tx) error {
		if v, err := tx.Get("one", "k"); string(v) != "1+" {
			t.Errorf("k = %q %v, want 1+", v, err)
		}
		return nil
	})
}

// TestBulkReads: a transaction that looks up or scans many keys of one
// family (the part of the key before its first '/') reads the family whole
// once and answers the rest itself, correctly for keys that exist, keys
// that do not, its own writes and deletions, and prefix scans both ways.
func TestBulkReads(t *testing.T) {
	s, ex := openTraced(t)
	if err := s.Update(func(tx kv.Tx) error {
		for i := range 300 {
			if err := tx.Put("one", fmt.Sprintf("r/%03d", i), []byte(fmt.Sprint("v", i))); err != nil {
				return err
			}
		}
		return tx.Put("one", "s/other", []byte("x"))
	}); err != nil {
		t.Fatal(err)
	}
	ex.take(t, 1)
	err := s.Update(func(tx kv.Tx) error {
		if err := tx.Put("one", "r/100", []byte("mine")); err != nil {
			return err
		}
		if err := tx.Delete("one", "r/101"); err != nil {
			return err
		}
		for i := range 600 {
			k := fmt.Sprintf("r/%03d", i)
			v, err := tx.Get("one", k)
			switch {
			case i == 100:
				if string(v) != "mine" {
					t.Errorf("Get of a key written in the transaction = %q %v", v, err)
				}
			case i == 101 || i >= 300:
				if !errors.Is(err, kv.ErrNotFound) || tx.Has("one", k) {
					t.Errorf("%s: Get = %q %v, Has %v: want absent", k, v, err, tx.Has("one", k))
				}
			case err != nil || string(v) != fmt.Sprint("v", i):
				t.Errorf("Get(%s) = %q %v", k, v, err)
			}
		}
		var keys []string
		if err := tx.ForEach("one", "r/09", func(k string, v []byte) error {
			keys = append(keys, k)
			return nil
		}); err != nil {
			return err
		}
		if len(keys) != 10 || keys[0] != "r/090" || keys[9] != "r/099" {
			t.Errorf("ForEach r/09 = %q", keys)
		}
		keys = nil
		if err := tx.ForEach("one", "r/10", func(k string, v []byte) error {
			keys = append(keys, k+"="+string(v))
			return nil
		}); err != nil {
			return err
		}
		if len(keys) != 9 || keys[0] != "r/100=mine" || keys[1] != "r/102=v102" {
			t.Errorf("ForEach r/10 (with a write and a deletion) = %q", keys)
		}
		if k, v, err := tx.Last("one", "r/"); err != nil || k != "r/299" || string(v) != "v299" {
			t.Errorf("Last r/ = %q %q %v", k, v, err)
		}
		if !tx.Has("one", "s/other") {
			t.Error("another family's key is missing")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 600 lookups and the scans took the first wholeAfter lookups, one read
	// of the family, and a handful of other statements; not 600.
	if n := len(ex.take(t, 1)); n > wholeAfter+10 {
		t.Fatalf("%d round trips for 600 lookups of one family", n)
	}
}

// TestPrefetch: keys of several buckets come in one round trip, and the
// reads after it are answered from what it brought: present, absent, and
// keys the transaction wrote itself, which it does not ask for.
func TestPrefetch(t *testing.T) {
	s, ex := openTraced(t)
	if err := s.Update(func(tx kv.Tx) error {
		if err := tx.Put("one", "a", []byte("1")); err != nil {
			return err
		}
		return tx.Put("meta", "m", []byte("2"))
	}); err != nil {
		t.Fatal(err)
	}
	ex.take(t, 1)
	if err := s.Update(func(tx kv.Tx) error {
		if err := tx.Put("one", "mine", []byte("3")); err != nil {
			return err
		}
		p := tx.(interface{ Prefetch(...kv.Key) error })
		if err := p.Prefetch(kv.Key{Bucket: "one", Key: "a"}, kv.Key{Bucket: "meta", Key: "m"},
			kv.Key{Bucket: "one", Key: "missing"}, kv.Key{Bucket: "one", Key: "mine"}); err != nil {
			return err
		}
		if n := len(ex.take(t, 1)); n != 1 {
			t.Errorf("prefetch of keys of two buckets took %d round trips", n)
		}
		for _, c := range []struct{ b, k, want string }{{"one", "a", "1"}, {"meta", "m", "2"}, {"one", "missing", ""}, {"one", "mine", "3"}} {
			v, err := tx.Get(c.b, c.k)
			if c.want == "" && !errors.Is(err, kv.ErrNotFound) || c.want != "" && string(v) != c.want {
				t.Errorf("Get(%s, %s) = %q %v after prefetch, want %q", c.b, c.k, v, err, c.want)
			}
		}
		if tx.Has("one", "missing") || !tx.Has("one", "a") {
			t.Error("Has disagrees with the prefetch")
		}
		if got := ex.take(t, 0); len(got) != 0 {
			t.Errorf("reads after the prefetch went to the server: %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
