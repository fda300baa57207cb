package orch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// benchStore makes a store holding n resources from base (each with a
// staged run entry) and a plan of the given shape over them; it returns the
// store path and the plan uid.
func benchStore(b testing.TB, shape string, n int, baseDir string, values map[string]any) (string, string) {
	b.Helper()
	return benchStoreAt(b, filepath.Join(b.TempDir(), "solar.db"), shape, n, baseDir, values)
}

// benchStoreAt is benchStore in the store at location (a bbolt path or a
// postgres:// URL).
func benchStoreAt(b testing.TB, path, shape string, n int, baseDir string, values map[string]any) (string, string) {
	b.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	base, err := resources.LoadBase(baseDir)
	if err != nil {
		b.Fatal(err)
	}
	in := planner.GenInput(shape, n)
	var uid string
	err = db.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		st := staging.New(cat, nil)
		for _, e := range in.Entries {
			if _, err := cat.Create(resources.CreateSpec{Name: e.Resource, Base: base, Values: resources.Values{Raw: values}}, false); err != nil {
				return err
			}
			if _, err := st.Touch("create", e.Resource); err != nil {
				return err
			}
		}
		p, err := planner.Build(in)
		if err != nil {
			return err
		}
		if uid, err = NewUID(tx, time.Now()); err != nil {
			return err
		}
		pins, err := pinPlan(tx, p)
		if err != nil {
			return err
		}
		if err := Save(tx, &Record{UID: uid, Plan: p}); err != nil {
			return err
		}
		return savePins(tx, uid, pins)
	})
	if err != nil {
		b.Fatal(err)
	}
	return path, uid
}

// runBench runs the plan uid, of n tasks, with the garbage collector set
// as the CLI sets it for a plan of that size.
func runBench(b *testing.B, path, uid string, n int) map[string]State {
	b.Helper()
	defer TuneGC(n, os.Getenv)()
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 10, PerNode: 1}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for id, st := range states {
		if st.Status != StatusSuccess && st.Status != StatusNoop && st.Status != StatusSkipped {
			b.Fatalf("task %s ended %s: %s", id, st.Status, st.Err)
		}
	}
	return states
}

// BenchmarkRunOnceNoop measures the executor's own overhead (SPEC section
// 10: 10,000 noop-handler tasks under 2 s): walk, persistence and the
// commit of every staged entry, through a real store.
func BenchmarkRunOnceNoop(b *testing.B) {
	for _, shape := range planner.GenShapes {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/n=%d", shape, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					path, uid := benchStore(b, shape, n, "../testdata/resources/noop", nil)
					b.StartTimer()
					runBench(b, path, uid, n)
				}
			})
		}
	}
}

// BenchmarkShellChain compares a chain of shell tasks, each persisted and
// committed, with running the same script as many times in a plain loop
// (SPEC section 10: within 1.5x). The ratio is reported as x-loop. Two
// scripts: "minimal" appends one line (about a fork/exec), "file" is the
// bundled file base rendering a config file, a typical small action.
func BenchmarkShellChain(b *testing.B) {
	bases := []struct {
		name, dir, script string
		inputs            map[string]any
	}{
		{"minimal", "testdata/benchbase", "actions/run.sh", nil},
		{"file", "../testdata/resources/file", "actions/run.sh", map[string]any{"path": "app.conf", "content": "listen 8080\nworkers 4\n", "mode": "0644"}},
	}
	type variant struct {
		n       int
		journal bool
	}
	for _, base := range bases {
		// The last variant commits without the journal, for comparison.
		for _, v := range []variant{{100, true}, {1000, true}, {1000, false}} {
			n := v.n
			name := fmt.Sprintf("%s/n=%d", base.name, n)
			if !v.journal {
				name += "/commit=bbolt"
			}
			b.Run(name, func(b *testing.B) {
				commitJournal = v.journal
				defer func() { commitJournal = true }()
				dir, err := filepath.Abs(base.dir)
				if err != nil {
					b.Fatal(err)
				}
				var solar, loop, solarCPU, loopCPU time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					inputs := map[string]any{"dir": b.TempDir()}
					for k, v := range base.inputs {
						inputs[k] = v
					}
					path, uid := benchStore(b, "chain", n, dir, inputs)
					b.StartTimer()
					start, cpu := time.Now(), selfCPU()
					runBench(b, path, uid, n)
					solar += time.Since(start)
					solarCPU += selfCPU() - cpu
					b.StopTimer()
					cpu = selfCPU()
					loop += plainLoop(b, dir, base.script, inputs, n)
					loopCPU += selfCPU() - cpu
					b.StartTimer()
				}
				b.ReportMetric(float64(solar.Nanoseconds())/float64(b.N)/1e6, "solar-ms")
				b.ReportMetric(float64(loop.Nanoseconds())/float64(b.N)/1e6, "loop-ms")
				b.ReportMetric(float64(solar)/float64(loop), "x-loop")
				// solar's own CPU per task: what the process spent beyond
				// what the loop's process spends starting the same scripts
				// (the scripts' own CPU is in neither).
				b.ReportMetric(float64((solarCPU-loopCPU).Microseconds())/float64(b.N*n), "own-cpu-µs/task")
			})
		}
	}
}

