package bolt

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/solarops/solar/store/kv"
)

func testOptions(journal bool) Options {
	return Options{Buckets: []string{"meta", "one", "two"}, Meta: "meta", Version: 1, Journal: journal}
}

func mustOpen(t *testing.T, p string, journal bool) *Store {
	t.Helper()
	s, err := Open(p, testOptions(journal))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dump returns every key and value of bucket as k=v lines.
func dump(t *testing.T, s *Store, bucket string) []string {
	t.Helper()
	var got []string
	if err := s.View(func(tx kv.Tx) error {
		return tx.ForEach(bucket, "", func(k string, v []byte) error {
			got = append(got, k+"="+string(v))
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// startFold starts a fold behind the commits, as a checkpoint while they
// go on does, unless one runs.
func startFold(t *testing.T, s *Store) {
	t.Helper()
	j := s.jr
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.settle(false); err != nil {
		t.Fatal(err)
	}
	if j.fold != nil || j.pending.Len() == 0 {
		return
	}
	if err := s.foldBehind(); err != nil {
		t.Fatal(err)
	}
}

// TestJournalModel runs random transactions against the journal and a map,
// with checkpoints and failed transactions between them, and compares every
// read: Get, Has, ForEach and Last over random prefixes, within
// transactions and after them, and after reopening without the journal.
func TestJournalModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			p := filepath.Join(t.TempDir(), "solar.db")
			s := mustOpen(t, p, false)
			model := map[string]string{}
			// Some keys in the file itself first.
			if err := s.Update(func(tx kv.Tx) error {
				for i := range 200 {
					k := fmt.Sprintf("%c/%d", 'a'+rng.IntN(4), rng.IntN(50))
					model[k] = fmt.Sprint("file", i)
					if err := tx.Put("one", k, []byte(model[k])); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = mustOpen(t, p, true)
			var seq uint64
			var durables []func() error
			for round := range 300 {
				fail := rng.IntN(6) == 0
				next := maps.Clone(model)
				nextSeq := seq
				body := func(tx kv.Tx) error {
					for range 1 + rng.IntN(8) {
						k := fmt.Sprintf("%c/%d", 'a'+rng.IntN(4), rng.IntN(50))
						switch rng.IntN(3) {
						case 0:
							if err := tx.Delete("one", k); err != nil {
								return err
							}
							delete(next, k)
						case 1:
							n, err := tx.NextSequence("one")
							if err != nil {
								return err
							}
							if n != nextSeq+1 {
								t.Fatalf("round %d: NextSequence %d after %d", round, n, nextSeq)
							}
							nextSeq = n
						default:
							v := fmt.Sprint("r", round)
							if err := tx.Put("one", k, []byte(v)); err != nil {
								return err
							}
							next[k] = v
						}
					}
					compare(t, tx, next, rng)
					if fail {
						return errors.New("rolled back")
					}
					return nil
				}
				// A third of the transactions are late: the next ones run
				// while they sync, and some are waited for much later.
				var err error
				if rng.IntN(3) == 0 {
					var durable func() error
					if durable, err = s.UpdateLate(body); err == nil {
						durables = append(durables, durable)
					}
				} else {
					err = s.Update(body)
				}
				if len(durables) > 0 && rng.IntN(5) == 0 {
					if derr := durables[0](); derr != nil {
						t.Fatalf("round %d: durable: %v", round, derr)
					}
					durables = durables[1:]
				}
				if fail != (err != nil) {
					t.Fatalf("round %d: fail %v, err %v", round, fail, err)
				}
				if !fail {
					model, seq = next, nextSeq
				}
				switch rng.IntN(40) {
				case 0:
					if err := s.checkpoint(); err != nil {
						t.Fatal(err)
					}
				case 1, 2, 3, 4, 5:
					// A fold behind the commits, which run on while it
					// goes (and start another once it is done).
					startFold(t, s)
				}
				_ = s.View(func(tx kv.Tx) error { compare(t, tx, model, rng); return nil })
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, durable := range durables {
				if err := durable(); err != nil {
					t.Fatalf("durable after Close: %v", err)
				}
			}
			for _, jp := range []string{journalPath(p), oldJournalPath(p)} {
				if _, err := os.Stat(jp); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("journal %s left after a clean close: %v", jp, err)
				}
			}
			s = mustOpen(t, p, false)
			defer s.Close()
			_ = s.View(func(tx kv.Tx) error { compare(t, tx, model, rng); return nil })
			if err := s.Update(func(tx kv.Tx) error {
				n, err := tx.NextSequence("one")
				if err == nil && n != seq+1 {
					t.Errorf("sequence after reopening: %d, want %d", n, seq+1)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func compare(t *testing.T, tx kv.Tx, model map[string]string, rng *rand.Rand) {
	t.Helper()
	prefix := []string{"", "a/", "b/1", "c", "d/4", "e"}[rng.IntN(6)]
	var want []string
	for _, k := range slices.Sorted(maps.Keys(model)) {
		if strings.HasPrefix(k, prefix) {
			want = append(want, k+"="+model[k])
		}
	}
	var got []string
	if err := tx.ForEach("one", prefix, func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ForEach(%q):\n got %q\nwant %q", prefix, got, want)
	}
	k, v, err := tx.Last("one", prefix)
	switch {
	case len(want) == 0 && !errors.Is(err, kv.ErrNotFound):
		t.Fatalf("Last(%q) = %q %v, want ErrNotFound", prefix, k, err)
	case len(want) > 0 && (err != nil || k+"="+string(v) != want[len(want)-1]):
		t.Fatalf("Last(%q) = %q=%q %v, want %q", prefix, k, v, err, want[len(want)-1])
	}
	probe := fmt.Sprintf("%c/%d", 'a'+rng.IntN(4), rng.IntN(50))
	gv, gerr := tx.Get("one", probe)
	mv, ok := model[probe]
	if ok != (gerr == nil) || string(gv) != mv || tx.Has("one", probe) != ok {
		t.Fatalf("Get(%q) = %q %v, model %q %v", probe, gv, gerr, mv, ok)
	}
}

// The child of TestJournalSurvivesKill: commits numbered keys through the
// journal, reporting each on stdout once Update returned, until killed.
func TestMain(m *testing.M) {
	if p := os.Getenv("SOLAR_JOURNAL_CHILD"); p != "" {
		s, err := Open(p, testOptions(true))
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		for i := 0; ; i++ {
			// Every other commit is late, reported once it is durable.
			update := s.Update
			if i%2 == 1 {
				update = func(fn func(kv.Tx) error) error {
					durable, err := s.UpdateLate(fn)
					if err != nil {
						return err
					}
					return durable()
				}
			}
			if err := update(func(tx kv.Tx) error {
				if _, err := tx.NextSequence("two"); err != nil {
					return err
				}
				// Filler, so that a few hundred commits pass a checkpoint.
				for j := range 20 {
					if err := tx.Put("two", fmt.Sprintf("f%06d-%02d", i, j), []byte("f")); err != nil {
						return err
					}
				}
				return tx.Put("one", fmt.Sprintf("k%06d", i), []byte(strings.Repeat("v", i%300)))
			}); err != nil {
				fmt.Println("update:", err)
				os.Exit(1)
			}
			fmt.Println(i)
		}
	}
	os.Exit(m.Run())
}

// TestJournalSurvivesKill kills a process committing through the journal
// at random moments; every commit it reported is in the store afterwards,
// in order, with nothing after a gap, and the journal is folded in.
func TestJournalSurvivesKill(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	mustOpen(t, p, false).Close()
	rng := rand.New(rand.NewPCG(1, 2))
	reported := -1
	for round := range 12 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SOLAR_JOURNAL_CHILD="+p)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it commit for a while (past a checkpoint in some rounds).
		want := 20 + rng.IntN(500)
		buf := make([]byte, 0, 1<<16)
		chunk := make([]byte, 4096)
		last := -1
		for last < reported+want {
			n, err := out.Read(chunk)
			buf = append(buf, chunk[:n]...)
			lines := strings.Split(string(buf), "\n")
			if l := lines[len(lines)-2:]; len(lines) >= 2 {
				if v, err := strconv.Atoi(l[0]); err == nil {
					last = v
				}
			}
			if err != nil {
				t.Fatalf("round %d: child stopped: %v: %s", round, err, buf)
			}
			if len(buf) > 1<<15 {
				buf = buf[len(buf)-64:]
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		s := mustOpen(t, p, false)
		keys := dump(t, s, "one")
		// The child numbers from 0 every round, overwriting; what matters
		// is that everything it reported is there.
		if len(keys) <= last {
			t.Fatalf("round %d: the child reported key %d, the store has %d keys", round, last, len(keys))
		}
		for i, kv := range keys {
			if !strings.HasPrefix(kv, fmt.Sprintf("k%06d=", i)) {
				t.Fatalf("round %d: key %d is %q: a gap", round, i, kv)
			}
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if st, err := os.Stat(journalPath(p)); err == nil && st.Size() > 0 {
			t.Fatalf("round %d: the journal still holds %d bytes after a fold", round, st.Size())
		}
		if _, err := os.Stat(oldJournalPath(p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: an old journal is left after a fold: %v", round, err)
		}
		reported = max(reported, last)
	}
}

// A journal cut anywhere inside its last record, or with a byte changed,
// gives back exactly the records before the damage.
func TestJournalTornTail(t *testing.T) {
	dir := t.TempDir()
	var records [][]byte
	for i := range 3 {
		w := &overlay{}
		w.Set("one", fmt.Sprint("k", i), []byte(strings.Repeat("x", 10+i)), false)
		w.SetSeq("two", uint64(i+1))
		records = append(records, encode(nil, w))
	}
	whole := slices.Concat(records...)
	check := func(name string, journal []byte, want []string, seq uint64) {
		t.Helper()
		p := filepath.Join(dir, name+".db")
		mustOpen(t, p, false).Close()
		if err := os.WriteFile(journalPath(p), journal, 0o600); err != nil {
			t.Fatal(err)
		}
		s := mustOpen(t, p, false)
		defer s.Close()
		if got := dump(t, s, "one"); !slices.Equal(got, want) {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
		_ = s.db.View(func(btx *bbolt.Tx) error {
			if n := btx.Bucket([]byte("two")).Sequence(); n != seq {
				t.Errorf("%s: sequence %d, want %d", name, n, seq)
			}
			return nil
		})
		if _, err := os.Stat(journalPath(p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: journal not removed after folding: %v", name, err)
		}
	}
	two := []string{"k0=xxxxxxxxxx", "k1=xxxxxxxxxxx"}
	check("whole", whole, append(two, "k2=xxxxxxxxxxxx"), 3)
	// A journal a live writer left grown ahead of its records: zeros.
	check("zeros", slices.Concat(whole, make([]byte, 5000)), append(two, "k2=xxxxxxxxxxxx"), 3)
	check("cut-zeros", slices.Concat(whole[:len(whole)-3], make([]byte, 100)), two, 2)
	start := len(records[0]) + len(records[1])
	for cut := start; cut < len(whole); cut++ {
		check(fmt.Sprint("cut", cut), whole[:cut], two, 2)
	}
	for _, at := range []int{start, start + 5, start + 11, len(whole) - 1} {
		bad := slices.Clone(whole)
		bad[at] ^= 0x40
		check(fmt.Sprint("flip", at), bad, two, 2)
	}
	// Damage in the middle record drops it and everything after.
	bad := slices.Clone(whole)
	bad[len(records[0])+14] ^= 1
	check("middle", bad, two[:1], 1)
}

// A read-only open finding a dead writer's journal folds it in first (so
// report sees the run's last states) and then reads.
func TestReadOnlyOpenFoldsJournal(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	mustOpen(t, p, false).Close()
	w := &overlay{}
	w.Set("one", "from-journal", []byte("yes"), false)
	if err := os.WriteFile(journalPath(p), encode(nil, w), 0o600); err != nil {
		t.Fatal(err)
	}
	o := testOptions(false)
	o.ReadOnly = true
	s, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := dump(t, s, "one"); !slices.Equal(got, []string{"from-journal=yes"}) {
		t.Fatalf("read-only open read %q", got)
	}
}

// Pending writes are folded in once they pass the threshold, so the
// journal and the memory it holds stay bounded however long a run is.
func TestJournalCheckpoints(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	s := mustOpen(t, p, true)
	defer s.Close()
	emptied := 0
	for i := range 3 * checkpointEntries {
		before := s.jr.end
		if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", fmt.Sprint("k", i), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		if s.jr.end < before {
			emptied++
		}
		if s.jr.pending.Len() >= checkpointEntries {
			t.Fatalf("after %d commits %d writes are pending", i+1, s.jr.pending.Len())
		}
	}
	if emptied < 2 {
		t.Fatalf("the journal was emptied %d times in %d commits", emptied, 3*checkpointEntries)
	}
	st, err := os.Stat(journalPath(p))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != s.jr.alloc || s.jr.end > s.jr.alloc {
		t.Fatalf("journal is %d bytes, %d of records, %d expected", st.Size(), s.jr.end, s.jr.alloc)
	}
	if got := len(dump(t, s, "one")); got != 3*checkpointEntries {
		t.Fatalf("%d keys, want %d", got, 3*checkpointEntries)
	}
}

// The journal grows by whole chunks of zeros ahead of its records, so that
// a record's sync writes over blocks the file already has; what a live
// writer's journal holds replays whole.
func TestJournalGrowsAhead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	s := mustOpen(t, p, true)
	defer s.Close()
	big := strings.Repeat("v", 300<<10)
	for i := range 5 {
		if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", fmt.Sprint("k", i), []byte(big)) }); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(journalPath(p))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data))%journalChunk != 0 || int64(len(data)) < s.jr.end {
			t.Fatalf("after %d commits the journal is %d bytes, records %d: not whole chunks ahead", i+1, len(data), s.jr.end)
		}
		if slices.ContainsFunc(data[s.jr.end:], func(b byte) bool { return b != 0 }) {
			t.Fatalf("after %d commits the journal's bytes past its records are not zeros", i+1)
		}
		// What a crash now would leave replays every commit.
		var o overlay
		if n := replay(data, &o); n != i+1 {
			t.Fatalf("after %d commits the journal replays %d records", i+1, n)
		}
	}
}

// TestOldJournalReplayedFirst checks the open after a process died while
// a fold ran behind its commits: the old journal's records, then the
// journal's, newer, win; both files are then gone or empty; a read-only
// open does the same.
func TestOldJournalReplayedFirst(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		p := filepath.Join(t.TempDir(), "solar.db")
		mustOpen(t, p, false).Close()
		old := &overlay{}
		old.Set("one", "a", []byte("old"), false)
		old.Set("one", "b", []byte("old"), false)
		old.Set("one", "c", []byte("old"), false)
		newer := &overlay{}
		newer.Set("one", "a", []byte("new"), false)
		newer.Set("one", "c", nil, true)
		if err := os.WriteFile(oldJournalPath(p), encode(nil, old), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(journalPath(p), encode(nil, newer), 0o600); err != nil {
			t.Fatal(err)
		}
		o := testOptions(false)
		o.ReadOnly = readOnly
		s, err := Open(p, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := dump(t, s, "one"); !slices.Equal(got, []string{"a=new", "b=old"}) {
			t.Fatalf("read-only %v: the store holds %q, want a=new b=old", readOnly, got)
		}
		s.Close()
		if _, err := os.Stat(oldJournalPath(p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("read-only %v: the old journal is left: %v", readOnly, err)
		}
		if st, err := os.Stat(journalPath(p)); err == nil && st.Size() > 0 {
			t.Fatalf("read-only %v: the journal still holds %d bytes", readOnly, st.Size())
		}
	}
}

// TestFoldBehind checks a fold behind the commits: commits go on into a
// new journal while it runs, every read sees the folded writes, it ends
// with the old journal removed, and the next checkpoint waits for it.
func TestFoldBehind(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	s := mustOpen(t, p, true)
	put := func(k, v string) {
		t.Helper()
		if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", k, []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range checkpointEntries {
		put(fmt.Sprintf("k%05d", i), "first")
	}
	s.jr.mu.Lock()
	b := s.jr.fold
	s.jr.mu.Unlock()
	if b == nil {
		t.Fatal("no fold started behind the commits at the checkpoint threshold")
	}
	put("k00000", "second") // into the new journal, fold or not
	<-b.done
	if b.err != nil {
		t.Fatal(b.err)
	}
	if _, err := os.Stat(oldJournalPath(p)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old journal is left after its fold: %v", err)
	}
	got := dump(t, s, "one")
	if len(got) != checkpointEntries || got[0] != "k00000=second" || got[1] != "k00001=first" {
		t.Fatalf("after the fold the store reads %d keys, first %q", len(got), got[:2])
	}
	// The fold's writes are in the file: a read of the file alone finds them.
	if err := s.db.View(func(btx *bbolt.Tx) error {
		if v := btx.Bucket([]byte("one")).Get([]byte("k00001")); string(v) != "first" {
			t.Errorf("the file holds k00001=%q after the fold", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, p, false)
	defer s.Close()
	if got := dump(t, s, "one"); len(got) != checkpointEntries || got[0] != "k00000=second" {
		t.Fatalf("reopened, the store reads %d keys, first %q", len(got), got[0])
	}
}

// holdSyncs makes every journal sync wait for a value on release and
// return it, and counts the syncs that started; the original comes back at
// the end of the test.
func holdSyncs(t *testing.T) (release chan error, started *atomic.Int32) {
	t.Helper()
	release, started = make(chan error), new(atomic.Int32)
	orig := syncData
	syncData = func(f *os.File) error {
		started.Add(1)
		if err := <-release; err != nil {
			return err
		}
		return orig(f)
	}
	t.Cleanup(func() { syncData = orig })
	return release, started
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A late transaction returns before its sync. Its durable syncs it, and
// meanwhile the next transaction runs and is seen at once; that one's
// record needs a sync of its own, and a synced transaction after a late
// one covers it.
func TestUpdateLate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	s := mustOpen(t, p, true)
	defer s.Close()
	release, started := holdSyncs(t)
	late := func(k string) func() error {
		t.Helper()
		durable, err := s.UpdateLate(func(tx kv.Tx) error { return tx.Put("one", k, []byte("v")) })
		if err != nil {
			t.Fatal(err)
		}
		return durable
	}
	first := late("a")
	if n := started.Load(); n != 0 {
		t.Fatalf("%d syncs before durable was called", n)
	}
	done := make(chan error, 1)
	go func() { done <- first() }()
	waitFor(t, "the first sync", func() bool { return started.Load() == 1 })
	second := make(chan func() error, 1)
	go func() { second <- late("b") }()
	var durable func() error
	select {
	case durable = <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("a transaction waited for the sync in flight")
	}
	if got := dump(t, s, "one"); !slices.Equal(got, []string{"a=v", "b=v"}) {
		t.Fatalf("during the sync the store reads %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("durable returned %v while its sync was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { release <- nil }()
	if err := durable(); err != nil {
		t.Fatal(err)
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d syncs for two records written apart", n)
	}
	third := late("c")
	go func() { release <- nil }()
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "d", []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := third(); err != nil {
		t.Fatal(err)
	}
	if n := started.Load(); n != 3 {
		t.Fatalf("%d syncs: the synced transaction did not cover the late one before it", n)
	}
}

// A failed late sync fails its durable, every later transaction and
// durable, and loses nothing that was durable before it.
func TestUpdateLateSyncFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "solar.db")
	s := mustOpen(t, p, true)
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("one", "safe", []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	release, _ := holdSyncs(t)
	durable, err := s.UpdateLate(func(tx kv.Tx) error { return tx.Put("one", "late", []byte("v")) })
	if err != nil {
		t.Fatal(err)
	}
	go func() { release <- syscall.EIO }()
	if err := durable(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("durable after a failed sync: %v", err)
	}
	err = s.Update(func(tx kv.Tx) error { return tx.Put("one", "after", []byte("v")) })
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("a transaction after a failed sync: %v", err)
	}
	if _, err := s.UpdateLate(func(tx kv.Tx) error { return nil }); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a late transaction after a failed sync: %v", err)
	}
	_ = s.Close()
	s = mustOpen(t, p, false)
	defer s.Close()
	got := dump(t, s, "one")
	if !slices.Contains(got, "safe=v") || slices.Contains(got, "after=v") {
		t.Fatalf("reopened after a failed sync, the store reads %q", got)
	}
}
