package orch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/solarops/solar/internal/sshdtest"
	"github.com/solarops/solar/store"
)

// floorServers is how many sshd servers BenchmarkRemoteFloor starts, one
// per node of its widest shape. They listen on 127.0.0.100 and up, apart
// from BenchmarkRemote's.
const floorServers = 50

// BenchmarkRemoteFloor measures solar's remote execution against the SSH
// floor (issue 32): the same benchbase script run the same way by a bare
// x/crypto/ssh program, one connection per node and one session per task.
// Each iteration runs the shape once with solar and once with the floor,
// taking turns at going first, on the same sshd servers, after one untimed
// solar run has put the base in the nodes' cache. Both dial their nodes in
// the timed part. The shapes:
//
//   - nodes=10/tasks=20/per-node=1: 200 independent tasks over 10 nodes,
//     one at a time per node (--per-node 1, concurrency 10);
//   - nodes=50/tasks=10/per-node=1: 500 over 50 nodes, the same way;
//   - chain=20/nodes=1: 20 tasks one after the other on one node.
//
// Reported per iteration: solar-ms and floor-ms, their ratio, and per task
// for each: the wall time (ms/task), the processes started on the whole
// machine (procs/task, the "processes" counter of /proc/stat; the nodes
// are on loopback, so it counts sshd and everything the nodes run, and
// also what other programs of the machine start meanwhile) and the
// controller's CPU (ctl-cpu-ms/task, getrusage of this process: the sshd
// servers are not in it). A task that does not end SUCCESS, or a floor
// session that fails, fails the benchmark.
func BenchmarkRemoteFloor(b *testing.B) {
	servers := make([]*sshdtest.Server, floorServers)
	for i := range servers {
		servers[i] = sshdtest.Start(b, sshdtest.Options{IP: "127.0.0." + strconv.Itoa(100+i)})
	}
	dir, err := filepath.Abs("testdata/benchbase")
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name         string
		nodes, tasks int // tasks is per node
		chain        bool
	}{
		{"nodes=10/tasks=20/per-node=1", 10, 20, false},
		{"nodes=50/tasks=10/per-node=1", 50, 10, false},
		{"chain=20/nodes=1", 1, 20, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			srvs, n := servers[:tt.nodes], tt.nodes*tt.tasks
			solar := func() cost {
				b.StopTimer()
				path, uid := remoteStore(b, srvs, true, n, tt.chain, dir)
				b.StartTimer()
				return measure(func() { runFloorSolar(b, path, uid, tt.nodes) })
			}
			fl := newFloor(b, srvs, dir)
			solar() // the warm-up: the base goes to the nodes' cache
			var s, f cost
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					s = s.plus(solar())
					f = f.plus(fl.run(b, n))
				} else {
					f = f.plus(fl.run(b, n))
					s = s.plus(solar())
				}
			}
			s.report(b, "solar", b.N, n)
			f.report(b, "floor", b.N, n)
			b.ReportMetric(float64(s.wall)/float64(f.wall), "ratio")
		})
	}
}

// runFloorSolar runs the plan uid of the store at path as solar orch run
// does with --per-node 1 and one task at a time per node, and fails b
// unless every task succeeded.
func runFloorSolar(b *testing.B, path, uid string, nodes int) {
	r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: nodes, PerNode: 1}
	_, states, err := r.Run(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for id, st := range states {
		if st.Status != StatusSuccess {
			b.Fatalf("solar: task %s ended %s: %s", id, st.Status, st.Err)
		}
	}
}

// cost is what one timed part took: its wall time, the processes the
// machine started and the controller's CPU time.
type cost struct {
	wall, cpu time.Duration
	procs     int64
}

func (c cost) plus(d cost) cost {
	return cost{wall: c.wall + d.wall, cpu: c.cpu + d.cpu, procs: c.procs + d.procs}
}

// report reports c, the sum of iters runs of tasks tasks, as who's metrics.
func (c cost) report(b *testing.B, who string, iters, tasks int) {
	per := float64(iters)
	all := per * float64(tasks)
	b.ReportMetric(float64(c.wall.Microseconds())/per/1000, who+"-ms")
	b.ReportMetric(float64(c.wall.Microseconds())/all/1000, who+"-ms/task")
	b.ReportMetric(float64(c.procs)/all, who+"-procs/task")
	b.ReportMetric(float64(c.cpu.Microseconds())/all/1000, who+"-ctl-cpu-ms/task")
}

// measure runs fn and returns what it cost. A garbage collection first
// keeps what the previous part allocated from being collected, and
// billed, in this one.
func measure(fn func()) cost {
	runtime.GC()
	p0, c0 := forks(), cpuTime()
	start := time.Now()
	fn()
	wall := time.Since(start)
	return cost{wall: wall, cpu: cpuTime() - c0, procs: forks() - p0}
}

