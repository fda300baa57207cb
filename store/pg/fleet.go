package pg

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/solarops/solar/store/kv"
)

// The fleet (kv.Fleet, kv.FleetTx) on the tables of layout 3: fleet_plan,
// fleet_task (a row per task: its state, owner, fence and lease),
// fleet_slot (rows locked as mutexes while slots are counted),
// fleet_runner and the sequence fleet_fence.
//
// A claim runs in a READ COMMITTED transaction of its own, so that each
// statement sees what other claims committed before it, and takes its rows
// with FOR UPDATE SKIP LOCKED, so that claimers never wait for each other
// on a task. Everything else (submit, complete, release, reap) is part of
// the KV's SERIALIZABLE transaction that records why.

var (
	_ kv.Fleet   = (*Store)(nil)
	_ kv.FleetTx = (*tx)(nil)
)

// claimLookahead is how many candidates a claim reads per task it may
// take: ready tasks whose slots are full are passed over.
const claimLookahead = 4

// runnerRecent is how recent a runner's heartbeat is for Runners to list
// it.
const runnerRecent = 60 * time.Second

// slotSep joins a task's slot names in FleetSubmit's one text per task.
const slotSep = "\x1f"

func (s *Store) table(name string) string { return s.sql.schema + "." + name }

func millis(d time.Duration) int64 { return d.Milliseconds() }

// candidate is a ready task a claim may take.
type candidate struct {
	uid, task        string
	names            []string
	counts           []int32
	claims, attempts int
	epoch            int64
}

// Claim implements kv.Fleet in three round trips: the candidates (with
// BEGIN); the slots' rows created, locked in name order and their holders
// counted, with the fences; the claimed rows, begin's records and COMMIT.
// A claim racing with a change of its plan's epoch carries the epoch it
// read: its completion matches nothing, and Heartbeat reports the new one.
// A slot whose count is not positive is not limited. An error before the
// COMMIT claimed nothing; a connection lost during it may have claimed:
// those claims are the runner's, named by its next Heartbeat, and are
// reaped when their leases end if it does not take them up.
func (s *Store) Claim(ctx context.Context, f kv.ClaimFilter, begin func(kv.Claim) (bucket, key string, value []byte)) ([]kv.Claim, error) {
	if f.Max <= 0 {
		return nil, nil
	}
	pc, err := s.acquire(ctx, "claim")
	if err != nil {
		return nil, err
	}
	defer pc.Release()
	conn := pc.Conn()
	defer func() {
		if !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
			if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
				_ = conn.Close(ctx)
			}
		}
	}()
	cands, err := s.candidates(ctx, conn, f)
	if err != nil || len(cands) == 0 {
		if err == nil {
			_, err = conn.Exec(ctx, "COMMIT")
		}
		if err != nil {
			return nil, s.fail("claim", err)
		}
		return nil, nil
	}
	held, fences, err := s.lockSlots(ctx, conn, cands, min(len(cands), f.Max))
	if err != nil {
		return nil, s.fail("claim", err)
	}
	var taken []kv.Claim
	for _, c := range cands {
		if len(taken) == f.Max {
			break
		}
		if !fits(c, held) {
			continue
		}
		for i, n := range c.names {
			if c.counts[i] > 0 {
				held[n]++
			}
		}
		taken = append(taken, kv.Claim{UID: c.uid, Task: c.task, Owner: f.Runner, Fence: fences[len(taken)],
			Epoch: c.epoch, Claims: c.claims + 1, Attempts: c.attempts, Live: true})
	}
	if err := s.take(ctx, conn, f, taken, begin); err != nil {
		return nil, s.fail("claim", err)
	}
	return taken, nil
}

// fits reports whether every limited slot c names has room.
func fits(c candidate, held map[string]int) bool {
	for i, n := range c.names {
		if c.counts[i] > 0 && held[n] >= int(c.counts[i]) {
			return false
		}
	}
	return true
}

