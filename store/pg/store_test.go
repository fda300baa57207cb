package pg_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
	"github.com/solarops/solar/store/pg"
)

func open(t *testing.T, url string, o pg.Options) *pg.Store {
	t.Helper()
	s, err := pg.Open(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func exec1(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, strings.Split(url, "&schema=")[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestSchemasAreSeparateStores(t *testing.T) {
	db := pgtest.Shared(t)
	a := open(t, db+"&schema=team_a", opts())
	b := open(t, db+"&schema=team_b", opts())
	if err := a.Update(func(tx kv.Tx) error { return tx.Put("one", "k", []byte("a")) }); err != nil {
		t.Fatal(err)
	}
	_ = b.View(func(tx kv.Tx) error {
		if tx.Has("one", "k") {
			t.Error("store team_b sees a key of team_a")
		}
		return nil
	})
	if a.Schema() != "team_a" || !strings.Contains(a.Location(), "schema=team_a") {
		t.Errorf("schema %q location %q", a.Schema(), a.Location())
	}
	// Without ?schema=, the store is in schema "solar".
	d := open(t, db, opts())
	if d.Schema() != pg.DefaultSchema {
		t.Errorf("default schema %q", d.Schema())
	}
}

func TestVersions(t *testing.T) {
	db := pgtest.Shared(t)
	u := newURL(t, db)
	open(t, u, opts()).Close()
	o := opts()
	o.Version = 2
	if _, err := pg.Open(u, o); !errors.Is(err, kv.ErrSchema) || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("a store of schema version 1 opened for version 2: %v", err)
	}
	schema := u[strings.LastIndex(u, "=")+1:]
	exec1(t, u, "UPDATE "+schema+".solar_layout SET version = 99")
	if _, err := pg.Open(u, opts()); !errors.Is(err, kv.ErrSchema) || !strings.Contains(err.Error(), "layout 99") {
		t.Errorf("a store of a newer layout: %v", err)
	}

	// A store of layout 0 (its layout table only) is upgraded in place.
	old := newURL(t, db)
	schema = old[strings.LastIndex(old, "=")+1:]
	exec1(t, old, "CREATE SCHEMA "+schema+"; CREATE TABLE "+schema+".solar_layout (version integer NOT NULL); INSERT INTO "+schema+".solar_layout VALUES (0)")
	s := open(t, old, opts())
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", nil) }); err != nil {
		t.Fatal(err)
	}
	in, err := s.Info()
	if err != nil || in.LayoutVersion != pg.LayoutVersion {
		t.Fatalf("after the upgrade: %+v %v", in, err)
	}
}

func TestReadOnly(t *testing.T) {
	db := pgtest.Shared(t)
	u := newURL(t, db)
	o := opts()
	o.ReadOnly = true
	_, err := pg.Open(u, o)
	if !errors.Is(err, kv.ErrNoStore) || !strings.Contains(err.Error(), "no store at postgres://") {
		t.Fatalf("read-only open of a missing store: %v", err)
	}
	open(t, u, opts()).Close() // ReadOnly created nothing, this creates it
	r := open(t, u, o)
	if err := r.Update(func(kv.Tx) error { return nil }); !errors.Is(err, kv.ErrReadOnly) {
		t.Errorf("Update of a read-only store: %v", err)
	}
	if err := r.View(func(tx kv.Tx) error { _, err := tx.Get("meta", "schema_version"); return err }); err != nil {
		t.Error(err)
	}
}

func TestConnectErrorsAreOneLineAndRedacted(t *testing.T) {
	db := pgtest.Shared(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, url, want string }{
		{"no server", "postgres://alice:s3cret@/solar?host=" + dir + "/nothing", "cannot connect"},
		{"no server on TCP", "postgres://alice:s3cret@127.0.0.1:1/solar?connect_timeout=2", "connection refused"},
		{"no role", strings.Replace(db, "user=postgres", "user=nobody_here", 1) + "&password=s3cret", `role "nobody_here" does not exist`},
		{"no database", "postgres://postgres:s3cret@/x_missing?" + strings.SplitN(db, "?", 2)[1], `database "x_missing" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := opts()
			o.ConnectWait = time.Second // no server: tried again, in vain
			_, err := pg.Open(c.url, o)
			if err == nil {
				t.Fatal("opened")
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cret") || !strings.Contains(msg, "xxxxx") || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q: want one line naming the redacted URL and %q", msg, c.want)
			}
			// pgx tries twice (TLS, then not) and joins the failures:
			// the reason is said once.
			if _, reason, _ := strings.Cut(msg, ": cannot connect: "); reason != "" {
				if tail := reason[max(0, len(reason)-40):]; strings.Count(reason, tail) > 1 {
					t.Errorf("error %q says its reason more than once", msg)
				}
			}
		})
	}
}

// TestRetryRunsFnAgain makes another store write, between this
// transaction's read and its commit, the key it read: SERIALIZABLE refuses
// the commit, and Update runs the function again on the new value.
func TestRetryRunsFnAgain(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	a, b := open(t, u, opts()), open(t, u, opts())
	put := func(s *pg.Store, v string) error {
		return s.Update(func(tx kv.Tx) error { return tx.Put("one", "n", []byte(v)) })
	}
	if err := put(a, "1"); err != nil {
		t.Fatal(err)
	}
	runs := 0
	err := a.Update(func(tx kv.Tx) error {
		runs++
		v, err := tx.Get("one", "n")
		if err != nil {
			return err
		}
		if runs == 1 {
			if err := put(b, "10"); err != nil {
				return err
			}
		}
		return tx.Put("one", "n", append(v, '+'))
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs, want nil after 2", err, runs)
	}
	_ = a.View(func(tx kv.Tx) error {
		if v, _ := tx.Get("one", "n"); string(v) != "10+" {
			t.Errorf("n = %q, want 10+ (the second run saw the other write)", v)
		}
		return nil
	})
}

// TestWriteSkewIsRetried: this transaction reads x and writes y while
// another reads y, writes x and commits. SERIALIZABLE refuses the second
// commit (at its write or at COMMIT, which travel in one batch), and
// Update runs the function again.
func TestWriteSkewIsRetried(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	a, b := open(t, u, opts()), open(t, u, opts())
	runs := 0
	err := a.Update(func(tx kv.Tx) error {
		runs++
		x, err := tx.Get("one", "x")
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		if runs == 1 {
			if err := b.Update(func(tx kv.Tx) error {
				if _, err := tx.Get("one", "y"); !errors.Is(err, kv.ErrNotFound) {
					return fmt.Errorf("y: %v", err)
				}
				return tx.Put("one", "x", []byte("b"))
			}); err != nil {
				return err
			}
		}
		return tx.Put("one", "y", append([]byte("a saw "), x...))
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs, want nil after 2", err, runs)
	}
	_ = a.View(func(tx kv.Tx) error {
		if v, _ := tx.Get("one", "y"); string(v) != "a saw b" {
			t.Errorf("y = %q, want %q (the second run saw the other write)", v, "a saw b")
		}
		return nil
	})
}

func TestConcurrentSequencesAndCounters(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	stores := []*pg.Store{open(t, u, opts()), open(t, u, opts()), open(t, u, opts())}
	const each = 20
	var mu sync.Mutex
	var seqs []uint64
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*each)
	for _, s := range stores {
		wg.Go(func() {
			for range each {
				var n uint64
				err := s.Update(func(tx kv.Tx) error {
					var err error
					if n, err = tx.NextSequence("one"); err != nil {
						return err
					}
					v, err := tx.Get("one", "count")
					if err != nil && !errors.Is(err, kv.ErrNotFound) {
						return err
					}
					return tx.Put("one", "count", append(v, 'x'))
				})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seqs = append(seqs, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(seqs)
	if len(seqs) != len(stores)*each || len(slices.Compact(slices.Clone(seqs))) != len(seqs) || seqs[len(seqs)-1] != uint64(len(seqs)) {
		t.Fatalf("sequences taken concurrently: %v", seqs)
	}
	_ = stores[0].View(func(tx kv.Tx) error {
		if v, _ := tx.Get("one", "count"); len(v) != len(stores)*each {
			t.Errorf("count %d after %d increments: an update was lost", len(v), len(stores)*each)
		}
		return nil
	})
}

func TestConcurrentFirstUse(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := pg.Open(u, opts())
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestLockWait holds a row lock in another session: the store's commit
// waits LockWait for it, then fails with ErrLocked.
func TestLockWait(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	o := opts()
	o.LockWait = 200 * time.Millisecond
	s := open(t, u, o)
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, strings.Split(u, "&schema=")[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	schema := u[strings.LastIndex(u, "=")+1:]
	other, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, "UPDATE "+schema+".kv SET value = 'x' WHERE key = 'k'"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", []byte("2")) })
	if !errors.Is(err, kv.ErrLocked) || time.Since(start) > 5*time.Second {
		t.Fatalf("Update against a held row: %v after %v, want ErrLocked after about 200ms", err, time.Since(start))
	}
}

func TestInfo(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	s := open(t, u, opts())
	if err := s.Update(func(tx kv.Tx) error {
		for _, k := range []string{"a", "b", "c"} {
			if err := tx.Put("one", k, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	in, err := s.Info()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"meta": 1, "one": 3, "two": 0}
	if in.Backend != "postgresql" || in.Location != s.Location() || in.Schema != s.Schema() || in.LayoutVersion != pg.LayoutVersion || fmt.Sprint(in.Keys) != fmt.Sprint(want) {
		t.Errorf("Info = %+v, want keys %v", in, want)
	}
}

func TestUnknownBucketPanics(t *testing.T) {
	s := open(t, newURL(t, pgtest.Shared(t)), opts())
	defer func() {
		if recover() == nil {
			t.Error("a Put into an unknown bucket did not panic")
		}
		// The connection went back to the pool, rolled back.
		if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "k", nil) }); err != nil {
			t.Error(err)
		}
	}()
	_ = s.Update(func(tx kv.Tx) error { return tx.Put("nope", "k", nil) })
}

// TestMergedViewMatchesAModel writes random keys, commits some, and checks
// every read of a transaction with pending writes against a map: keys
// across chunk boundaries, deletions of stored keys, prefixes ending in
// 0xff, Get inside ForEach on the same connection.
func TestMergedViewMatchesAModel(t *testing.T) {
	s := open(t, newURL(t, pgtest.Shared(t)), opts())
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "\x00", "\xff", "ab"}
	key := func() string {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	model := map[string]string{}
	for round := range 6 {
		next := maps(model)
		err := s.Update(func(tx kv.Tx) error {
			next = maps(model)
			for i := range 300 {
				k := key()
				if r.IntN(3) == 0 {
					delete(next, k)
					if err := tx.Delete("one", k); err != nil {
						return err
					}
				} else {
					v := fmt.Sprint(round, i)
					next[k] = v
					if err := tx.Put("one", k, []byte(v)); err != nil {
						return err
					}
				}
				if i%50 == 0 {
					check(t, tx, next, []string{"", "a", "ab", "\xff", "\xff\xff", "b\x00"})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		model = next
		_ = s.View(func(tx kv.Tx) error {
			check(t, tx, model, []string{"", "a", "\xff"})
			return nil
		})
	}
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func check(t *testing.T, tx kv.Tx, model map[string]string, prefixes []string) {
	t.Helper()
	for _, p := range prefixes {
		var ks, want []string
		for k := range model {
			if strings.HasPrefix(k, p) {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		for _, k := range ks {
			want = append(want, k+"="+model[k])
		}
		var got []string
		if err := tx.ForEach("one", p, func(k string, v []byte) error {
			got = append(got, k+"="+string(v))
			if g, err := tx.Get("one", k); err != nil || string(g) != string(v) {
				t.Errorf("Get(%q) inside ForEach = %q %v, want %q", k, g, err, v)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ForEach(%q): %d keys, want %d\n got %q\nwant %q", p, len(got), len(want), got, want)
		}
		k, v, err := tx.Last("one", p)
		if len(want) == 0 {
			if !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("Last(%q) = %q %v, want ErrNotFound", p, k, err)
			}
		} else if k+"="+string(v) != want[len(want)-1] || err != nil {
			t.Fatalf("Last(%q) = %q=%q %v, want %q", p, k, v, err, want[len(want)-1])
		}
	}
}

func TestLocks(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	a, b := open(t, u, opts()), open(t, u, opts())
	unlock, ok, err := a.TryLock("res")
	if err != nil || !ok {
		t.Fatalf("TryLock on a free lock: %v %v", ok, err)
	}
	if _, ok, _ := b.TryLock("res"); ok {
		t.Fatal("another store took a held lock")
	}
	if _, ok, _ := a.TryLock("res"); ok {
		t.Fatal("the same store took its own held lock twice")
	}
	if u2, ok, _ := b.TryLock("other"); !ok {
		t.Fatal("a lock of another name is not free")
	} else {
		_ = u2()
	}
	// Another schema is another namespace of locks.
	c := open(t, u+"x", opts())
	if u3, ok, _ := c.TryLock("res"); !ok {
		t.Fatal("a lock of another schema's store is taken")
	} else {
		_ = u3()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(ctx, "res"); !errors.Is(err, kv.ErrLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock past its deadline: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		unlockB, err := b.Lock(context.Background(), "res")
		if err == nil {
			err = unlockB()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatalf("a second unlock: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock did not get the lock after its holder let go")
	}
	// Close lets go of every lock.
	if _, ok, _ := a.TryLock("held"); !ok {
		t.Fatal("TryLock")
	}
	_ = a.Close()
	if _, ok, _ := b.TryLock("held"); !ok {
		t.Fatal("a closed store's lock is still held")
	}
}

// TestLockDiesWithItsProcess takes a lock in a child process, kills it with
// SIGKILL, and expects the lock free.
func TestLockDiesWithItsProcess(t *testing.T) {
	if u := os.Getenv("PG_LOCK_CHILD"); u != "" {
		s, err := pg.Open(u, opts())
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if _, ok, err := s.TryLock("res"); !ok || err != nil {
			fmt.Println("error", ok, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	u := newURL(t, pgtest.Shared(t))
	s := open(t, u, opts())
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "PG_LOCK_CHILD="+u)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	if _, ok, _ := s.TryLock("res"); ok {
		t.Fatal("took a lock the child holds")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Lock(ctx, "res"); err != nil {
		t.Fatalf("the lock of a killed process: %v", err)
	}
}

// TestLockSessionAndLockHeld: a lock session opened from the URL alone
// shares its locks with the stores of that schema, and a transaction sees
// whether a lock is held by anyone.
func TestLockSessionAndLockHeld(t *testing.T) {
	u := newURL(t, pgtest.Shared(t))
	s := open(t, u, opts())
	l, err := pg.OpenLocks(u, opts(), pg.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := func() bool {
		t.Helper()
		var h bool
		if err := s.View(func(tx kv.Tx) error {
			var err error
			h, err = tx.(interface{ LockHeld(string) (bool, error) }).LockHeld("plan/1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if held() {
		t.Fatal("LockHeld of a free lock")
	}
	unlock, ok, err := l.TryLock("plan/1")
	if err != nil || !ok {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	if !held() {
		t.Fatal("LockHeld does not see a held lock")
	}
	if _, ok, _ := s.TryLock("plan/1"); ok {
		t.Fatal("a store took a lock its lock session holds")
	}
	_ = unlock()
	if held() {
		t.Fatal("LockHeld after unlock")
	}
	if _, err := pg.OpenLocks("postgres://alice:s3cret@/x?host="+t.TempDir(), opts(), pg.LeaseOptions{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("OpenLocks of no server: %v", err)
	}
}
