package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/solarops/solar/store/kv"
)

// statements are the SQL of one schema, built once at Open. pgx prepares
// and caches each on the connections that run it.
type statements struct {
	schema  string // quoted
	ready   string
	get     string
	getMany string
	has     string
	scan    string // key >= lo AND key < hi, ascending
	scanLo  string // key >= lo, ascending: the prefix has no upper bound
	last    string // key >= lo AND key < hi, descending
	lastLo  string
	put1    string
	upsert  string
	delete  string
	seq     string
	setSeq  string
}

func newStatements(schema string) statements {
	kvt := schema + ".kv"
	return statements{
		schema: schema,
		ready: "SELECT (SELECT max(version) FROM " + schema + ".solar_layout), " +
			"(SELECT value FROM " + kvt + " WHERE bucket = $1 AND key = 'schema_version'::bytea)",
		get:     "SELECT value FROM " + kvt + " WHERE bucket = $1 AND key = $2",
		getMany: "SELECT t.bucket, t.key, t.value FROM " + kvt + " AS t JOIN unnest($1::text[], $2::bytea[]) AS u(b, k) ON t.bucket = u.b AND t.key = u.k",
		// A small value comes with the answer, for the Get that often
		// follows a Has; a large one stays on the server.
		has:    "SELECT CASE WHEN octet_length(value) <= " + strconv.Itoa(hasValueMax) + " THEN value END FROM " + kvt + " WHERE bucket = $1 AND key = $2",
		scan:   "SELECT key, value FROM " + kvt + " WHERE bucket = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4",
		scanLo: "SELECT key, value FROM " + kvt + " WHERE bucket = $1 AND key >= $2 ORDER BY key LIMIT $3",
		last:   "SELECT key, value FROM " + kvt + " WHERE bucket = $1 AND key >= $2 AND key < $3 ORDER BY key DESC LIMIT $4",
		lastLo: "SELECT key, value FROM " + kvt + " WHERE bucket = $1 AND key >= $2 ORDER BY key DESC LIMIT $3",
		put1:   "INSERT INTO " + kvt + " (bucket, key, value) VALUES ($1, $2, $3)",
		// Rows whose value does not change are left alone: no dead tuple.
		upsert: "INSERT INTO " + kvt + " AS t (bucket, key, value) SELECT $1, k, v FROM unnest($2::bytea[], $3::bytea[]) AS u(k, v) " +
			"ON CONFLICT (bucket, key) DO UPDATE SET value = EXCLUDED.value WHERE t.value IS DISTINCT FROM EXCLUDED.value",
		delete: "DELETE FROM " + kvt + " WHERE bucket = $1 AND key = ANY($2::bytea[])",
		seq:    "SELECT n FROM " + schema + ".seq WHERE bucket = $1",
		setSeq: "INSERT INTO " + schema + ".seq (bucket, n) VALUES ($1, $2) " +
			"ON CONFLICT (bucket) DO UPDATE SET n = EXCLUDED.n",
	}
}

// hasValueMax is the largest value Has brings back with its answer.
const hasValueMax = 4096

// The statements that begin a transaction. They are not sent on their own
// but in front of the transaction's first statement (tx.read, tx.commit), so
// that they cost no round trip, and a transaction that sends no statement
// begins nothing on the server.
const (
	beginUpdate = "BEGIN ISOLATION LEVEL SERIALIZABLE"
	beginView   = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
)

// Limits of one flush statement: rows, and bytes of keys and values.
const (
	flushRows  = 5000
	flushBytes = 16 << 20
)

