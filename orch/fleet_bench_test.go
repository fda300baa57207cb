package orch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// BenchmarkFleet measures the fleet's speed targets (issue 31) on a local
// PostgreSQL (internal/pgtest: Unix socket, fsync on), with runners as
// FleetRunners in this process, each with its own store handle (its own
// connections), as separate processes would have:
//
//   - claim-to-start: from the commit that made a task ready to its
//     script's start, p50 under 5 ms and p99 at most fleetPoll;
//   - xact/task: PostgreSQL transactions (pg_stat_database xact_commit and
//     xact_rollback) per task over a whole run, at most two on the claim
//     and complete path plus a share of the rest;
//   - sleep: 36 one-second tasks on three runners of concurrency 4 at
//     least 2.2x faster than on one;
//   - chain: a 1,000-task shell chain submitted to three runners within
//     1.5x of one runner, and run by classic run-once on PostgreSQL within
//     1.3x of bbolt;
//   - noop: one runner completes 1,000 noop tasks a second.
//
// make bench-fleet runs it once (-benchtime=1x): an iteration is a whole
// plan on a fresh database.
func BenchmarkFleet(b *testing.B) {
	srv, err := pgtest.StartServer()
	if err != nil {
		pgtest.SkipOrFail(b, err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	e := &fleetEnv{srv: srv}
	b.Run("claim-to-start/submit/runners=3x4/n=12", func(b *testing.B) { benchClaimSubmit(b, e) })
	b.Run("claim-to-start/chain/runners=3x4/n=300", func(b *testing.B) { benchClaimChain(b, e) })
	b.Run("sleep1/n=36/runners=3x4-vs-1x4", func(b *testing.B) { benchSleep(b, e) })
	b.Run("chain/minimal/n=1000/runners=3-vs-1", func(b *testing.B) { benchFleetChain(b, e) })
	b.Run("chain/minimal/n=1000/run-once/postgres-vs-bbolt", func(b *testing.B) { benchClassicChain(b, e) })
	for _, c := range []int{4, 32} {
		b.Run(fmt.Sprintf("noop/independent/n=2000/runners=1x%d", c), func(b *testing.B) { benchFleetNoop(b, e, c) })
	}
}

// fleetEnv is the benchmark's server; every plan gets a database of its
// own (the resources of the generated plans are named alike).
type fleetEnv struct {
	srv *pgtest.Server
	dbs int
}

func (e *fleetEnv) database(b *testing.B) string {
	b.Helper()
	e.dbs++
	u, err := e.srv.NewDatabase(fmt.Sprintf("fleet%d", e.dbs))
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// fleetBase is the base of the benchmarks that time a script's start.
func fleetBase(b *testing.B) string {
	b.Helper()
	dir, err := filepath.Abs("testdata/fleetbench")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// fleetClock records when tasks ended (Progress: after the commit that
// recorded them) and when their scripts started (a line on the FIFO).
type fleetClock struct {
	mu     sync.Mutex
	ends   []time.Time // in order
	starts map[string]time.Time
	claims map[string]time.Time // when the claim returned (Claimed)
	ended  int
	want   int
	all    chan struct{} // closed when want tasks ended
	fifo   *os.File
	read   chan struct{} // closed when the FIFO's reader ended
}

// newFleetClock makes a clock that waits for want ends; with withFIFO it
// makes a FIFO (its path is fifoPath) and reads it until close.
func newFleetClock(b *testing.B, want int, withFIFO bool) *fleetClock {
	b.Helper()
	c := &fleetClock{starts: map[string]time.Time{}, claims: map[string]time.Time{}, want: want, all: make(chan struct{}), read: make(chan struct{})}
	if !withFIFO {
		close(c.read)
		return c
	}
	path := filepath.Join(b.TempDir(), "starts")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		b.Fatal(err)
	}
	// Open for reading and writing: scripts' writes never block on a
	// missing reader and the reader never sees an end between them.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	c.fifo = f
	go func() {
		defer close(c.read)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			at := time.Now()
			c.mu.Lock()
			c.starts[sc.Text()] = at
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *fleetClock) fifoPath() string { return c.fifo.Name() }

// progress is the runners' Progress: it is called once a task's end is
// committed.
func (c *fleetClock) progress(string, State) {
	at := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ends = append(c.ends, at)
	c.ended++
	if c.ended == c.want {
		close(c.all)
	}
}

// claimed is the runners' Claimed: it is called once a claim committed.
func (c *fleetClock) claimed(cl kv.Claim) {
	at := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims[cl.Task] = at
}

// wait waits for every task to end, at most limit.
func (c *fleetClock) wait(b *testing.B, limit time.Duration) {
	b.Helper()
	select {
	case <-c.all:
	case <-time.After(limit):
		c.mu.Lock()
		defer c.mu.Unlock()
		b.Fatalf("%d of %d tasks ended in %v", c.ended, c.want, limit)
	}
}

// close ends the FIFO's reader.
func (c *fleetClock) close() {
	if c.fifo != nil {
		_ = c.fifo.Close()
	}
	<-c.read
}

// fleetRunners are k in-process runners of concurrency conc, each with
// its own store handle; start returns once they are registered (idle).
type fleetRunners struct {
	drain chan struct{}
	errs  chan error
	k     int
}

func startRunners(b *testing.B, url string, k, conc int, clk *fleetClock) *fleetRunners {
	b.Helper()
	rs := &fleetRunners{drain: make(chan struct{}), errs: make(chan error, k), k: k}
	for i := range k {
		f := &FleetRunner{Store: store.NewHandle(url), Name: fmt.Sprintf("bench%d", i), Concurrency: conc,
			Claimed: clk.claimed, Settings: Runner{Progress: clk.progress, Note: func(s string) { b.Logf("runner bench%d: %s", i, s) }}}
		go func() { rs.errs <- f.Run(context.Background(), rs.drain) }()
	}
	db := openStore(b, url)
	defer db.Close()
	fleet, _ := db.Fleet()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		list, err := fleet.Runners(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(list) == k {
			return rs
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d runners registered", len(list), k)
		}
	}
}

// stop drains the runners and waits for them: their connections are
// closed when it returns.
func (rs *fleetRunners) stop(b *testing.B) {
	b.Helper()
	close(rs.drain)
	for range rs.k {
		if err := <-rs.errs; err != nil {
			b.Error(err)
		}
	}
}

func openStore(b *testing.B, url string) *store.DB {
	b.Helper()
	db, err := store.Open(url, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// submit hands plan uid to the fleet with the plan's concurrency conc
// and returns when its transaction committed.
func submit(b *testing.B, url, uid string, conc int) time.Time {
	b.Helper()
	db := openStore(b, url)
	defer db.Close()
	if _, _, err := Submit(db, uid, SubmitOptions{Concurrency: conc, PerNode: 1, By: "bench"}); err != nil {
		b.Fatal(err)
	}
	return time.Now()
}

// pgCounts are what a benchmark counts on its server: transactions
// (committed or rolled back) in one database, and syncs of the WAL to
// disk in the whole server (a benchmark is alone on it).
type pgCounts struct{ xact, syncs int64 }

// countPG reads the counts of the database at url. Backends send their
// counts when they end (or after up to 10 s idle): read it once the
// runners' connections are closed. The read itself is one transaction,
// counted in the next read.
func countPG(b *testing.B, url string) pgCounts {
	b.Helper()
	ctx := context.Background()
	time.Sleep(200 * time.Millisecond) // closed backends report on exit
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var c pgCounts
	err = conn.QueryRow(ctx, `SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()),
		(SELECT wal_sync FROM pg_stat_wal)`).Scan(&c.xact, &c.syncs)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// pgCost is pgCounts per task.
type pgCost struct{ xact, syncs float64 }

// costSince is the cost per task of n tasks from before to the counts
// now (the read of before taken off).
func costSince(b *testing.B, url string, before pgCounts, n int) pgCost {
	after := countPG(b, url)
	return pgCost{xact: float64(after.xact-before.xact-1) / float64(n), syncs: float64(after.syncs-before.syncs) / float64(n)}
}

func (c *pgCost) add(d pgCost) { c.xact += d.xact; c.syncs += d.syncs }

// report reports the mean cost of b.N runs, named with prefix.
func (c pgCost) report(b *testing.B, prefix string) {
	b.ReportMetric(c.xact/float64(b.N), prefix+"xact/task")
	b.ReportMetric(c.syncs/float64(b.N), prefix+"walsync/task")
}

// fleetResult is one plan of n tasks run by k runners of concurrency
// conc: the wall time from its submission to its last task's commit, and
// the cost per task over the runners' lives (their registration,
// heartbeats and the submission included).
type fleetResult struct {
	wall  time.Duration
	cost  pgCost
	clk   *fleetClock
	ready time.Time // when the submission committed
}

func runFleetPlan(b *testing.B, url, uid string, n, k, conc int, clk *fleetClock) fleetResult {
	b.Helper()
	before := countPG(b, url)
	rs := startRunners(b, url, k, conc, clk)
	b.StartTimer()
	ready := submit(b, url, uid, max(10, k*conc))
	clk.wait(b, 10*time.Minute)
	wall := time.Since(ready)
	b.StopTimer()
	rs.stop(b)
	clk.close()
	return fleetResult{wall: wall, cost: costSince(b, url, before, n), clk: clk, ready: ready}
}

// benchClaimSubmit: a plan of independent tasks, as many as the idle
// runners' slots, submitted: each script's start from the submission's
// commit. A runner's first task of a plan also loads the plan.
func benchClaimSubmit(b *testing.B, e *fleetEnv) {
	const n, k, conc = 12, 3, 4
	var lat, claim []time.Duration
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		url := e.database(b)
		clk := newFleetClock(b, n, true)
		_, uid := benchStoreAt(b, url, "independent", n, fleetBase(b), map[string]any{"fifo": clk.fifoPath()})
		res := runFleetPlan(b, url, uid, n, k, conc, clk)
		for task, at := range clk.starts {
			lat = append(lat, at.Sub(res.ready))
			claim = append(claim, clk.claims[task].Sub(res.ready))
		}
		if len(clk.starts) != n {
			b.Fatalf("%d of %d scripts told their start", len(clk.starts), n)
		}
	}
	reportLatency(b, lat, "")
	reportLatency(b, claim, "claimed-")
}

// benchClaimChain: a shell chain on three idle runners: each script's
// start from the commit of its predecessor's end (in a chain one task
// runs at a time: the last end before a start is its predecessor's).
func benchClaimChain(b *testing.B, e *fleetEnv) {
	const n, k, conc = 300, 3, 4
	var lat []time.Duration
	var cost pgCost
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		url := e.database(b)
		clk := newFleetClock(b, n, true)
		_, uid := benchStoreAt(b, url, "chain", n, fleetBase(b), map[string]any{"fifo": clk.fifoPath()})
		res := runFleetPlan(b, url, uid, n, k, conc, clk)
		cost.add(res.cost)
		slices.SortFunc(clk.ends, func(a, b time.Time) int { return a.Compare(b) })
		for _, at := range clk.starts {
			j, _ := slices.BinarySearchFunc(clk.ends, at, func(e, t time.Time) int { return e.Compare(t) })
			if j > 0 {
				lat = append(lat, at.Sub(clk.ends[j-1]))
			}
		}
		if len(lat) < (i+1)*(n-1) {
			b.Fatalf("%d latencies of %d tasks after a predecessor", len(lat), (i+1)*(n-1))
		}
	}
	reportLatency(b, lat, "")
	cost.report(b, "")
}

// reportLatency reports the median, 99th percentile and maximum of lat,
// named with prefix.
func reportLatency(b *testing.B, lat []time.Duration, prefix string) {
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), prefix+"p50-ms")
	b.ReportMetric(q(0.99), prefix+"p99-ms")
	b.ReportMetric(q(1), prefix+"max-ms")
}

// benchSleep: 36 one-second tasks on one runner of concurrency 4, then
// on three.
func benchSleep(b *testing.B, e *fleetEnv) {
	const n, conc = 36, 4
	var one, three time.Duration
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for _, k := range []int{1, 3} {
			url := e.database(b)
			_, uid := benchStoreAt(b, url, "independent", n, fleetBase(b), map[string]any{"sleep": "1"})
			res := runFleetPlan(b, url, uid, n, k, conc, newFleetClock(b, n, false))
			if k == 1 {
				one += res.wall
			} else {
				three += res.wall
			}
		}
	}
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "one-ms")
	b.ReportMetric(float64(three.Milliseconds())/float64(b.N), "three-ms")
	b.ReportMetric(float64(one)/float64(three), "speedup")
}

// benchFleetChain: the minimal shell chain of 1,000 tasks submitted to one
// runner, then to three (concurrency 4 each).
func benchFleetChain(b *testing.B, e *fleetEnv) {
	const n, conc = 1000, 4
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		b.Fatal(err)
	}
	var one, three time.Duration
	var cost pgCost
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for _, k := range []int{1, 3} {
			url := e.database(b)
			_, uid := benchStoreAt(b, url, "chain", n, dir, map[string]any{"dir": b.TempDir()})
			res := runFleetPlan(b, url, uid, n, k, conc, newFleetClock(b, n, false))
			if k == 1 {
				one += res.wall
				cost.add(res.cost)
			} else {
				three += res.wall
			}
		}
	}
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "one-ms")
	b.ReportMetric(float64(three.Milliseconds())/float64(b.N), "three-ms")
	b.ReportMetric(float64(three)/float64(one), "x-one")
	cost.report(b, "")
}

