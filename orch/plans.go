package orch

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// Errors about naming and finding plans.
var (
	// ErrNoPlans means "last" was asked for but no plan exists yet.
	ErrNoPlans = invalid.New("no plans yet")
	// ErrUnknownPlan means no plan has the given uid.
	ErrUnknownPlan = invalid.New("no such plan")
	// ErrPending means staged entries are already pending in an unfinished
	// plan.
	ErrPending = invalid.New("entries are pending in an unfinished plan")
)

// Keys in the plans bucket. A plan's graph is written once; each task's
// state is its own key, so a status change rewrites one small record.
func planKey(uid string) string     { return "plan/" + uid }
func taskPrefix(uid string) string  { return "task/" + uid + "/" }
func taskKey(uid, id string) string { return taskPrefix(uid) + id }
func openKey(uid string) string     { return "open/" + uid }
func runnerKey(uid string) string   { return "runner/" + uid }

// Record is a stored plan.
type Record struct {
	UID       string        `json:"uid"`
	CreatedAt time.Time     `json:"created_at"`
	Selection []string      `json:"selection"` // tag expressions given to ch process
	Plan      *planner.Plan `json:"plan"`
	// ProcessedBy is the actor (internal/actor) who made the plan with
	// "ch process"; "" for plans made before actors.
	ProcessedBy string `json:"processed_by,omitempty"`
}

// stateJSON is the stored form of a task's State; its fields match
// State's one for one, so the two convert directly.
type stateJSON struct {
	Status   Status    `json:"status"`
	Reason   string    `json:"reason,omitempty"`
	Err      string    `json:"error,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
	Changed  bool      `json:"changed,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
}

// NewUID returns a new plan uid: the UTC time and a sequence number, so
// uids sort in creation order.
func NewUID(tx *store.Tx, now time.Time) (string, error) {
	seq, err := tx.NextSequence(store.Plans)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-%04d", now.UTC().Format("20060102-150405"), seq), nil
}

// Save stores a new plan; every task starts PENDING (no state key).
func Save(tx *store.Tx, rec *Record) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := tx.Put(store.Plans, planKey(rec.UID), raw); err != nil {
		return err
	}
	return tx.Put(store.Plans, openKey(rec.UID), nil)
}

// UIDs returns every plan uid, oldest first.
func UIDs(tx *store.Tx) ([]string, error) {
	var out []string
	err := tx.ForEach(store.Plans, "plan/", func(k string, _ []byte) error {
		out = append(out, strings.TrimPrefix(k, "plan/"))
		return nil
	})
	return out, err
}

// Resolve turns a plan reference into a uid: "last" is the newest plan,
// "last~N" the one N before it, anything else must be an existing uid.
func Resolve(tx *store.Tx, ref string) (string, error) {
	if ref == "last" || strings.HasPrefix(ref, "last~") {
		back := 0
		if ref != "last" {
			n, err := strconv.Atoi(strings.TrimPrefix(ref, "last~"))
			if err != nil || n < 0 {
				return "", fmt.Errorf("%w %q: write last, last~1, last~2 and so on", ErrUnknownPlan, ref)
			}
			back = n
		}
		uids, err := UIDs(tx)
		if err != nil {
			return "", err
		}
		if len(uids) == 0 {
			return "", fmt.Errorf("%w: build one with solar ch process", ErrNoPlans)
		}
		if back >= len(uids) {
			return "", fmt.Errorf("%w %q: there are %d plans (last~0 to last~%d)", ErrUnknownPlan, ref, len(uids), len(uids)-1)
		}
		return uids[len(uids)-1-back], nil
	}
	if !tx.Has(store.Plans, planKey(ref)) {
		return "", fmt.Errorf("%w %q (see solar orch list)", ErrUnknownPlan, ref)
	}
	return ref, nil
}