// tx is one transaction. Reads go to PostgreSQL, through the transaction's
// own pending writes (w) and a cache of what it read: within one snapshot a
// key read twice has the same value unless this transaction wrote it, which
// w answers first. The transaction runs on conn, which it owns until end.
type tx struct {
	s    *Store
	ctx  context.Context
	conn *pgx.Conn
	// begin is the BEGIN statement still to send, in front of the first
	// statement; empty once sent.
	begin    string
	writable bool
	w        kv.Writes
	cache    map[string]map[string]cached // bucket -> key -> what PostgreSQL said
	seqs     map[string]uint64            // bucket -> its counter in PostgreSQL
	// lookups counts the point reads that went to the server per family
	// of keys (bucket and key up to its first '/'); loaded holds the
	// families read whole into cache, where a missing key is absent.
	lookups map[family]int
	loaded  map[family]bool
	rows    map[family][]row // of each loaded family, in key order
	// notes are the notifications to send with COMMIT (notify.go).
	notes []string
	// err is the first failed query: PostgreSQL aborts the transaction
	// then, so it cannot commit, and a serialization failure here must
	// reach Update's retry even when fn drops it (Has has no error).
	err error
}

type cached struct {
	v       []byte // nil when only presence is known
	present bool
}

func newTx(s *Store, ctx context.Context, conn *pgx.Conn, writable bool) *tx {
	t := &tx{s: s, ctx: ctx, conn: conn, begin: beginView, writable: writable}
	if writable {
		t.begin = beginUpdate
	}
	return t
}

