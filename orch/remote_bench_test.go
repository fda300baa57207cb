package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/nodes"
	sshx "github.com/solarops/solar/orch/handler/ssh"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// BenchmarkRemote compares trivial shell tasks run over SSH on loopback
// nodes with the same tasks on nodes of transport local, under the same
// limits (SPEC section 10: under 5 ms of overhead per task). "spread" is
// 1,000 independent tasks over 4 nodes at --per-node 4; "chain" is 100
// tasks one after the other on one node. Reported: remote-ms, local-ms and
// the overhead per task, over-ms/task.
func BenchmarkRemote(b *testing.B) {
	servers := make([]*sshdtest.Server, 4)
	for i := range servers {
		servers[i] = sshdtest.Start(b, sshdtest.Options{IP: "127.0.0.1" + strconv.Itoa(i+1)})
	}
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		n     int
		nodes int
		chain bool
	}{
		{"spread/n=1000/nodes=4", 1000, 4, false},
		{"chain/n=100/nodes=1", 100, 1, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var remote, local time.Duration
			for i := 0; i < b.N; i++ {
				for _, ssh := range []bool{true, false} {
					b.StopTimer()
					path, uid := remoteStore(b, servers[:tt.nodes], ssh, tt.n, tt.chain, dir)
					b.StartTimer()
					start := time.Now()
					r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 4 * tt.nodes, PerNode: 4}
					_, states, err := r.Run(context.Background(), nil)
					if err != nil {
						b.Fatal(err)
					}
					took := time.Since(start)
					for id, st := range states {
						if st.Status != StatusSuccess {
							b.Fatalf("task %s ended %s: %s", id, st.Status, st.Err)
						}
					}
					if ssh {
						remote += took
					} else {
						local += took
					}
				}
			}
			per := float64(b.N)
			b.ReportMetric(float64(remote.Milliseconds())/per, "remote-ms")
			b.ReportMetric(float64(local.Milliseconds())/per, "local-ms")
			b.ReportMetric(float64((remote-local).Microseconds())/per/float64(tt.n)/1000, "over-ms/task")
		})
	}
}

// remoteStore makes a store with one node per server (trusted, transport
// ssh, or local when ssh is false) and n benchbase resources spread over
// them, each with a staged run entry, and a plan of them: independent, or
// a chain.
func remoteStore(b *testing.B, servers []*sshdtest.Server, ssh bool, n int, chain bool, dir string) (string, string) {
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
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	base, err := resources.LoadBase(dir)
	if err != nil {
		b.Fatal(err)
	}
	nodeBase, err := resources.LoadBase("../testdata/resources/node")
	if err != nil {
		b.Fatal(err)
	}
	var uid string
	err = db.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		for i, srv := range servers {
			name := fmt.Sprintf("n%d", i)
			vals := map[string]any{"ip": srv.IP, "ssh_port": srv.Port, "ssh_user": srv.User, "ssh_key": srv.ClientKey}
			if ssh {
				vals["transport"] = "ssh"
			}
			if _, err := cat.Create(resources.CreateSpec{Name: name, Base: nodeBase, Values: resources.Values{Raw: vals}}, false); err != nil {
				return err
			}
			key := sshx.KeyText(srv.HostKey)
			if err := nodes.Trust(tx, name, nodes.Trusted{Key: key, Fingerprint: srv.Fingerprint(), Address: srv.Addr(), At: time.Now()}); err != nil {
				return err
			}
		}
		st := staging.New(cat, nil)
		in := planner.Input{}
		for i := 0; i < n; i++ {
			name := "r" + strconv.Itoa(i)
			vals := map[string]any{"dir": out, "location": fmt.Sprintf("n%d", i%len(servers))}
			if _, err := cat.Create(resources.CreateSpec{Name: name, Base: base, Values: resources.Values{Raw: vals}}, false); err != nil {
				return err
			}
			if _, err := st.Touch("create", name); err != nil {
				return err
			}
			in.Entries = append(in.Entries, planner.Entry{Key: name + ".run", Resource: name, Action: "run"})
		}
		if chain {
			for i := 0; i+1 < n; i++ {
				in.Rules = append(in.Rules, afterRule("r"+strconv.Itoa(i), "r"+strconv.Itoa(i+1)))
			}
		}
		p, err := planner.Build(in)
		if err != nil {
			return err
		}
		if uid, err = NewUID(tx, time.Now()); err != nil {
			return err
		}
		return Save(tx, &Record{UID: uid, Plan: p})
	})
	if err != nil {
		b.Fatal(err)
	}
	return path, uid
}

func afterRule(from, to string) events.Rule {
	return events.Rule{Kind: events.After, Emitter: events.Ref{Resource: from, Action: "run"}, Subscriber: events.Ref{Resource: to, Action: "run"}}
}