// Load returns the stored plan uid. The record may be shared with other
// callers of Load in this process: do not modify it.
func Load(tx *store.Tx, uid string) (*Record, error) {
	// Read in place: the record of a plan of 100,000 tasks is 55 MB, and
	// what it decodes into copies what it keeps.
	raw, err := tx.Peek(store.Plans, planKey(uid))
	if err != nil {
		return nil, fmt.Errorf("%w %q (see solar orch list)", ErrUnknownPlan, uid)
	}
	sum := maphash.Bytes(loadSeed, raw)
	if rec := lastLoaded.get(uid, len(raw), sum); rec != nil {
		return rec, nil
	}
	rec, err := decodeRecord(uid, raw)
	if err != nil {
		return nil, err
	}
	lastLoaded.put(uid, len(raw), sum, rec)
	return rec, nil
}

// loadSeed seeds the digests of plan records that tell Load whether the
// record it decoded last is still what the store holds.
var loadSeed = maphash.MakeSeed()

// lastLoaded is the plan record Load decoded last: "orch run-once" loads
// the plan to check it before the runner loads it again, and decoding the
// record of a plan of 100,000 tasks (55 MB of JSON) takes about a second.
var lastLoaded loadCache

type loadCache struct {
	mu  sync.Mutex
	uid string
	n   int
	sum uint64
	rec *Record
}

func (c *loadCache) get(uid string, n int, sum uint64) *Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec != nil && c.uid == uid && c.n == n && c.sum == sum {
		return c.rec
	}
	return nil
}

// forget drops rec if it is the record held: whoever has it is about to
// change it, and the next Load must not return it.
func (c *loadCache) forget(rec *Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == rec {
		c.rec = nil
	}
}

func (c *loadCache) put(uid string, n int, sum uint64, rec *Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uid, c.n, c.sum, c.rec = uid, n, sum, rec
}

// decodeRecord decodes and checks the record raw of plan uid.
func decodeRecord(uid string, raw []byte) (*Record, error) {
	if rec := decodeSplit(raw); rec != nil {
		if err := rec.check(uid); err != nil {
			return nil, err
		}
		return rec, nil
	}
	var rec Record
	// The key of the task graph is never inside a string, where its
	// quotes would be escaped. A record without it keeps a nil graph,
	// which check refuses.
	if bytes.Contains(raw, []byte(`"plan":`)) {
		rec.Plan = sizedPlan(raw)
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, store.Damagedf("plan record %s does not decode: %v", uid, err)
	}
	if err := rec.check(uid); err != nil {
		return nil, err
	}
	return &rec, nil
}

// decodeSplit decodes a record laid out as Save writes it: its task list
// and edge list with the fast decoders of codec.go, the rest with
// encoding/json. A big record's lists are cut in pieces decoded on every
// core: one decoder takes a second over the record of a plan of 100,000
// tasks. encoding/json alone took 10 ms for a plan of 1,000 tasks, before
// its first task could start; this takes 3. It returns nil for a record
// laid out otherwise, or one a piece of which does not decode: the caller
// decodes it whole, which names what is wrong.
//
// The cuts are found by bytes alone. A quote inside a JSON string is
// always escaped, so text such as `],"edges":[` or `},{"id":` (with its
// bare quote) is never inside a string; and nothing inside a task or an
// edge is an object, so those texts are the lists' own punctuation.
func decodeSplit(raw []byte) *Record {
	const (
		nodesAt   = `,"plan":{"nodes":[`
		edgesAt   = `],"edges":[`
		warningAt = `],"warnings":`
	)
	n := bytes.Index(raw, []byte(nodesAt))
	e := bytes.Index(raw, []byte(edgesAt))
	w := bytes.LastIndex(raw, []byte(warningAt))
	if n < 0 || e < n || w < e {
		return nil
	}
	nodes := raw[n+len(nodesAt)-1 : e+1]
	edges := raw[e+len(edgesAt)-1 : w+1]
	// The record without its lists: uid, created_at, selection, warnings.
	rest := make([]byte, 0, n+len(raw)-w+32)
	rest = append(rest, raw[:n]...)
	rest = append(rest, `,"plan":{"nodes":[],"edges":[`...)
	rest = append(rest, raw[w:]...)
	var rec Record
	if err := json.Unmarshal(rest, &rec); err != nil || rec.Plan == nil {
		return nil
	}
	var okNodes, okEdges bool
	var wg sync.WaitGroup
	decodeEdgeList := func() { rec.Plan.Edges, okEdges = decodePieces(edges, []byte(`},{"from":`), decodeEdges) }
	if len(raw) < parallelAbove {
		decodeEdgeList()
	} else {
		wg.Go(decodeEdgeList)
	}
	rec.Plan.Nodes, okNodes = decodePieces(nodes, []byte(`},{"id":`), decodeNodes)
	wg.Wait()
	if !okNodes || !okEdges {
		return nil
	}
	return &rec
}