// read runs one query of the transaction, preceded by its BEGIN in the same
// round trip when it is the first, and passes the rows to fn. fn must read
// them and not query: the connection is busy until it returns.
func (t *tx) read(fn func(pgx.Rows) error, sql string, args ...any) error {
	if t.begin == "" {
		rows, err := t.conn.Query(t.ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := fn(rows); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	b := &pgx.Batch{}
	b.Queue(t.begin)
	b.Queue(sql, args...).Query(fn)
	begin := t.begin
	t.begin = ""
	// A failed BEGIN stops the batch before the query: Close returns the
	// first error, and the server skips the rest up to the batch's end.
	err := t.conn.SendBatch(t.ctx, b).Close()
	if err != nil && t.conn.PgConn().TxStatus() == 'I' {
		// Nothing ran (the query did not prepare): still to begin.
		t.begin = begin
	}
	return err
}

// commit sends the pending writes and COMMIT in one batch, with BEGIN in
// front when the transaction has sent nothing yet; a transaction that read
// nothing and writes nothing sends nothing. A failed write makes the server
// skip the rest of the batch, COMMIT included: the error is the write's,
// and end rolls back.
func (t *tx) commit() error {
	b := &pgx.Batch{}
	if err := t.flush(b); err != nil {
		return err
	}
	t.queueNotes(b)
	if t.begin != "" {
		if b.Len() == 0 {
			return nil
		}
		b.QueuedQueries = slices.Insert(b.QueuedQueries, 0, &pgx.QueuedQuery{SQL: t.begin})
		t.begin = ""
	}
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		// The answer to COMMIT of a transaction the server had aborted.
		if tag.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	return t.conn.SendBatch(t.ctx, b).Close()
}

// end rolls back what is left open on the server: a transaction that failed
// or was not committed (a View, an Update whose fn failed or panicked).
// A connection whose rollback fails is closed, and the pool drops it.
func (t *tx) end() {
	if t.conn.IsClosed() || t.conn.PgConn().TxStatus() == 'I' {
		return
	}
	if _, err := t.conn.Exec(t.ctx, "ROLLBACK"); err != nil {
		_ = t.conn.Close(t.ctx)
	}
}

// failed records a failed query and returns it as an Error of the store.
func (t *tx) failed(op string, err error) error {
	err = t.s.fail(op, err)
	if t.err == nil {
		t.err = err
	}
	return err
}

func (t *tx) check(bucket string) {
	if !t.s.buckets[bucket] {
		panic("store: unknown bucket " + bucket) // a bug, as in the bbolt backend
	}
}

func (t *tx) Writable() bool { return t.writable }

func (t *tx) remember(bucket, key string, c cached) {
	if t.cache == nil {
		t.cache = map[string]map[string]cached{}
	}
	m := t.cache[bucket]
	if m == nil {
		m = map[string]cached{}
		t.cache[bucket] = m
	}
	m[key] = c
}

// family is a bucket's keys sharing what comes before their first '/'
// ("t/" of "t/on a.run changed b.run"), or the whole bucket for keys
// without one.
type family struct{ bucket, prefix string }

func familyOf(bucket, key string) family {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return family{bucket, key[:i+1]}
	}
	return family{bucket, ""}
}

// Bulk reads: a transaction that looks up many keys of one family one at a
// time (a composition checking 10,000 new names, 30,000 new rules) reads
// the family whole once instead, after wholeAfter lookups, when it has at
// most wholeMax keys; then each lookup is answered here. Small
// transactions (a runner's commit) never reach the threshold.
const (
	wholeAfter = 64
	wholeMax   = 1 << 20
)

// known answers a lookup from the cache: ok false when the server must be
// asked. A family read whole knows its missing keys too.
func (t *tx) known(bucket, key string, needValue bool) (c cached, ok bool) {
	if c, ok := t.cache[bucket][key]; ok && (!needValue || c.v != nil || !c.present) {
		return c, true
	}
	f := familyOf(bucket, key)
	if t.loaded[f] {
		return t.cache[bucket][key], true // absent when not there
	}
	if t.lookups == nil {
		t.lookups, t.loaded = map[family]int{}, map[family]bool{}
	}
	if t.lookups[f]++; t.lookups[f] != wholeAfter {
		return cached{}, false
	}
	if t.loadFamily(f) != nil {
		return cached{}, false // the lookup itself will fail, or say why
	}
	if !t.loaded[f] {
		return cached{}, false
	}
	return t.cache[bucket][key], true
}

// loadFamily reads every key of family f into the cache, unless it has
// more than wholeMax.
func (t *tx) loadFamily(f family) error {
	var rows []row
	lo := []byte(f.prefix)
	collect := func(r pgx.Rows) error {
		for r.Next() {
			var k, v []byte
			if err := r.Scan(&k, &v); err != nil {
				return err
			}
			if v == nil {
				v = []byte{}
			}
			rows = append(rows, row{k: string(k), v: v})
		}
		return nil
	}
	var err error
	if hi := kv.PrefixEnd(lo); hi != nil {
		err = t.read(collect, t.s.sql.scan, f.bucket, lo, hi, wholeMax+1)
	} else {
		err = t.read(collect, t.s.sql.scanLo, f.bucket, lo, wholeMax+1)
	}
	if err != nil {
		return t.failed("read", err)
	}
	if len(rows) > wholeMax {
		return nil // too big to hold: ask key by key
	}
	// The same snapshot as every earlier read: overwriting a cached
	// answer changes nothing but fills in values Has left out.
	for _, r := range rows {
		t.remember(f.bucket, r.k, cached{v: r.v, present: true})
	}
	t.loaded[f] = true
	if t.rows == nil {
		t.rows = map[family][]row{}
	}
	t.rows[f] = rows // in key order: the query sorts them
	return nil
}

// Prefetch reads keys, of any buckets, in one round trip into the
// transaction's cache, for the Gets and Hases that follow (a runner's
// commit reads the same few records of its task every time).
func (t *tx) Prefetch(keys ...kv.Key) error {
	var buckets []string
	var ask [][]byte
	for _, k := range keys {
		t.check(k.Bucket)
		if _, ok := t.w.Lookup(k.Bucket, k.Key); ok {
			continue
		}
		if c, ok := t.cache[k.Bucket][k.Key]; ok && (c.v != nil || !c.present) {
			continue
		}
		buckets, ask = append(buckets, k.Bucket), append(ask, []byte(k.Key))
	}
	if len(ask) == 0 {
		return nil
	}
	found := map[kv.Key][]byte{}
	err := t.read(func(rows pgx.Rows) error {
		for rows.Next() {
			var b string
			var k, v []byte
			if err := rows.Scan(&b, &k, &v); err != nil {
				return err
			}
			if v == nil {
				v = []byte{}
			}
			found[kv.Key{Bucket: b, Key: string(k)}] = v
		}
		return nil
	}, t.s.sql.getMany, buckets, ask)
	if err != nil {
		return t.failed("get", err)
	}
	for i, k := range ask {
		v, ok := found[kv.Key{Bucket: buckets[i], Key: string(k)}]
		t.remember(buckets[i], string(k), cached{v: v, present: ok})
	}
	return nil
}

// readOne runs a query of one key that answers with its value, if any.
func (t *tx) readOne(sql, bucket, key string) (v []byte, found bool, err error) {
	err = t.read(func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		found = true
		return rows.Scan(&v)
	}, sql, bucket, []byte(key))
	return v, found, err
}