// benchClassicChain: the same chain by classic run-once (never submitted)
// on PostgreSQL and on bbolt.
func benchClassicChain(b *testing.B, e *fleetEnv) {
	const n = 1000
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		b.Fatal(err)
	}
	var pg, bolt time.Duration
	var cost pgCost
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for _, sum := range []*time.Duration{&pg, &bolt} {
			loc := filepath.Join(b.TempDir(), "solar.db")
			if sum == &pg {
				loc = e.database(b)
			}
			path, uid := benchStoreAt(b, loc, "chain", n, dir, map[string]any{"dir": b.TempDir()})
			var before pgCounts
			if sum == &pg {
				before = countPG(b, loc)
			}
			b.StartTimer()
			start := time.Now()
			runBench(b, path, uid, n)
			*sum += time.Since(start)
			b.StopTimer()
			if sum == &pg {
				cost.add(costSince(b, loc, before, n))
			}
		}
	}
	b.ReportMetric(float64(pg.Milliseconds())/float64(b.N), "postgres-ms")
	b.ReportMetric(float64(bolt.Milliseconds())/float64(b.N), "bbolt-ms")
	b.ReportMetric(float64(pg)/float64(bolt), "x-bbolt")
	cost.report(b, "postgres-")
}

// benchFleetNoop: independent noop-handler tasks (no script) on one
// runner of concurrency conc: tasks completed a second.
func benchFleetNoop(b *testing.B, e *fleetEnv, conc int) {
	const n = 2000
	var wall time.Duration
	var cost pgCost
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		url := e.database(b)
		_, uid := benchStoreAt(b, url, "independent", n, "../testdata/resources/noop", nil)
		res := runFleetPlan(b, url, uid, n, 1, conc, newFleetClock(b, n, false))
		wall += res.wall
		cost.add(res.cost)
	}
	b.ReportMetric(float64(n*b.N)/wall.Seconds(), "tasks/s")
	cost.report(b, "")
}