// parallelAbove is the size of a record from which decodeSplit decodes
// its edges beside its tasks, on a goroutine of their own.
const parallelAbove = 1 << 20

// decodePieces decodes list, a JSON array of objects each starting with
// next's text after its "},", in pieces of about splitPiece bytes, as many
// at once as there are cores, each with decode, and reports whether every
// piece decoded.
func decodePieces[T any](list, next []byte, decode func([]byte, *[]T) error) ([]T, bool) {
	// The elements of each piece: list[from:to], without the brackets.
	type span struct{ from, to int }
	var spans []span
	from := 1
	for {
		i := -1
		if len(list)-from > splitPiece {
			i = bytes.Index(list[from+splitPiece:], next)
		}
		if i < 0 {
			spans = append(spans, span{from, len(list) - 1})
			break
		}
		to := from + splitPiece + i + 1 // after the "}"
		spans = append(spans, span{from, to})
		from = to + 1 // after the ","
	}
	if len(spans) == 1 {
		// One piece: the list as it is, on this goroutine.
		var out []T
		return out, decode(list, &out) == nil
	}
	parts := make([][]T, len(spans))
	errs := make([]error, len(spans))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, sp := range spans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			piece := make([]byte, 0, sp.to-sp.from+2)
			piece = append(append(append(piece, '['), list[sp.from:sp.to]...), ']')
			errs[i] = decode(piece, &parts[i])
		})
	}
	wg.Wait()
	total := 0
	for i := range parts {
		if errs[i] != nil {
			return nil, false
		}
		total += len(parts[i])
	}
	out := make([]T, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, true
}

// splitPiece is the size of the pieces decodePieces decodes at once.
const splitPiece = 4 << 20

// sizedPlan returns a task graph whose lists have room for the nodes and
// edges of the plan record raw, for encoding/json to decode into: it grows
// a slice by a quarter at a time, which for a plan of 100,000 tasks
// allocated five times the size of its lists. The sizes are estimates,
// counted from the encoder's first key of each node and edge (inside a
// string those quotes would be escaped); decoding sets the lengths.
func sizedPlan(raw []byte) *planner.Plan {
	return &planner.Plan{
		Nodes: make([]planner.Node, 0, bytes.Count(raw, []byte(`{"id":`))),
		Edges: make([]planner.Edge, 0, bytes.Count(raw, []byte(`{"from":`))),
	}
}

// check refuses a record that decodes but cannot be what Save wrote.
func (rec *Record) check(uid string) error {
	if rec.Plan == nil {
		return store.Damagedf("plan record %s has no task graph", uid)
	}
	if rec.UID != uid {
		return store.Damagedf("plan record %s names plan %q", uid, rec.UID)
	}
	nodes := rec.Plan.Nodes
	ids := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if _, seen := ids[n.ID]; n.ID == "" || seen {
			return store.Damagedf("plan record %s has a task with an empty or repeated id %q", uid, n.ID)
		}
		ids[n.ID] = i
	}
	// Each edge's strings are made to share the bytes of the equal ones
	// of its nodes (ids, the texts of the rules that trigger them) and
	// the planner's constants: decoded, a plan of 100,000 tasks held
	// 600,000 copies of task ids.
	for i := range rec.Plan.Edges {
		e := &rec.Plan.Edges[i]
		from, okFrom := ids[e.From]
		to, okTo := ids[e.To]
		if !okFrom || !okTo {
			return store.Damagedf("plan record %s has an edge %s -> %s between unknown tasks", uid, e.From, e.To)
		}
		e.From, e.To = nodes[from].ID, nodes[to].ID
		switch e.Kind {
		case planner.EdgeReact:
			e.Kind = planner.EdgeReact
		case planner.EdgeAfter:
			e.Kind = planner.EdgeAfter
		}
		for _, text := range nodes[to].TriggeredBy {
			if text == e.Rule {
				e.Rule = text
				break
			}
		}
	}
	return nil
}