func (t *tx) Get(bucket, key string) ([]byte, error) {
	t.check(bucket)
	if e, ok := t.w.Lookup(bucket, key); ok {
		if e.Deleted {
			return nil, kv.ErrNotFound
		}
		return bytes.Clone(e.V), nil
	}
	if c, ok := t.known(bucket, key, true); ok {
		if !c.present {
			return nil, kv.ErrNotFound
		}
		return bytes.Clone(c.v), nil
	}
	v, found, err := t.readOne(t.s.sql.get, bucket, key)
	if err != nil {
		return nil, t.failed("get", err)
	}
	if !found {
		t.remember(bucket, key, cached{})
		return nil, kv.ErrNotFound
	}
	if v == nil {
		v = []byte{}
	}
	t.remember(bucket, key, cached{v: v, present: true})
	return bytes.Clone(v), nil
}

func (t *tx) Has(bucket, key string) bool {
	t.check(bucket)
	if e, ok := t.w.Lookup(bucket, key); ok {
		return !e.Deleted
	}
	if c, ok := t.known(bucket, key, false); ok {
		return c.present
	}
	v, found, err := t.readOne(t.s.sql.has, bucket, key)
	if err != nil {
		_ = t.failed("has", err)
		return false
	}
	// v is nil when the value is too large to come along (or, should the
	// driver give nil for an empty one, then Get asks again).
	t.remember(bucket, key, cached{v: v, present: found})
	return found
}

func (t *tx) Put(bucket, key string, value []byte) error {
	if !t.writable {
		return kv.ErrReadOnly
	}
	t.check(bucket)
	if value == nil {
		value = []byte{}
	}
	t.w.Set(bucket, key, bytes.Clone(value), false)
	return nil
}

func (t *tx) Delete(bucket, key string) error {
	if !t.writable {
		return kv.ErrReadOnly
	}
	t.check(bucket)
	t.w.Set(bucket, key, nil, true)
	return nil
}

// row is a key and value read from PostgreSQL.
type row struct {
	k string
	v []byte
}

// Chunks of a scan: small first, since many scans stop early (ErrStop,
// Last), then larger. Each chunk is read whole before any callback runs,
// so callbacks may query (Get inside ForEach) on the same connection.
const (
	firstChunk = 64
	maxChunk   = 4096
)