// candidates begins the claim's transaction and locks the ready tasks f
// may take, heaviest first, skipping rows locked by other claims.
func (s *Store) candidates(ctx context.Context, conn *pgx.Conn, f kv.ClaimFilter) ([]candidate, error) {
	var nodes []string // nil is NULL: any node
	if f.Nodes != nil {
		nodes = append([]string{}, f.Nodes...)
	}
	q := "SELECT t.uid, t.task, t.slot_names, t.slot_counts, t.claims, t.attempts, p.epoch" +
		" FROM " + s.table("fleet_task") + " t JOIN " + s.table("fleet_plan") + " p USING (uid)" +
		" WHERE t.state = 1 AND p.live AND ($1 = '' OR t.uid = $1)" +
		" AND CASE WHEN t.node = '' THEN NOT $3 ELSE $2::text[] IS NULL OR t.node = ANY($2::text[]) END" +
		" ORDER BY t.weight DESC, t.uid, t.task LIMIT $4 FOR UPDATE OF t SKIP LOCKED"
	var cands []candidate
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(q, f.Plan, nodes, f.NoLocal, claimLookahead*f.Max).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.uid, &c.task, &c.names, &c.counts, &c.claims, &c.attempts, &c.epoch); err != nil {
				return err
			}
			cands = append(cands, c)
		}
		return rows.Err()
	})
	return cands, conn.SendBatch(ctx, b).Close()
}