// forks is the number of processes the machine has started since boot:
// the "processes" line of /proc/stat. It is -1 if it cannot be read,
// which makes the figures absurd rather than quietly zero.
func forks() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "processes "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// cpuTime is the user and system CPU this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// floor is the SSH floor of issue 32: a bare x/crypto/ssh client that
// runs the benchbase's script on the nodes with nothing of solar's, as
// cheaply as SSH allows: one connection per node (dial, the key exchange
// with the host key pinned, public-key login), then per task one session
// whose command reads the script's inputs from stdin with shell built-ins
// and execs /bin/sh on the script, in a copy of the base on the node (the
// nodes are this machine). Tasks run one at a time per node, the nodes in
// parallel; with one node that is a chain.
type floor struct {
	servers []*sshdtest.Server
	base    string // the copy of the base
	out     string // where the script writes, under the benchmark's temp dir
}

// floorCommand is the command of every floor session: the inputs arrive
// on stdin, one a line (the task, then the script's dir input), as solar
// sends them over the channel rather than on a command line, and the
// script runs as solar's wrapper runs a script that is not executable.
// read and export are built-ins: the session starts one process, the
// login shell, which becomes the script's.
const floorCommand = `IFS= read -r SOLAR_TASK && IFS= read -r SOLAR_INPUT_DIR && export SOLAR_TASK SOLAR_INPUT_DIR && exec /bin/sh actions/run.sh`

// newFloor copies the base at dir where the nodes' login user reads it,
// and makes the directory the script writes to.
func newFloor(b *testing.B, servers []*sshdtest.Server, dir string) *floor {
	b.Helper()
	tmp := b.TempDir()
	sshdtest.Reachable(b, tmp)
	f := &floor{servers: servers, base: filepath.Join(tmp, "base"), out: filepath.Join(tmp, "out")}
	if err := os.CopyFS(f.base, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	if err := filepath.WalkDir(f.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(f.out, 0o777); err != nil {
		b.Fatal(err)
	}
	if err := os.Chmod(f.out, 0o777); err != nil {
		b.Fatal(err)
	}
	return f
}

// run runs tasks tasks, task i on node i mod the number of nodes, in
// order on each node, and returns what it cost. It fails b if a session
// fails or the script did not record every task.
func (f *floor) run(b *testing.B, tasks int) cost {
	b.StopTimer()
	log := filepath.Join(f.out, "runs.log")
	if err := os.Remove(log); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.Fatal(err)
	}
	b.StartTimer()
	errs := make(chan error, len(f.servers))
	c := measure(func() {
		for k := range f.servers {
			go func() { errs <- f.node(k, tasks) }()
		}
		for range f.servers {
			if err := <-errs; err != nil {
				b.Error(err)
			}
		}
	})
	if b.Failed() {
		b.FailNow()
	}
	data, err := os.ReadFile(log)
	if err != nil {
		b.Fatal(err)
	}
	if got := bytes.Count(data, []byte("\n")); got != tasks {
		b.Fatalf("floor: the script recorded %d tasks, want %d", got, tasks)
	}
	return c
}

// node runs the tasks of node k over one connection, one session each.
// It reads the node's client key as solar does, in the timed part.
func (f *floor) node(k, tasks int) error {
	srv := f.servers[k]
	key, err := os.ReadFile(srv.ClientKey)
	if err != nil {
		return err
	}
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		return err
	}
	cfg := &gossh.ClientConfig{
		User:              srv.User,
		Auth:              []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback:   gossh.FixedHostKey(srv.HostKey),
		HostKeyAlgorithms: []string{srv.HostKey.Type()},
		Timeout:           10 * time.Second,
	}
	client, err := gossh.Dial("tcp", net.JoinHostPort(srv.IP, strconv.Itoa(srv.Port)), cfg)
	if err != nil {
		return fmt.Errorf("floor: node %d: %w", k, err)
	}
	defer client.Close()
	cmd := "cd '" + f.base + "' && " + floorCommand
	for i := k; i < tasks; i += len(f.servers) {
		s, err := client.NewSession()
		if err != nil {
			return fmt.Errorf("floor: node %d: session: %w", k, err)
		}
		s.Stdin = strings.NewReader("r" + strconv.Itoa(i) + ".run\n" + f.out + "\n")
		err = s.Run(cmd)
		s.Close()
		if err != nil {
			return fmt.Errorf("floor: node %d: task %d: %w", k, i, err)
		}
	}
	return nil
}
