package kv

import (
	"context"
	"errors"
	"time"
)

// Fleet is a Backend whose submitted plans are run by a fleet of runners
// on any machine (PostgreSQL): each task of such a plan is a row that a
// runner claims, under a lease on the store's clock, and completes. A
// backend without it (a bbolt file) has one runner per plan.
//
// The protocol (docs/architecture.md, "The fleet"):
//   - Submit (FleetTx.FleetSubmit) writes a row per task: done, waiting
//     for predecessors, or ready.
//   - Claim takes ready tasks of live plans in one transaction, heaviest
//     first, skipping rows other runners are claiming (SKIP LOCKED), with
//     every slot a task holds (plan concurrency, node, resource, sema)
//     counted under row locks taken in name order; a claimed row gets the
//     runner as owner, a new fence, one more claim and a lease.
//   - Heartbeat renews all of a runner's leases in one statement and says
//     which claims it still holds.
//   - A completion (FleetTx.FleetComplete) is matched on task, owner,
//     fence and the plan's epoch, in the transaction that records the
//     task's result; zero rows matched means the runner was fenced out.
//   - FleetTx.FleetReap finds expired leases on the store's clock, and
//     FleetRelease gives a claim back (ready again, or done when the
//     caller ends the task), in the transaction that records why.
//
// The plan's concurrency and per-node limits are slots like the others:
// the caller names them in each task's Slots ("plan/UID",
// "node/UID/NODE").
type Fleet interface {
	// Register records runner r as live (its heartbeat now), replacing a
	// record of its name; Unregister removes the record of instance.
	// Runners lists the runners whose heartbeat is recent, with the
	// number of tasks each holds.
	Register(ctx context.Context, r FleetRunner) error
	Unregister(ctx context.Context, instance string) error
	Runners(ctx context.Context) ([]FleetRunner, error)
	// Claim claims up to f.Max ready tasks for runner f.Runner, writing
	// for each the record begin returns (its INPROGRESS state) in the
	// same transaction.
	Claim(ctx context.Context, f ClaimFilter, begin func(Claim) (bucket, key string, value []byte)) ([]Claim, error)
	// Heartbeat renews every lease the runner instance holds (its claims'
	// owner) for ttl from now on the store's clock, and its own record,
	// and returns the claims it still holds with their plans' epochs and
	// whether the plans are live.
	Heartbeat(ctx context.Context, instance string, ttl time.Duration) ([]Claim, error)
	// PlanState returns the fleet's view of plan uid: whether it was
	// submitted, its epoch, whether it is live, and its rows' counts.
	PlanState(ctx context.Context, uid string) (FleetPlan, bool, error)
}

// FleetTx is a Tx of a Fleet backend: what the transactions that submit,
// complete, stop and reap do to the fleet's rows, atomically with the
// store's records.
type FleetTx interface {
	// FleetSubmit replaces plan p's rows with tasks, live, epoch bumped.
	FleetSubmit(p FleetPlan, tasks []FleetTask) error
	// FleetPlan reads plan uid's row; ok is false when it was never
	// submitted.
	FleetPlan(uid string) (p FleetPlan, ok bool, err error)
	// FleetSetPlan sets plan uid live or not and, with bump, moves its
	// epoch on (a compare-and-swap on the epoch the caller read when
	// epoch is not zero: ErrFleetEpoch when it moved meanwhile).
	FleetSetPlan(uid string, live, bump bool, epoch int64) error
	// FleetComplete marks claim c's task done if c still holds it (task,
	// owner, fence, and the plan's epoch): false means the runner was
	// fenced out and nothing changed.
	FleetComplete(c Claim) (bool, error)
	// FleetRelease gives claim c's task back: ready again when ready,
	// else done. Matched as FleetComplete.
	FleetRelease(c Claim, ready bool) (bool, error)
	// FleetCountDown takes one finished predecessor off each task of plan
	// uid in tasks and returns those left waiting for none (and not done).
	FleetCountDown(uid string, tasks []string) ([]string, error)
	// FleetSet moves tasks of plan uid that wait for no predecessor to
	// ready, or to done.
	FleetSet(uid string, tasks []string, ready bool) error
	// FleetRows returns plan uid's rows.
	FleetRows(uid string) ([]FleetRow, error)
	// FleetDrop removes plan uid's rows.
	FleetDrop(uid string) error
	// FleetReap returns up to max claims whose lease expired on the
	// store's clock, their rows locked by the transaction, skipping rows
	// locked by others.
	FleetReap(max int) ([]Claim, error)
}

// ErrFleetEpoch means a plan's epoch moved between a read and a
// compare-and-swap.
var ErrFleetEpoch = errors.New("plan epoch changed")

// FleetPlan is a submitted plan as the fleet sees it.
type FleetPlan struct {
	UID         string
	Epoch       int64
	Live        bool
	Concurrency int // tasks of the plan that run at once, store-wide (0: unlimited)
	PerNode     int // tasks of the plan that run at once on one node (0: unlimited)
	By          string
	Submitted   time.Time
	// Counts of its rows by state, when read by PlanState.
	Waiting, Ready, Claimed, Done int
}

// Row states.
const (
	RowWaiting = 0
	RowReady   = 1
	RowClaimed = 2
	RowDone    = 3
)

// FleetTask is a task's row as submitted.
type FleetTask struct {
	Task    string
	State   int // RowWaiting, RowReady or RowDone
	Waiting int // predecessors not finished
	Weight  int
	Node    string // "" for a task that runs on the runner's machine
	// Slots are the counted limits the task holds while it runs, besides
	// its plan's concurrency and per-node ones: "resource/NAME" (1),
	// "sema/NAME" (its count).
	Slots    []Slot
	Attempts int // attempts numbered before this submission
}

// Slot is one counted limit: at most Count tasks holding Name run at
// once, across every runner.
type Slot struct {
	Name  string
	Count int
}

// FleetRow is a task's row as it stands.
type FleetRow struct {
	Task    string
	State   int
	Waiting int
	Node    string
	Owner   string
	Fence   int64
	Claims  int
}

// Claim is one task claimed by a runner.
type Claim struct {
	UID, Task string
	Owner     string
	Fence     int64
	Epoch     int64
	Claims    int  // how many times the task was claimed, this one included
	Attempts  int  // attempts numbered before this claim
	Live      bool // the plan is live (Heartbeat)
}

// ClaimFilter says which tasks a runner may claim.
type ClaimFilter struct {
	Runner string // the claiming instance (FleetRunner.Instance)
	Max    int
	TTL    time.Duration
	// Plan limits claims to one plan ("" any live plan).
	Plan string
	// Nodes limits claims of tasks with a node to these (nil: any node);
	// NoLocal refuses tasks without one.
	Nodes   []string
	NoLocal bool
}

// FleetRunner is a runner's record.
type FleetRunner struct {
	Name, Host, Version string
	// Instance names this process of the runner: its claims' owner (a
	// runner restarted under its name is a new instance, and never renews
	// the claims of the one before, which expire). "" is Name.
	Instance    string
	PID         int
	Concurrency int
	Nodes       string // its --nodes expression, "" for any
	Started     time.Time
	Silent      time.Duration // since its last heartbeat, on the store's clock
	Held        int           // tasks it holds now
}
