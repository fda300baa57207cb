package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/nodes"
	sshx "github.com/solarops/solar/orch/handler/ssh"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// BenchmarkDrift measures solar drift (issue 33's targets). "noop-check"
// is 1,000 committed resources of a noop-handler base that lists check,
// the cheapest check there is: drift's own overhead (selection, pinning to
// committed values, the walk, the kept run), under 2 s. "files" is 100
// committed file resources over 4 SSH nodes (real sshd on loopback)
// against orch check of a plan of the same resources' updates, within
// 1.5x; reported as drift-ms, check-ms and x-check.
func BenchmarkDrift(b *testing.B) {
	b.Run("noop-check/n=1000", func(b *testing.B) {
		dir := noopCheckBase(b)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path, uid := benchStore(b, "independent", 1000, dir, nil)
			runBench(b, path, uid, 1000)
			b.StartTimer()
			run := benchDrift(b, path, Runner{})
			if got := run.Count(DriftInSync); got != 1000 {
				b.Fatalf("%d in sync; want 1000", got)
			}
		}
	})
	b.Run("files/n=100/nodes=4", func(b *testing.B) {
		servers := make([]*sshdtest.Server, 4)
		for i := range servers {
			servers[i] = sshdtest.Start(b, sshdtest.Options{IP: "127.0.0.1" + strconv.Itoa(i+1)})
		}
		var drift, check time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path, uid := driftFileStore(b, servers, 100)
			b.StartTimer()
			start := time.Now()
			run := benchDrift(b, path, Runner{})
			drift += time.Since(start)
			if got := run.Count(DriftInSync); got != 100 {
				b.Fatalf("%d in sync; want 100: %+v", got, run.Results)
			}
			start = time.Now()
			r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 16, PerNode: 4, Now: time.Now}
			if _, preds, err := r.Check(context.Background(), nil); err != nil || len(preds) != 100 {
				b.Fatalf("check: %d predictions, %v", len(preds), err)
			}
			check += time.Since(start)
		}
		per := float64(b.N)
		b.ReportMetric(float64(drift.Milliseconds())/per, "drift-ms")
		b.ReportMetric(float64(check.Milliseconds())/per, "check-ms")
		b.ReportMetric(float64(drift)/float64(check), "x-check")
	})
}

// benchDrift runs drift over everything in the store at path with the
// limits the files case gives orch check.
func benchDrift(b *testing.B, path string, r Runner) *DriftRun {
	b.Helper()
	r.Now = time.Now
	run, err := Drift(context.Background(), store.NewHandle(path), DriftOptions{Concurrency: 16, PerNode: 4, Settings: r})
	if err != nil {
		b.Fatal(err)
	}
	return run
}

// noopCheckBase writes a noop-handler base that lists check for run and
// update: the noop handler answers a check at once, in sync.
func noopCheckBase(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "noopcheck")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	meta := "handler: noop\nactions:\n  run: run.sh\n  update: update.sh\ncheck: [run, update]\ninputs:\n  value: {schema: str, value: \"\"}\n"
	for name, text := range map[string]string{"meta.yaml": meta, "run.sh": "exit 0\n", "update.sh": "exit 0\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// driftFileStore makes a store with one SSH node per server and n
// resources of the bundled file base spread over them, created and run
// (so committed), then an update staged for each and processed: it
// returns the store and the uid of that plan, for orch check.
func driftFileStore(b *testing.B, servers []*sshdtest.Server, n int) (string, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "solar.db")
	out := filepath.Join(b.TempDir(), "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		b.Fatal(err)
	}
	sshdtest.Reachable(b, filepath.Dir(out))
	if err := os.Chmod(out, 0o777); err != nil {
		b.Fatal(err)
	}
	fileBase, err := resources.LoadBase("../testdata/resources/file")
	if err != nil {
		b.Fatal(err)
	}
	nodeBase, err := resources.LoadBase("../testdata/resources/node")
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	driftUpdate(b, path, func(cat *resources.Catalog, stg *staging.Stager) error {
		for i, srv := range servers {
			name := fmt.Sprintf("n%d", i)
			vals := map[string]any{"ip": srv.IP, "ssh_port": srv.Port, "ssh_user": srv.User, "ssh_key": srv.ClientKey, "transport": "ssh"}
			if _, err := cat.Create(resources.CreateSpec{Name: name, Base: nodeBase, Values: resources.Values{Raw: vals}}, false); err != nil {
				return err
			}
			t := nodes.Trusted{Key: sshx.KeyText(srv.HostKey), Fingerprint: srv.Fingerprint(), Address: srv.Addr(), At: time.Now()}
			if err := nodes.Trust(cat.Tx(), name, t); err != nil {
				return err
			}
			names = append(names, name)
		}
		for i := 0; i < n; i++ {
			name := "f" + strconv.Itoa(i)
			vals := map[string]any{"dir": out, "path": name + ".conf", "content": "line " + name + "\n", "location": fmt.Sprintf("n%d", i%len(servers))}
			if _, err := cat.Create(resources.CreateSpec{Name: name, Base: fileBase, Values: resources.Values{Raw: vals}}, false); err != nil {
				return err
			}
			names = append(names, name)
		}
		_, err := stg.Touch("create", names...)
		return err
	})
	driftRunAll(b, path)
	driftUpdate(b, path, func(_ *resources.Catalog, stg *staging.Stager) error {
		for _, name := range names[len(servers):] {
			if _, err := stg.StageAction(name, "update"); err != nil {
				return err
			}
		}
		return nil
	})
	return path, driftProcess(b, path)
}

func driftUpdate(b *testing.B, path string, fn func(cat *resources.Catalog, stg *staging.Stager) error) {
	b.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		return fn(cat, staging.New(cat, time.Now))
	}); err != nil {
		b.Fatal(err)
	}
}

// driftProcess plans everything staged and returns the plan's uid.
func driftProcess(b *testing.B, path string) string {
	b.Helper()
	var uid string
	driftUpdate(b, path, func(cat *resources.Catalog, _ *staging.Stager) error {
		res, err := Process(cat.Tx(), nil, nil, true, time.Now(), "")
		if err == nil {
			uid = res.Record.UID
		}
		return err
	})
	return uid
}

// driftRunAll plans and runs everything staged, which commits it.
func driftRunAll(b *testing.B, path string) {
	b.Helper()
	r := &Runner{Store: store.NewHandle(path), UID: driftProcess(b, path), Concurrency: 16, PerNode: 4, Now: time.Now}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for id, st := range states {
		if st.Status != StatusSuccess && st.Status != StatusNoop {
			b.Fatalf("%s ended %s: %s", id, st.Status, st.Err)
		}
	}
}