// lockSlots makes sure every limited slot the candidates name has its
// row, locks those rows in name order (so that two claims never wait for
// each other in a cycle), then counts each slot's holders: READ COMMITTED
// gives the count a snapshot taken after the locks, which sees every claim
// committed by the claims that held them before. It also takes n fences.
func (s *Store) lockSlots(ctx context.Context, conn *pgx.Conn, cands []candidate, n int) (map[string]int, []int64, error) {
	var names []string
	for _, c := range cands {
		for i, name := range c.names {
			if c.counts[i] > 0 {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	held := map[string]int{}
	var fences []int64
	b := &pgx.Batch{}
	if len(names) > 0 {
		b.Queue("INSERT INTO "+s.table("fleet_slot")+" (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", names)
		b.Queue("SELECT name FROM "+s.table("fleet_slot")+" WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE", names)
		b.Queue("SELECT n, count(*) FROM "+s.table("fleet_task")+" t, unnest(t.slot_names) n"+
			" WHERE t.state = 2 AND t.slot_names && $1::text[] AND n = ANY($1::text[]) GROUP BY n", names).Query(func(rows pgx.Rows) error {
			var name string
			var k int
			_, err := pgx.ForEachRow(rows, []any{&name, &k}, func() error {
				held[name] = k
				return nil
			})
			return err
		})
	}
	b.Queue("SELECT nextval($1::regclass) FROM generate_series(1, $2)", s.table("fleet_fence"), n).Query(func(rows pgx.Rows) error {
		var f int64
		_, err := pgx.ForEachRow(rows, []any{&f}, func() error {
			fences = append(fences, f)
			return nil
		})
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, err
	}
	if len(fences) != n {
		return nil, nil, fmt.Errorf("fleet: %d fences of %d", len(fences), n)
	}
	return held, fences, nil
}

// take marks the taken rows claimed, writes begin's records and commits,
// in one round trip.
func (s *Store) take(ctx context.Context, conn *pgx.Conn, f kv.ClaimFilter, taken []kv.Claim, begin func(kv.Claim) (string, string, []byte)) error {
	b := &pgx.Batch{}
	if len(taken) > 0 {
		uids, tasks, fences := make([]string, len(taken)), make([]string, len(taken)), make([]int64, len(taken))
		for i, c := range taken {
			uids[i], tasks[i], fences[i] = c.UID, c.Task, c.Fence
		}
		b.Queue("UPDATE "+s.table("fleet_task")+" t SET state = 2, owner = $1, fence = u.fence, claims = t.claims + 1,"+
			" attempts = t.attempts + 1, lease_until = now() + $2::bigint * interval '1 millisecond'"+
			" FROM unnest($3::text[], $4::text[], $5::bigint[]) u(uid, task, fence) WHERE t.uid = u.uid AND t.task = u.task",
			f.Runner, millis(f.TTL), uids, tasks, fences)
	}
	if begin != nil {
		type kvs struct{ keys, values [][]byte }
		byBucket := map[string]*kvs{}
		var buckets []string
		for _, c := range taken {
			bucket, key, value := begin(c)
			if bucket == "" {
				continue
			}
			if !s.buckets[bucket] {
				panic("store: unknown bucket " + bucket) // a bug, as in tx.check
			}
			if value == nil {
				value = []byte{}
			}
			w := byBucket[bucket]
			if w == nil {
				w = &kvs{}
				byBucket[bucket] = w
				buckets = append(buckets, bucket)
			}
			w.keys, w.values = append(w.keys, []byte(key)), append(w.values, value)
		}
		slices.Sort(buckets)
		for _, bucket := range buckets {
			b.Queue(s.sql.upsert, bucket, byBucket[bucket].keys, byBucket[bucket].values)
		}
	}
	b.Queue("COMMIT")
	return conn.SendBatch(ctx, b).Close()
}

// Heartbeat implements kv.Fleet: one statement renews the leases and the
// runner's record, on the database's clock.
func (s *Store) Heartbeat(ctx context.Context, runner string, ttl time.Duration) ([]kv.Claim, error) {
	q := "WITH r AS (UPDATE " + s.table("fleet_runner") + " SET heartbeat = now() WHERE instance = $1)," +
		" u AS (UPDATE " + s.table("fleet_task") + " SET lease_until = now() + $2::bigint * interval '1 millisecond'" +
		" WHERE state = 2 AND owner = $1 RETURNING uid, task, fence, claims, attempts)" +
		" SELECT u.uid, u.task, u.fence, u.claims, u.attempts - 1, p.epoch, p.live FROM u JOIN " + s.table("fleet_plan") +
		" p USING (uid) ORDER BY u.uid, u.task"
	pc, err := s.acquire(ctx, "heartbeat")
	if err != nil {
		return nil, err
	}
	defer pc.Release()
	rows, err := pc.Query(ctx, q, runner, millis(ttl))
	if err != nil {
		return nil, s.fail("heartbeat", err)
	}
	claims := []kv.Claim{}
	c := kv.Claim{Owner: runner}
	_, err = pgx.ForEachRow(rows, []any{&c.UID, &c.Task, &c.Fence, &c.Claims, &c.Attempts, &c.Epoch, &c.Live}, func() error {
		claims = append(claims, c)
		return nil
	})
	if err != nil {
		return nil, s.fail("heartbeat", err)
	}
	return claims, nil
}

// exec runs one statement outside a transaction of the KV.
func (s *Store) exec(ctx context.Context, op, sql string, args ...any) error {
	pc, err := s.acquire(ctx, op)
	if err != nil {
		return err
	}
	defer pc.Release()
	if _, err := pc.Exec(ctx, sql, args...); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Register implements kv.Fleet.
func (s *Store) Register(ctx context.Context, r kv.FleetRunner) error {
	return s.exec(ctx, "register runner", "INSERT INTO "+s.table("fleet_runner")+
		" (name, host, pid, version, concurrency, nodes, started, heartbeat, instance) VALUES ($1, $2, $3, $4, $5, $6, $7, now(), $8)"+
		" ON CONFLICT (name) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,"+
		" concurrency = EXCLUDED.concurrency, nodes = EXCLUDED.nodes, started = EXCLUDED.started, heartbeat = now(), instance = EXCLUDED.instance",
		r.Name, r.Host, r.PID, r.Version, r.Concurrency, r.Nodes, r.Started, cmp.Or(r.Instance, r.Name))
}

// Unregister implements kv.Fleet.
func (s *Store) Unregister(ctx context.Context, instance string) error {
	return s.exec(ctx, "unregister runner", "DELETE FROM "+s.table("fleet_runner")+" WHERE instance = $1", instance)
}

// Runners implements kv.Fleet: the runners heard from in the last minute,
// by name.
func (s *Store) Runners(ctx context.Context) ([]kv.FleetRunner, error) {
	q := "SELECT r.name, coalesce(r.host, ''), coalesce(r.pid, 0), coalesce(r.version, ''), coalesce(r.concurrency, 0)," +
		" coalesce(r.nodes, ''), coalesce(r.started, 'epoch'::timestamptz), (extract(epoch FROM now() - r.heartbeat) * 1e6)::bigint," +
		" (SELECT count(*) FROM " + s.table("fleet_task") + " t WHERE t.state = 2 AND t.owner = r.instance)" +
		" FROM " + s.table("fleet_runner") + " r WHERE r.heartbeat > now() - $1::bigint * interval '1 millisecond' ORDER BY r.name"
	pc, err := s.acquire(ctx, "list runners")
	if err != nil {
		return nil, err
	}
	defer pc.Release()
	rows, err := pc.Query(ctx, q, millis(runnerRecent))
	if err != nil {
		return nil, s.fail("list runners", err)
	}
	list := []kv.FleetRunner{}
	var r kv.FleetRunner
	var silent int64
	_, err = pgx.ForEachRow(rows, []any{&r.Name, &r.Host, &r.PID, &r.Version, &r.Concurrency, &r.Nodes, &r.Started, &silent, &r.Held}, func() error {
		r.Silent = max(time.Duration(silent)*time.Microsecond, 0)
		list = append(list, r)
		return nil
	})
	if err != nil {
		return nil, s.fail("list runners", err)
	}
	return list, nil
}

// planQuery reads a plan's row with its rows' counts by state.
func (s *Store) planQuery() string {
	return "SELECT p.uid, p.epoch, p.live, p.concurrency, p.per_node, p.by, p.submitted," +
		" count(t.task) FILTER (WHERE t.state = 0), count(t.task) FILTER (WHERE t.state = 1)," +
		" count(t.task) FILTER (WHERE t.state = 2), count(t.task) FILTER (WHERE t.state = 3)" +
		" FROM " + s.table("fleet_plan") + " p LEFT JOIN " + s.table("fleet_task") + " t USING (uid)" +
		" WHERE p.uid = $1 GROUP BY p.uid"
}

func scanPlan(rows pgx.Rows, p *kv.FleetPlan) error {
	return rows.Scan(&p.UID, &p.Epoch, &p.Live, &p.Concurrency, &p.PerNode, &p.By, &p.Submitted,
		&p.Waiting, &p.Ready, &p.Claimed, &p.Done)
}

// PlanState implements kv.Fleet.
func (s *Store) PlanState(ctx context.Context, uid string) (kv.FleetPlan, bool, error) {
	pc, err := s.acquire(ctx, "plan state")
	if err != nil {
		return kv.FleetPlan{}, false, err
	}
	defer pc.Release()
	rows, err := pc.Query(ctx, s.planQuery(), uid)
	if err != nil {
		return kv.FleetPlan{}, false, s.fail("plan state", err)
	}
	defer rows.Close()
	var p kv.FleetPlan
	ok := rows.Next()
	if ok {
		err = scanPlan(rows, &p)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return kv.FleetPlan{}, false, s.fail("plan state", err)
	}
	return p, ok, nil
}

// exec runs statements of the transaction that return no rows, in one
// round trip, preceded by its BEGIN when they are the first (as read
// does), and returns the rows each changed. A failure is the transaction's
// (t.err).
func (t *tx) exec(op string, stmts ...stmt) ([]int64, error) {
	if !t.writable {
		return nil, kv.ErrReadOnly
	}
	affected := make([]int64, len(stmts))
	b := &pgx.Batch{}
	if t.begin != "" {
		b.Queue(t.begin)
	}
	for i, st := range stmts {
		b.Queue(st.sql, st.args...).Exec(func(tag pgconn.CommandTag) error {
			affected[i] = tag.RowsAffected()
			return nil
		})
	}
	begin := t.begin
	t.begin = ""
	err := t.conn.SendBatch(t.ctx, b).Close()
	if err != nil && begin != "" && t.conn.PgConn().TxStatus() == 'I' {
		t.begin = begin // nothing ran
	}
	if err != nil {
		return nil, t.failed(op, err)
	}
	return affected, nil
}

// stmt is a statement and its arguments.
type stmt struct {
	sql  string
	args []any
}

func (t *tx) table(name string) string { return t.s.table(name) }

// FleetSubmit implements kv.FleetTx: the plan's row, the removal of its
// old rows and the new ones, in one round trip. Slot names travel joined
// by a unit separator, one text per task, and may not hold one.
func (t *tx) FleetSubmit(p kv.FleetPlan, tasks []kv.FleetTask) error {
	n := len(tasks)
	names, counts := make([]string, n), make([]string, n)
	task, node := make([]string, n), make([]string, n)
	state, waiting, weight, attempts := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	for i, k := range tasks {
		ns, cs := make([]string, len(k.Slots)), make([]string, len(k.Slots))
		for j, sl := range k.Slots {
			if sl.Name == "" || strings.Contains(sl.Name, slotSep) {
				return fmt.Errorf("fleet: task %s: slot name %q is empty or holds a unit separator", k.Task, sl.Name)
			}
			ns[j], cs[j] = sl.Name, strconv.Itoa(sl.Count)
		}
		names[i], counts[i] = strings.Join(ns, slotSep), strings.Join(cs, ",")
		task[i], node[i] = k.Task, k.Node
		state[i], waiting[i], weight[i], attempts[i] = int32(k.State), int32(k.Waiting), int32(k.Weight), int32(k.Attempts)
	}
	_, err := t.exec("submit plan",
		stmt{"INSERT INTO " + t.table("fleet_plan") + " AS p (uid, epoch, live, concurrency, per_node, by, submitted)" +
			" VALUES ($1, 1, true, $2, $3, $4, now()) ON CONFLICT (uid) DO UPDATE SET epoch = p.epoch + 1, live = true," +
			" concurrency = EXCLUDED.concurrency, per_node = EXCLUDED.per_node, by = EXCLUDED.by, submitted = now()",
			[]any{p.UID, p.Concurrency, p.PerNode, p.By}},
		stmt{"DELETE FROM " + t.table("fleet_task") + " WHERE uid = $1", []any{p.UID}},
		stmt{"INSERT INTO " + t.table("fleet_task") + " (uid, task, state, waiting, weight, node, slot_names, slot_counts, attempts)" +
			" SELECT $1, u.task, u.state, u.waiting, u.weight, u.node," +
			" CASE WHEN u.names = '' THEN '{}'::text[] ELSE string_to_array(u.names, chr(31)) END," +
			" CASE WHEN u.counts = '' THEN '{}'::int[] ELSE string_to_array(u.counts, ',')::int[] END, u.attempts" +
			" FROM unnest($2::text[], $3::int[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::int[])" +
			" AS u(task, state, waiting, weight, node, names, counts, attempts)",
			[]any{p.UID, task, state, waiting, weight, node, names, counts, attempts}})
	return err
}

// FleetPlan implements kv.FleetTx.
func (t *tx) FleetPlan(uid string) (p kv.FleetPlan, ok bool, err error) {
	err = t.read(func(rows pgx.Rows) error {
		if ok = rows.Next(); ok {
			return scanPlan(rows, &p)
		}
		return nil
	}, t.s.planQuery(), uid)
	if err != nil {
		return kv.FleetPlan{}, false, t.failed("read plan", err)
	}
	return p, ok, nil
}

// FleetSetPlan implements kv.FleetTx. A plan never submitted is
// kv.ErrNotFound (kv.ErrFleetEpoch when epoch is not zero).
func (t *tx) FleetSetPlan(uid string, live, bump bool, epoch int64) error {
	n, err := t.exec("set plan", stmt{"UPDATE " + t.table("fleet_plan") +
		" SET live = $2, epoch = epoch + CASE WHEN $3 THEN 1 ELSE 0 END WHERE uid = $1 AND ($4 = 0 OR epoch = $4)",
		[]any{uid, live, bump, epoch}})
	switch {
	case err != nil:
		return err
	case n[0] == 1:
		return nil
	case epoch != 0:
		return fmt.Errorf("plan %s: %w", uid, kv.ErrFleetEpoch)
	}
	return fmt.Errorf("plan %s: %w", uid, kv.ErrNotFound)
}

// claimMatch is the WHERE of a statement on claim c's row ($1 to $5).
func (t *tx) claimMatch(c kv.Claim) (string, []any) {
	return " WHERE uid = $1 AND task = $2 AND state = 2 AND owner = $3 AND fence = $4" +
			" AND (SELECT epoch FROM " + t.table("fleet_plan") + " WHERE uid = $1) = $5",
		[]any{c.UID, c.Task, c.Owner, c.Fence, c.Epoch}
}

// FleetComplete implements kv.FleetTx.
func (t *tx) FleetComplete(c kv.Claim) (bool, error) {
	where, args := t.claimMatch(c)
	n, err := t.exec("complete task", stmt{"UPDATE " + t.table("fleet_task") +
		" SET state = 3, owner = NULL, lease_until = NULL" + where, args})
	if err != nil {
		return false, err
	}
	return n[0] == 1, nil
}

// FleetRelease implements kv.FleetTx.
func (t *tx) FleetRelease(c kv.Claim, ready bool) (bool, error) {
	where, args := t.claimMatch(c)
	n, err := t.exec("release task", stmt{"UPDATE " + t.table("fleet_task") +
		" SET state = CASE WHEN $6 THEN 1 ELSE 3 END, owner = NULL, lease_until = NULL" + where, append(args, ready)})
	if err != nil {
		return false, err
	}
	return n[0] == 1, nil
}

// FleetCountDown implements kv.FleetTx; a task named twice counts down
// twice. The tasks returned are sorted.
func (t *tx) FleetCountDown(uid string, tasks []string) ([]string, error) {
	if !t.writable {
		return nil, kv.ErrReadOnly
	}
	counts := map[string]int32{}
	var names []string
	for _, k := range tasks {
		if counts[k] == 0 {
			names = append(names, k)
		}
		counts[k]++
	}
	slices.Sort(names) // rows locked in one order
	ns := make([]int32, len(names))
	for i, k := range names {
		ns[i] = counts[k]
	}
	var zero []string
	err := t.read(func(rows pgx.Rows) error {
		var k string
		var w int
		_, err := pgx.ForEachRow(rows, []any{&k, &w}, func() error {
			if w <= 0 {
				zero = append(zero, k)
			}
			return nil
		})
		return err
	}, "UPDATE "+t.table("fleet_task")+" t SET waiting = t.waiting - u.n FROM unnest($2::text[], $3::int[]) u(task, n)"+
		" WHERE t.uid = $1 AND t.task = u.task AND t.state = 0 RETURNING t.task, t.waiting", uid, names, ns)
	if err != nil {
		return nil, t.failed("count down", err)
	}
	slices.Sort(zero)
	return zero, nil
}

// FleetSet implements kv.FleetTx. Claimed rows are left alone: they move
// by FleetComplete and FleetRelease only.
func (t *tx) FleetSet(uid string, tasks []string, ready bool) error {
	_, err := t.exec("set tasks", stmt{"UPDATE " + t.table("fleet_task") +
		" SET state = CASE WHEN $3 THEN 1 ELSE 3 END WHERE uid = $1 AND task = ANY($2::text[]) AND state <> 2",
		[]any{uid, tasks, ready}})
	return err
}

// FleetRows implements kv.FleetTx: sorted by task.
func (t *tx) FleetRows(uid string) ([]kv.FleetRow, error) {
	list := []kv.FleetRow{}
	err := t.read(func(rows pgx.Rows) error {
		var r kv.FleetRow
		_, err := pgx.ForEachRow(rows, []any{&r.Task, &r.State, &r.Waiting, &r.Node, &r.Owner, &r.Fence, &r.Claims}, func() error {
			list = append(list, r)
			return nil
		})
		return err
	}, "SELECT task, state, waiting, node, coalesce(owner, ''), coalesce(fence, 0), claims FROM "+t.table("fleet_task")+
		" WHERE uid = $1 ORDER BY task", uid)
	if err != nil {
		return nil, t.failed("read rows", err)
	}
	return list, nil
}

// FleetDrop implements kv.FleetTx: the plan's rows and its plan row.
func (t *tx) FleetDrop(uid string) error {
	_, err := t.exec("drop plan",
		stmt{"DELETE FROM " + t.table("fleet_task") + " WHERE uid = $1", []any{uid}},
		stmt{"DELETE FROM " + t.table("fleet_plan") + " WHERE uid = $1", []any{uid}})
	return err
}

// FleetReap implements kv.FleetTx: the longest expired first.
func (t *tx) FleetReap(max int) ([]kv.Claim, error) {
	if !t.writable {
		return nil, kv.ErrReadOnly
	}
	list := []kv.Claim{}
	if max <= 0 {
		return list, nil
	}
	err := t.read(func(rows pgx.Rows) error {
		var c kv.Claim
		_, err := pgx.ForEachRow(rows, []any{&c.UID, &c.Task, &c.Owner, &c.Fence, &c.Epoch, &c.Claims, &c.Attempts, &c.Live}, func() error {
			list = append(list, c)
			return nil
		})
		return err
	}, "SELECT t.uid, t.task, t.owner, t.fence, p.epoch, t.claims, t.attempts - 1, p.live FROM "+t.table("fleet_task")+
		" t JOIN "+t.table("fleet_plan")+" p USING (uid) WHERE t.state = 2 AND t.lease_until < now()"+
		" ORDER BY t.lease_until LIMIT $1 FOR UPDATE OF t SKIP LOCKED", max)
	if err != nil {
		return nil, t.failed("reap", err)
	}
	return list, nil
}