// States returns the recorded state of every task of plan uid; tasks
// without a record are PENDING.
func States(tx *store.Tx, rec *Record) (map[string]State, error) {
	out := make(map[string]State, len(rec.Plan.Nodes))
	for _, n := range rec.Plan.Nodes {
		out[n.ID] = State{Status: StatusPending}
	}
	p := taskPrefix(rec.UID)
	err := tx.ForEach(store.Plans, p, func(k string, v []byte) error {
		s, err := decodeState(v)
		if err != nil {
			return store.Damagedf("task record %s does not decode: %v", k, err)
		}
		out[strings.TrimPrefix(k, p)] = s
		return nil
	})
	return out, err
}

// PutState records a task's state.
func PutState(tx *store.Tx, uid, id string, st State) error {
	raw, err := encodeState(st)
	if err != nil {
		return err
	}
	return tx.Put(store.Plans, taskKey(uid, id), raw)
}

// Open reports whether plan uid still has unfinished tasks.
func Open(tx *store.Tx, uid string) bool { return tx.Has(store.Plans, openKey(uid)) }

// SetOpen marks plan uid as unfinished (or finished).
func SetOpen(tx *store.Tx, uid string, open bool) error {
	if open {
		return tx.Put(store.Plans, openKey(uid), nil)
	}
	return tx.Delete(store.Plans, openKey(uid))
}

// Pending maps each staged entry key still pending (its task not finished)
// in an unfinished plan to that plan's uid.
func Pending(tx *store.Tx) (map[string]string, error) {
	var open []string
	if err := tx.ForEach(store.Plans, "open/", func(k string, _ []byte) error {
		open = append(open, strings.TrimPrefix(k, "open/"))
		return nil
	}); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, uid := range open {
		rec, err := Load(tx, uid)
		if err != nil {
			return nil, err
		}
		states, err := States(tx, rec)
		if err != nil {
			return nil, err
		}
		for _, n := range rec.Plan.Nodes {
			if st := states[n.ID]; n.Staged && (!st.Status.Finished() || Stopped(st)) {
				out[n.StagedKey] = uid
			}
		}
	}
	return out, nil
}

// Supersede skips the tasks not started of older plans that run any of
// keys, with reason "superseded by BY" (BY is the uid of the plan taking
// them over); their finished tasks keep their status. A plan left with
// nothing to do is closed. It returns what it did to each plan, by uid.
func Supersede(tx *store.Tx, keys []string, by string, now time.Time) ([]SupersededPlan, error) {
	return skipPending(tx, keys, SupersededBy(by), now)
}

// SkipPending skips, with reason, the tasks of unfinished plans that are
// still to run any of the staged keys (a discarded entry must not run);
// it returns the plans touched, and closes those left with nothing to do.
// A task that a live run has started is refused (ErrRunning, naming the
// process); the others reach that run before it starts them.
func SkipPending(tx *store.Tx, keys []string, reason string, now time.Time) ([]string, error) {
	plans, err := skipPending(tx, keys, reason, now)
	uids := make([]string, len(plans))
	for i, p := range plans {
		uids[i] = p.UID
	}
	return uids, err
}