// baseScan calls fn for PostgreSQL's keys of bucket with prefix, in order
// (desc: in reverse), chunk by chunk.
func (t *tx) baseScan(bucket, prefix string, desc bool, fn func(r row) error) error {
	if rows, ok := t.scanned(bucket, prefix); ok {
		i, _ := slices.BinarySearchFunc(rows, prefix, func(r row, p string) int { return strings.Compare(r.k, p) })
		j := i
		for j < len(rows) && strings.HasPrefix(rows[j].k, prefix) {
			j++
		}
		rows = rows[i:j]
		for n := range rows {
			r := rows[n]
			if desc {
				r = rows[len(rows)-1-n]
			}
			if err := fn(row{k: r.k, v: bytes.Clone(r.v)}); err != nil {
				return err
			}
		}
		return nil
	}
	lo, hi := []byte(prefix), kv.PrefixEnd([]byte(prefix))
	for limit := firstChunk; ; limit = min(limit*4, maxChunk) {
		var sql string
		args := []any{bucket, lo, hi, limit}
		switch {
		case !desc && hi != nil:
			sql = t.s.sql.scan
		case !desc:
			sql, args = t.s.sql.scanLo, []any{bucket, lo, limit}
		case hi != nil:
			sql = t.s.sql.last
		default:
			sql, args = t.s.sql.lastLo, []any{bucket, lo, limit}
		}
		chunk := make([]row, 0, limit)
		err := t.read(func(rows pgx.Rows) error {
			for rows.Next() {
				raw := rows.RawValues()
				chunk = append(chunk, row{k: string(raw[0]), v: bytes.Clone(raw[1])})
			}
			return nil
		}, sql, args...)
		if err != nil {
			return t.failed("read", err)
		}
		for _, r := range chunk {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(chunk) < limit {
			return nil
		}
		// The next chunk starts past the last key read.
		if k := chunk[len(chunk)-1].k; desc {
			hi = []byte(k)
		} else {
			lo = append([]byte(k), 0)
		}
	}
}

// scanned returns the server's rows of a family read whole that holds
// every key with prefix, reading the family whole once it has been scanned
// or looked up wholeAfter times.
func (t *tx) scanned(bucket, prefix string) ([]row, bool) {
	f := family{bucket, ""}
	if i := strings.IndexByte(prefix, '/'); i >= 0 {
		f.prefix = prefix[:i+1]
	}
	for _, g := range []family{f, {bucket, ""}} {
		if t.loaded[g] {
			return t.rows[g], true
		}
	}
	if t.lookups == nil {
		t.lookups, t.loaded = map[family]int{}, map[family]bool{}
	}
	if t.lookups[f]++; t.lookups[f] != wholeAfter || t.loadFamily(f) != nil || !t.loaded[f] {
		return nil, false
	}
	return t.rows[f], true
}

// errStopped ends a base scan whose consumer is done.
var errStopped = errors.New("scan stopped")

func (t *tx) ForEach(bucket, prefix string, fn func(key string, value []byte) error) error {
	t.check(bucket)
	call := func(k string, v []byte) error {
		if err := fn(k, v); err != nil {
			if errors.Is(err, kv.ErrStop) {
				return errStopped
			}
			return &callbackError{err}
		}
		return nil
	}
	keys := t.w.Keys(bucket, prefix)
	i := 0
	// emit sends the pending keys below limit (all when all), skipping
	// deletions.
	emit := func(limit string, all bool) error {
		for ; i < len(keys) && (all || keys[i] < limit); i++ {
			e, _ := t.w.Lookup(bucket, keys[i])
			if e.Deleted {
				continue
			}
			if err := call(keys[i], e.V); err != nil {
				i++
				return err
			}
		}
		return nil
	}
	err := t.baseScan(bucket, prefix, false, func(r row) error {
		if err := emit(r.k, false); err != nil {
			return err
		}
		if i < len(keys) && keys[i] == r.k {
			i++
			e, _ := t.w.Lookup(bucket, r.k)
			if e.Deleted {
				return nil
			}
			r.v = e.V
		}
		return call(r.k, r.v)
	})
	if err == nil {
		err = emit("", true)
	}
	var ce *callbackError
	switch {
	case err == nil, errors.Is(err, errStopped):
		return nil
	case errors.As(err, &ce):
		return ce.err
	}
	return err
}

// callbackError carries a ForEach callback's own error through the scan.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

func (t *tx) Last(bucket, prefix string) (string, []byte, error) {
	t.check(bucket)
	// The greatest pending key that is not a deletion...
	var pk string
	var pv []byte
	pending := false
	keys := t.w.Keys(bucket, prefix)
	for j := len(keys) - 1; j >= 0; j-- {
		if e, _ := t.w.Lookup(bucket, keys[j]); !e.Deleted {
			pk, pv, pending = keys[j], e.V, true
			break
		}
	}
	// ...against PostgreSQL's greatest key that this transaction did not
	// delete.
	var bk string
	var bv []byte
	base := false
	err := t.baseScan(bucket, prefix, true, func(r row) error {
		if e, ok := t.w.Lookup(bucket, r.k); ok {
			if e.Deleted {
				return nil
			}
			r.v = e.V
		}
		bk, bv, base = r.k, r.v, true
		return errStopped
	})
	if err != nil && !errors.Is(err, errStopped) {
		return "", nil, err
	}
	switch {
	case base && (!pending || bk > pk):
		return bk, bytes.Clone(bv), nil
	case pending:
		return pk, bytes.Clone(pv), nil
	}
	return "", nil, kv.ErrNotFound
}

// baseSequence returns the bucket's counter in PostgreSQL, read once.
func (t *tx) baseSequence(bucket string) (uint64, error) {
	if n, ok := t.seqs[bucket]; ok {
		return n, nil
	}
	var n int64
	err := t.read(func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		return rows.Scan(&n)
	}, t.s.sql.seq, bucket)
	if err != nil {
		return 0, t.failed("read sequence", err)
	}
	if t.seqs == nil {
		t.seqs = map[string]uint64{}
	}
	t.seqs[bucket] = uint64(n)
	return uint64(n), nil
}