// BenchmarkShellWide compares 1,000 independent shell tasks at
// --concurrency 10, each persisted and committed, with a 10-way parallel
// loop of the same script (SPEC section 10: within 1.3x, group commit).
func BenchmarkShellWide(b *testing.B) {
	const n, ways = 1000, 10
	dir, err := filepath.Abs("../testdata/resources/file")
	if err != nil {
		b.Fatal(err)
	}
	var solar, loop time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		inputs := map[string]any{"dir": b.TempDir(), "path": "app.conf", "content": "listen 8080\n", "mode": "0644"}
		path, uid := benchStore(b, "independent", n, dir, inputs)
		b.StartTimer()
		start := time.Now()
		runBench(b, path, uid, n)
		solar += time.Since(start)
		b.StopTimer()
		inputs["dir"] = b.TempDir()
		loop += parallelLoop(b, dir, "actions/run.sh", inputs, n, ways)
		b.StartTimer()
	}
	b.ReportMetric(float64(solar.Nanoseconds())/float64(b.N)/1e6, "solar-ms")
	b.ReportMetric(float64(loop.Nanoseconds())/float64(b.N)/1e6, "loop-ms")
	b.ReportMetric(float64(solar)/float64(loop), "x-loop")
}

// selfCPU is the CPU time (user and system) this process has used, its
// children's excluded.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parallelLoop runs the script n times, ways at a time.
func parallelLoop(b *testing.B, dir, script string, inputs map[string]any, n, ways int) time.Duration {
	start := time.Now()
	errs := make(chan error, ways)
	for w := 0; w < ways; w++ {
		go func(w int) {
			errs <- loopPart(dir, script, inputs, w, n/ways, b.TempDir())
		}(w)
	}
	for w := 0; w < ways; w++ {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// plainLoop runs the script n times one after the other, as a shell loop
// would, with the inputs in the environment as solar passes them.
func plainLoop(b *testing.B, dir, script string, inputs map[string]any, n int) time.Duration {
	start := time.Now()
	if err := loopPart(dir, script, inputs, 0, n, b.TempDir()); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// loopPart runs the script n times as resources loop<part>-<i>, so that
// each run does the work a solar task of its own resource does (the file
// base makes the resource's directory).
func loopPart(dir, script string, inputs map[string]any, part, n int, tmp string) error {
	env := os.Environ()
	for k, v := range inputs {
		env = append(env, fmt.Sprintf("SOLAR_INPUT_%s=%v", strings.ToUpper(k), v))
	}
	// The script gets a result file to write, as under solar, so both do
	// the same work.
	result := filepath.Join(tmp, "result.json")
	env = append(env, "SOLAR_RESULT="+result)
	for i := 0; i < n; i++ {
		_ = os.Remove(result)
		cmd := exec.Command("/bin/sh", script)
		res := fmt.Sprintf("loop%d-%d", part, i)
		cmd.Env = append(env, "SOLAR_TASK="+res+".run#0", "SOLAR_RESOURCE="+res, "SOLAR_ACTION=run")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
	}
	return nil
}

// BenchmarkProcess measures "ch process" from the store (SPEC section 10:
// 10,000 staged resources with 30,000 rules under 1 s and 300 MiB;
// 100,000 under 10 s): reading the staged log and the rules, planning,
// and writing the plan, in one transaction.
func BenchmarkProcess(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("layered/n=%d", n), func(b *testing.B) {
			benchProcess(b, processStore(b, n), n)
		})
		// Real resources, each with its staged run: every task pinned
		// to its values and base.
		b.Run(fmt.Sprintf("pinned/n=%d", n), func(b *testing.B) {
			path, uid := benchStore(b, "chain", n, "../testdata/resources/noop", nil)
			closePlan(b, path, uid)
			benchProcess(b, path, n)
		})
	}
}

// benchProcess plans the n staged entries of the store at path, b.N times.
func benchProcess(b *testing.B, path string, n int) {
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := db.Update(func(tx *store.Tx) error {
			res, err := Process(tx, nil, nil, false, time.Now(), "")
			if err == nil && len(res.Record.Plan.Nodes) < n {
				err = fmt.Errorf("plan has %d nodes, want %d", len(res.Record.Plan.Nodes), n)
			}
			if err != nil {
				return err
			}
			// Closed, so the next iteration's pending check does not
			// read it: every iteration plans the same entries.
			return SetOpen(tx, res.Record.UID, false)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// closePlan closes plan uid of the store at path, so that processing its
// entries again is not refused as pending.
func closePlan(b *testing.B, path, uid string) {
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *store.Tx) error { return SetOpen(tx, uid, false) }); err != nil {
		b.Fatal(err)
	}
}

// processStore writes n staged entries and the layered shape's rules
// straight into a store (the resources themselves are not needed to plan).
func processStore(b *testing.B, n int) string {
	b.Helper()
	return processStoreAt(b, filepath.Join(b.TempDir(), "solar.db"), n)
}

// processStoreAt is processStore in the store at path (a bbolt path or a
// postgres:// URL).
func processStoreAt(b *testing.B, path string, n int) string {
	b.Helper()
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	in := planner.GenInput("layered", n)
	err = db.Update(func(tx *store.Tx) error {
		for i, e := range in.Entries {
			raw := fmt.Sprintf(`{"key":%q,"resource":%q,"action":%q,"seq":%d,"tags":{"env":"bench"},"diff":[],"cause":"create"}`, e.Key, e.Resource, e.Action, i+1)
			if err := tx.Put(store.Staged, e.Key, []byte(raw)); err != nil {
				return err
			}
		}
		_, err := events.Add(tx, allActions{}, in.Rules...)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return path
}

// allActions is a catalog in which every resource exists with a run action.
type allActions struct{}

func (allActions) Actions(string) ([]string, bool) { return []string{"run"}, true }

// BenchmarkDecodePlan measures the decode of a stored plan record, which
// a run does before its first task starts.
func BenchmarkDecodePlan(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		p, err := planner.Build(planner.GenInput("chain", n))
		if err != nil {
			b.Fatal(err)
		}
		raw, err := json.Marshal(&Record{UID: "20260101-000000-0001", CreatedAt: time.Now(), Plan: p})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeRecord("20260101-000000-0001", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