// skipPending is SkipPending, saying what it did to each plan.
func skipPending(tx *store.Tx, keys []string, reason string, now time.Time) ([]SupersededPlan, error) {
	pending, err := Pending(tx)
	if err != nil {
		return nil, err
	}
	byPlan := map[string]map[string]bool{}
	for _, k := range keys {
		if uid, ok := pending[k]; ok {
			if byPlan[uid] == nil {
				byPlan[uid] = map[string]bool{}
			}
			byPlan[uid][k] = true
		}
	}
	uids := make([]string, 0, len(byPlan))
	for uid := range byPlan {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	out := make([]SupersededPlan, 0, len(uids))
	for _, uid := range uids {
		rec, err := Load(tx, uid)
		if err != nil {
			return nil, err
		}
		states, err := States(tx, rec)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, n := range rec.Plan.Nodes {
			if st := states[n.ID]; n.Staged && byPlan[uid][n.StagedKey] && (!st.Status.Finished() || Stopped(st)) {
				ids = append(ids, n.ID)
			}
		}
		if err := skipTasks(tx, uid, ids, states, reason, now); err != nil {
			return nil, err
		}
		if err := closeIfDone(tx, uid, states); err != nil {
			return nil, err
		}
		out = append(out, supersededPlan(uid, ids, states))
	}
	return out, nil
}

func closeIfDone(tx *store.Tx, uid string, states map[string]State) error {
	if !Done(states) {
		return nil
	}
	return SetOpen(tx, uid, false)
}

// Ordered returns the plan's tasks in a topological order (every task after
// its predecessors), heaviest first among those ready together, then by
// id: the order reports and reviews list them in.
func Ordered(p *planner.Plan) []planner.Node {
	idx := make(map[string]int, len(p.Nodes))
	for i, n := range p.Nodes {
		idx[n.ID] = i
	}
	indeg := make([]int, len(p.Nodes))
	succ := make([][]int, len(p.Nodes))
	for _, e := range p.Edges {
		f, okf := idx[e.From]
		t, okt := idx[e.To]
		if okf && okt {
			succ[f] = append(succ[f], t)
			indeg[t]++
		}
	}
	ready := &nodeHeap{nodes: p.Nodes}
	for i := range p.Nodes {
		if indeg[i] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]planner.Node, 0, len(p.Nodes))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, p.Nodes[i])
		for _, t := range succ[i] {
			if indeg[t]--; indeg[t] == 0 {
				heap.Push(ready, t)
			}
		}
	}
	if len(out) < len(p.Nodes) {
		return p.Nodes // a cycle (a damaged plan): keep the stored order
	}
	return out
}

// nodeHeap orders node indexes heaviest first, then by id.
type nodeHeap struct {
	nodes []planner.Node
	idx   []int
}

func (h *nodeHeap) Len() int { return len(h.idx) }
func (h *nodeHeap) Less(i, j int) bool {
	a, b := &h.nodes[h.idx[i]], &h.nodes[h.idx[j]]
	if a.Weight != b.Weight {
		return a.Weight > b.Weight
	}
	return a.ID < b.ID
}
func (h *nodeHeap) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *nodeHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *nodeHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// TaskID resolves a task named by the user in plan rec: an id
// ("keystone.run#0"), or an action ("keystone.run", its first instance).
func TaskID(rec *Record, name string) (string, error) {
	for _, n := range rec.Plan.Nodes {
		if n.ID == name {
			return n.ID, nil
		}
	}
	if !strings.Contains(name, "#") {
		for _, n := range rec.Plan.Nodes {
			if n.Resource+"."+n.Action == name && n.Instance == 0 {
				return n.ID, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %q in plan %s (see solar orch show %s)", ErrUnknownTask, name, rec.UID, rec.UID)
}

// TaskState returns the recorded state of one task; PENDING when none.
func TaskState(tx *store.Tx, uid, id string) (State, error) {
	raw, err := tx.Peek(store.Plans, taskKey(uid, id))
	if errors.Is(err, store.ErrNotFound) {
		return State{Status: StatusPending}, nil
	}
	if err != nil {
		return State{}, err
	}
	s, err := decodeState(raw)
	if err != nil {
		return State{}, store.Damagedf("task record %s does not decode: %v", taskKey(uid, id), err)
	}
	return s, nil
}