// NextSequence counts in the transaction and writes the counter at commit.
// Two transactions that take a number from one bucket both read and write
// its row, so SERIALIZABLE lets only one commit; Update runs the other
// again, and it takes the next number.
func (t *tx) NextSequence(bucket string) (uint64, error) {
	if !t.writable {
		return 0, kv.ErrReadOnly
	}
	n, err := t.Sequence(bucket)
	if err != nil {
		return 0, err
	}
	t.w.SetSeq(bucket, n+1)
	return n + 1, nil
}

func (t *tx) Sequence(bucket string) (uint64, error) {
	t.check(bucket)
	if n, ok := t.w.Seq(bucket); ok {
		return n, nil
	}
	return t.baseSequence(bucket)
}

func (t *tx) SetSequence(bucket string, n uint64) error {
	if !t.writable {
		return kv.ErrReadOnly
	}
	t.check(bucket)
	t.w.SetSeq(bucket, n)
	return nil
}

// flush queues the pending writes in b: per bucket, upserts and deletions
// of up to flushRows keys each, then the counters. Buckets and keys go in
// order, so that two transactions lock rows in the same order and deadlock
// less.
func (t *tx) flush(b *pgx.Batch) error {
	for _, bucket := range t.w.Buckets() {
		var putK, putV, del [][]byte
		size := 0
		send := func() {
			if len(putK) > 0 {
				b.Queue(t.s.sql.upsert, bucket, putK, putV)
			}
			if len(del) > 0 {
				b.Queue(t.s.sql.delete, bucket, del)
			}
			putK, putV, del, size = nil, nil, nil, 0
		}
		for _, k := range t.w.Keys(bucket, "") {
			e, _ := t.w.Lookup(bucket, k)
			if e.Deleted {
				del = append(del, []byte(k))
			} else {
				putK, putV = append(putK, []byte(k)), append(putV, e.V)
			}
			size += len(k) + len(e.V)
			if len(putK)+len(del) >= flushRows || size >= flushBytes {
				send()
			}
		}
		send()
	}
	for _, bucket := range t.w.SeqBuckets() {
		n, _ := t.w.Seq(bucket)
		if n > 1<<63-1 {
			return fmt.Errorf("sequence of %s: %d does not fit a bigint", bucket, n)
		}
		b.Queue(t.s.sql.setSeq, bucket, int64(n))
	}
	return nil
}
