// Package torture kills solar runners with SIGKILL at random moments, and
// injects the faults of a team store and of remote nodes, and checks the
// crash promises (SPEC section 7) after every run and at the end. It is
// slow and random, so it runs only when asked:
//
//	SOLAR_TORTURE=200 go test ./internal/torture -v -timeout 4h   # 200 rounds
//
// SOLAR_TORTURE_SEED repeats a run's choices (as far as timing allows);
// SOLAR_TORTURE_BIN runs a solar binary built elsewhere instead of this
// tree's, to see whether the torture finds a defect in an older build.
//
// Each round builds a fresh store with a layered plan of shell tasks that
// start children and hold a per-resource lock (from a base directory it
// removes once the plan is made: every run takes the base from the store,
// into a base cache of the round's own), then runs it (run-once,
// resume after an interruption, retry after failed tasks) through random
// faults until every task has succeeded. One task in four is long and
// ignores SIGTERM, so that a fault often finds a script that outlives its
// runner's first signal: a second or two locally, 2-6s on PostgreSQL (to
// outlast a crash of the server), 3-8s on nodes (to outlast a cut).
//
// Rounds take turns over four setups (SOLAR_TORTURE_MODES, a comma list,
// chooses among them; "fleet", only when named there, tortures solar
// runner processes instead: see fleet_test.go): the store in a bbolt file ("bolt") or PostgreSQL
// ("pg"), and the tasks run on this machine or on two OpenSSH nodes, each
// in a network namespace of its own ("bolt-ssh", "pg-ssh"). A run meets
// one of these faults, or none:
//
//   - kill -9 of its runner (every mode);
//   - a crash of the round's own PostgreSQL server (pg_ctl stop -m
//     immediate), started again 0.5-4s later (pg modes);
//   - a cut of one node's link (every packet dropped, both ways) for 3-6s,
//     healed then (ssh modes), with a keepalive of 1s or 2s, so that the
//     controller gives up the connection while the node's copy still runs.
//
// In pg modes some rounds also set idle_session_timeout to a few seconds,
// the lease time is short (SOLAR_LEASE_TTL 5s or 8s), and some runs meet a
// second runner (orch resume) started on "another machine" (a UTS
// namespace with another host name, so that the same-machine takeover of
// a dead runner's lease does not apply) while the first may still run. In
// ssh modes some tasks have meta.retry, whose retries dial again during
// the cut or the moment it heals. A runner that lost its lease, was
// refused because another runs the plan, or whose tasks failed because of
// a cut is an accepted outcome; the plan is resumed or retried.
//
// Checked:
//   - no two attempts of one resource ever overlap, crash or not: every
//     script takes an exclusive flock on its resource's lock file that its
//     children inherit, and logs OVERLAP if it finds the lock taken (a
//     survivor of a killed runner, of a runner that lost its lease, or of
//     a node cut off from its controller still holds it);
//   - a task the store shows finished (SUCCESS) after a run never starts
//     again: what an interrupted runner made durable stays done;
//   - two runners of one plan never start tasks at the same time (as
//     their progress lines show, beyond the uncertainty of their clocks):
//     one that is refused, or waits for the other's lease to expire, starts
//     none while the other does;
//   - a run ends only in an outcome its faults explain: a runner fenced
//     out ("lost its claim") after another took its plan is a violation;
//   - after the last run, every task is SUCCESS, nothing is staged, and the
//     history has one entry per task;
//   - no attempt directory (inputs, secrets) is left in TMPDIR, and no
//     process of the round still runs;
//   - no command panics, reports an internal error or prints a secret.
package torture

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/sshdtest"
)

const (
	layers   = 4
	perLayer = 6
	// maxRuns bounds the runs of one round: a plan that does not finish
	// after that many is a failure in itself.
	maxRuns = 60
)

// mode is one setup a round runs in.
type mode struct {
	name string
	pg   bool // the store is PostgreSQL (else a bbolt file)
	ssh  bool // the tasks run on sshd nodes (else on this machine)
	// fleet: solar runner processes run a submitted plan (fleet_test.go).
	fleet bool
}

// parseModes reads SOLAR_TORTURE_MODES.
func parseModes(list string) ([]mode, error) {
	var out []mode
	for _, name := range strings.Split(list, ",") {
		switch name {
		case "bolt", "pg", "bolt-ssh", "pg-ssh":
			out = append(out, mode{name: name, pg: strings.HasPrefix(name, "pg"), ssh: strings.HasSuffix(name, "-ssh")})
		case "fleet":
			out = append(out, mode{name: name, pg: true, fleet: true})
		default:
			return nil, fmt.Errorf("SOLAR_TORTURE_MODES: unknown mode %q (bolt, pg, bolt-ssh, pg-ssh, fleet)", name)
		}
	}
	return out, nil
}

// rig is what every round shares: the solar binary, the nodes' base and,
// in ssh modes, the nodes. Each round writes the base of its tasks itself
// (round.createPlan), and removes it once its resources are created.
type rig struct {
	bin, nodeBase string
	nodes         []node
}

// node is an sshd in a network namespace, joined to this machine by link.
type node struct {
	srv  *sshdtest.Server
	link *sshdtest.Link
}

func TestTorture(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SOLAR_TORTURE"))
	if rounds <= 0 {
		t.Skip("set SOLAR_TORTURE=N to run N rounds of kill -9 and fault torture")
	}
	list := "bolt,pg,bolt-ssh,pg-ssh"
	if m := os.Getenv("SOLAR_TORTURE_MODES"); m != "" {
		list = m
	}
	modes, err := parseModes(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"flock", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			sshdtest.Require(t, tool, "apt-get install util-linux")
		}
	}
	rg := newRig(t, modes)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SOLAR_TORTURE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d (SOLAR_TORTURE_SEED to repeat)", seed)
	root := t.TempDir()
	var total stats
	for n := range rounds {
		m := modes[n%len(modes)]
		name := fmt.Sprintf("r%04d-%s", n, m.name)
		ok := t.Run(name, func(t *testing.T) {
			st := runRound(t, rng, rg, m, filepath.Join(root, name))
			total.add(st)
			t.Logf("%s: %s", name, st.summary())
		})
		if !ok {
			t.Fatalf("round %d (%s) failed (seed %d)", n, m.name, seed)
		}
	}
	t.Logf("%d rounds, %s, %d tasks per round: no violation", rounds, total.summary(), layers*perLayer)
}

// newRig builds the binary (or takes SOLAR_TORTURE_BIN) and, when a mode
// needs them, starts two nodes, each in a network namespace of its own.
func newRig(t *testing.T, modes []mode) *rig {
	root := t.TempDir()
	rg := &rig{bin: os.Getenv("SOLAR_TORTURE_BIN")}
	if rg.bin == "" {
		rg.bin = filepath.Join(root, "solar")
		build := exec.Command("go", "build", "-o", rg.bin, "github.com/solarops/solar/cmd/solar")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	var err error
	if rg.nodeBase, err = filepath.Abs("../../testdata/resources/node"); err != nil {
		t.Fatal(err)
	}
	for _, m := range modes {
		if m.ssh && rg.nodes == nil {
			for i := range 2 {
				link := sshdtest.NetNS(t, "torture"+strconv.Itoa(i))
				srv := sshdtest.Start(t, sshdtest.Options{IP: link.NodeIP, NetNS: link.NS})
				rg.nodes = append(rg.nodes, node{srv: srv, link: link})
			}
		}
	}
	return rg
}
