package staging_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// now is the clock every test stager reads, so StagedAt and CommittedAt
// are known.
func now() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

// openStore opens a store in a temp dir and checks the file's consistency
// when the test ends.
func openStore(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "s.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Check(); err != nil {
			tb.Errorf("store consistency: %v", err)
		}
		if err := checkTagIndex(db); err != nil {
			tb.Errorf("staged tag index: %v", err)
		}
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	})
	return db
}

// checkTagIndex verifies that the tag index holds exactly one key per tag
// of every staged entry, so a tag selection finds what the log says.
func checkTagIndex(db *store.DB) error {
	return db.View(func(tx *store.Tx) error {
		want := map[string]bool{}
		ents, err := staging.List(tx)
		if err != nil {
			return err
		}
		for _, e := range ents {
			for k, v := range e.Tags {
				want[k+"="+v+"\x00"+e.Key] = true
			}
		}
		var extra []string
		if err := tx.ForEach(store.StagedTags, "", func(k string, _ []byte) error {
			if !want[k] {
				extra = append(extra, k)
			}
			delete(want, k)
			return nil
		}); err != nil {
			return err
		}
		if len(extra) > 0 || len(want) > 0 {
			return fmt.Errorf("stale keys %q, missing keys %v", extra, want)
		}
		return nil
	})
}

// run executes one command: one transaction with its own catalog and
// stager, as the CLI does. The test fails if the command fails.
func run(tb testing.TB, db *store.DB, fn func(cat *resources.Catalog, st *staging.Stager) error) {
	tb.Helper()
	if err := try(db, fn); err != nil {
		tb.Fatal(err)
	}
}

// try executes one command and returns its error; the transaction is
// rolled back on error.
func try(db *store.DB, fn func(cat *resources.Catalog, st *staging.Stager) error) error {
	return db.Update(func(tx *store.Tx) error {
		cat := resources.NewCatalog(tx)
		return fn(cat, staging.New(cat, now))
	})
}

var bases = map[string]*resources.Base{}

// base loads a base from testdata/resources once per test binary.
func base(name string) (*resources.Base, error) {
	if b, ok := bases[name]; ok {
		return b, nil
	}
	b, err := resources.LoadBase(filepath.Join("..", "testdata", "resources", name))
	if err != nil {
		return nil, err
	}
	bases[name] = b
	return b, nil
}

// create makes and stages a resource as "solar resource create NAME BASE
// ARGS... --tags TAGS" does. args are k=v words separated by spaces.
func create(cat *resources.Catalog, st *staging.Stager, name, baseName, tagList, args string) error {
	b, err := base(baseName)
	if err != nil {
		return err
	}
	vals, err := resources.ParseValues(strings.Fields(args))
	if err != nil {
		return err
	}
	ts, err := tags.ParseList([]string{tagList})
	if err != nil {
		return err
	}
	if _, err := cat.Create(resources.CreateSpec{Name: name, Base: b, Values: vals, Tags: ts}, false); err != nil {
		return err
	}
	_, err = st.Touch("create", name)
	return err
}

// update sets inputs and restages as "solar resource update" does.
func update(cat *resources.Catalog, st *staging.Stager, name, args string) error {
	vals, err := resources.ParseValues(strings.Fields(args))
	if err != nil {
		return err
	}
	if _, err := cat.Update(name, vals, resources.Meta{}); err != nil {
		return err
	}
	_, err = st.Touch("update", name)
	return err
}

// connect connects and restages the receiver as "solar connect" does.
// mapping is "a->b,c->d" or "" for the default.
func connect(cat *resources.Catalog, st *staging.Stager, emitter, receiver, mapping string) error {
	var args []string
	if mapping != "" {
		args = []string{mapping}
	}
	ms, err := resources.ParseMappings(args)
	if err != nil {
		return err
	}
	if _, err := cat.Connect(emitter, receiver, ms); err != nil {
		return err
	}
	_, err = st.Touch("connect "+emitter, receiver)
	return err
}

// commit simulates a successful task for each key, in order, with the
// inputs current at that moment.
func commit(st *staging.Stager, keys ...string) error {
	for _, k := range keys {
		if _, err := st.Commit(k, "plan-1", "x.run#0", nil); err != nil {
			return err
		}
	}
	return nil
}

// logKeys returns the staged keys in staging order.
func logKeys(tb testing.TB, db *store.DB) []string {
	tb.Helper()
	var keys []string
	err := db.View(func(tx *store.Tx) error {
		ents, err := staging.List(tx)
		for _, e := range ents {
			keys = append(keys, e.Key)
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return keys
}

// entry returns one staged entry as stored.
func entry(tb testing.TB, db *store.DB, key string) *staging.Entry {
	tb.Helper()
	var e *staging.Entry
	err := db.View(func(tx *store.Tx) error {
		var err error
		e, err = staging.Get(tx, key)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// lines renders a diff unmasked, one string per change: "+ k=v",
// "~ k=old>>new", "- k=v", "+ conn a.x -> y", with " (sensitive)" appended
// for sensitive inputs. Numbers render the same whether they come back
// from the store as float64 or straight from the catalog as int64.
func lines(d []staging.Change) []string {
	out := []string{}
	for _, c := range d {
		sign := map[string]string{staging.OpAdd: "+ ", staging.OpChange: "~ ", staging.OpRemove: "- "}[c.Op]
		if c.Connection {
			out = append(out, sign+"conn "+c.Key)
			continue
		}
		var s string
		switch c.Op {
		case staging.OpAdd:
			s = c.Key + "=" + schema.Format(c.New)
		case staging.OpRemove:
			s = c.Key + "=" + schema.Format(c.Old)
		default:
			s = c.Key + "=" + schema.Format(c.Old) + ">>" + schema.Format(c.New)
		}
		if c.Sensitive {
			s += " (sensitive)"
		}
		out = append(out, sign+s)
	}
	return out
}

func keysOf(ents []*staging.Entry) []string {
	out := []string{}
	for _, e := range ents {
		out = append(out, e.Key)
	}
	return out
}

func TestNewResourceStagesRunWithEveryInputAdded(t *testing.T) {
	tests := []struct {
		name, base, tags, args string
		want                   []string
		wantTags               tags.Set
	}{
		{
			name: "db", base: "mariadb", tags: "env1,tier=data", args: "dir=/srv port=3307 root_password=s3cret",
			want:     []string{"+ dir=/srv", "+ ip=127.0.0.1", "+ port=3307", "+ root_password=s3cret (sensitive)", "+ location="},
			wantTags: tags.Set{"env1": "", "tier": "data", "role": "db", "resource": "db"},
		},
		{
			name: "n1", base: "node", args: "ip=10.0.0.1",
			want:     []string{"+ transport=local", "+ ip=10.0.0.1", "+ ssh_port=22", "+ ssh_user=", "+ ssh_key=", "+ location=n1"},
			wantTags: tags.Set{"role": "node", "resource": "n1"},
		},
		{
			name: "ks", base: "keystone", tags: "env=prod", args: "dir=/srv",
			want: []string{"+ dir=/srv", "+ port=5000", "+ admin_port=35357", "+ db_host=127.0.0.1",
				"+ db_port=3306", "+ db_password= (sensitive)", "+ location="},
			wantTags: tags.Set{"env": "prod", "role": "api", "resource": "ks"},
		},
		{
			name: "lb", base: "haproxy", args: `dir=/srv ports=[80,443]`,
			want:     []string{"+ dir=/srv", "+ backends=[]", "+ ports=[80,443]", "+ location="},
			wantTags: tags.Set{"role": "lb", "resource": "lb"},
		},
		{
			name: "pw", base: "password", args: "dir=/srv length=8",
			want:     []string{"+ dir=/srv", "+ length=8", "+ password= (sensitive)", "+ location="},
			wantTags: tags.Set{"role": "secret", "resource": "pw"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			db := openStore(t)
			var got []*staging.Entry
			run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
				b, err := base(tt.base)
				if err != nil {
					return err
				}
				vals, _ := resources.ParseValues(strings.Fields(tt.args))
				ts, _ := tags.ParseList([]string{tt.tags})
				if _, err := cat.Create(resources.CreateSpec{Name: tt.name, Base: b, Values: vals, Tags: ts}, false); err != nil {
					return err
				}
				got, err = st.Touch("create", tt.name)
				return err
			})
			if diff := cmp.Diff([]string{tt.name + ".run"}, keysOf(got)); diff != "" {
				t.Fatalf("Touch returned (-want +got):\n%s", diff)
			}
			// What "ch stage" shows is what the store holds.
			e := entry(t, db, tt.name+".run")
			if diff := cmp.Diff(tt.want, lines(e.Diff)); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTags, e.Tags); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			if e.Resource != tt.name || e.Action != staging.ActionRun || e.Cause != "create" || !e.StagedAt.Equal(now()) || len(e.AffectedBy) != 0 {
				t.Errorf("entry = %+v, want resource %s, action run, cause create, staged now, no affected_by", e, tt.name)
			}
		})
	}
}

func TestRestagingKeepsOneEntryInItsPlace(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if err := create(cat, st, "a", "noop", "", "value=1"); err != nil {
			return err
		}
		return create(cat, st, "b", "noop", "", "value=1")
	})
	seqA := entry(t, db, "a.run").Seq
	// Each command restages; a.run must stay first and single.
	for _, v := range []string{"2", "3"} {
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := update(cat, st, "a", "value="+v); err != nil {
				return err
			}
			_, err := st.Touch("touch again", "a", "a")
			return err
		})
	}
	if diff := cmp.Diff([]string{"a.run", "b.run"}, logKeys(t, db)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	e := entry(t, db, "a.run")
	if e.Seq != seqA {
		t.Errorf("a.run seq = %d after restaging, want %d (its staging order)", e.Seq, seqA)
	}
	if diff := cmp.Diff([]string{"+ value=3", "+ location="}, lines(e.Diff)); diff != "" {
		t.Errorf("a.run diff (-want +got):\n%s", diff)
	}
}

func TestUpdateAfterCommitStagesExactChange(t *testing.T) {
	tests := []struct {
		name, base, args, change, back string
		want                           []string
	}{
		{"scalar", "mariadb", "dir=/srv root_password=pw", "port=3307", "port=3306", []string{"~ port=3306>>3307"}},
		{"sensitive", "mariadb", "dir=/srv root_password=pw", "root_password=other", "root_password=pw", []string{"~ root_password=pw>>other (sensitive)"}},
		{"list", "haproxy", "dir=/srv", "ports=[80]", "ports=[]", []string{"~ ports=[]>>[80]"}},
		{"two inputs", "noop", "value=a", "value=b location=n2", "value=a location=", []string{"~ value=a>>b", "~ location=>>n2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openStore(t)
			run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
				return create(cat, st, "r", tt.base, "", tt.args)
			})
			run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return commit(st, "r.run") })
			if got := logKeys(t, db); len(got) != 0 {
				t.Fatalf("log after commit = %v, want empty", got)
			}
			run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "r", tt.change) })
			if diff := cmp.Diff([]string{"r.update"}, logKeys(t, db)); diff != "" {
				t.Fatalf("log (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, lines(entry(t, db, "r.update").Diff)); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
			// Going back to the committed values leaves nothing to do.
			run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "r", tt.back) })
			if got := logKeys(t, db); len(got) != 0 {
				t.Errorf("log after updating back = %v, want empty", got)
			}
		})
	}
}

func TestStageActionExplicitly(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		for _, r := range []struct{ name, tag string }{{"db1", "env=1"}, {"db2", "env=2"}, {"db3", "env=1"}} {
			if err := create(cat, st, r.name, "mariadb", r.tag, "dir=/srv root_password=pw"); err != nil {
				return err
			}
		}
		return commit(st, "db1.run", "db2.run", "db3.run")
	})

	t.Run("committed resource with no diff", func(t *testing.T) {
		var e *staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			var err error
			e, err = st.StageAction("db2", "restart")
			return err
		})
		got := entry(t, db, "db2.restart")
		if got.Key != e.Key || got.Action != "restart" || len(got.Diff) != 0 || got.Tags["env"] != "2" {
			t.Errorf("db2.restart = %+v, want action restart, empty diff, tags env=2", got)
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.Discard("db2.restart")
			return err
		})
	})

	t.Run("action the base lacks", func(t *testing.T) {
		err := try(db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.StageAction("db1", "reload")
			return err
		})
		if !errors.Is(err, staging.ErrUnknownAction) {
			t.Fatalf("StageAction(db1, reload) = %v, want ErrUnknownAction", err)
		}
		for _, want := range []string{"db1", `"reload"`, "restart"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log = %v, want empty", got)
		}
	})

	t.Run("by tag", func(t *testing.T) {
		expr, err := tags.ParseExpr("env=1")
		if err != nil {
			t.Fatal(err)
		}
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			list, err := cat.List(expr)
			if err != nil {
				return err
			}
			for _, r := range list {
				if _, err := st.StageAction(r.Name, "restart"); err != nil {
					return err
				}
			}
			return nil
		})
		if diff := cmp.Diff([]string{"db1.restart", "db3.restart"}, logKeys(t, db)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})

	t.Run("explicit update survives an update back", func(t *testing.T) {
		// The operator asked for db3.update; a no-op change must not
		// forget that request.
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			_, err := st.StageAction("db3", staging.ActionUpdate)
			return err
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "db3", "port=3307") })
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "db3", "port=3306") })
		e := entry(t, db, "db3.update")
		if len(e.Diff) != 0 {
			t.Errorf("db3.update diff = %v, want empty", lines(e.Diff))
		}
	})
}

// chain builds file resources t1 -> t2 -> t3 (t1.content -> t2.content and
// t2.<second> -> t3.<second>), all committed.
func chain(t *testing.T, second string) *store.DB {
	t.Helper()
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		for _, n := range []string{"t1", "t2", "t3"} {
			if err := create(cat, st, n, "file", "env="+n, "dir=/srv content=hello path="+n); err != nil {
				return err
			}
		}
		if err := connect(cat, st, "t1", "t2", "content->content"); err != nil {
			return err
		}
		if err := connect(cat, st, "t2", "t3", second+"->"+second); err != nil {
			return err
		}
		return commit(st, "t1.run", "t2.run", "t3.run")
	})
	if got := logKeys(t, db); len(got) != 0 {
		t.Fatalf("log after committing the chain = %v, want empty", got)
	}
	return db
}

func TestAffectedChildren(t *testing.T) {
	t.Run("change stops where the mapping does not carry it", func(t *testing.T) {
		db := chain(t, "mode")
		var got []*staging.Entry
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if _, err := cat.Update("t1", resources.Values{Text: map[string]string{"content": "bye"}}, resources.Meta{}); err != nil {
				return err
			}
			var err error
			got, err = st.Touch("update", "t1")
			return err
		})
		if diff := cmp.Diff([]string{"t1.update", "t2.update"}, keysOf(got)); diff != "" {
			t.Errorf("Touch returned (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"t1.update", "t2.update"}, logKeys(t, db)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
		kid := entry(t, db, "t2.update")
		if diff := cmp.Diff([]string{"~ content=hello>>bye (sensitive)"}, lines(kid.Diff)); diff != "" {
			t.Errorf("t2.update diff (-want +got):\n%s", diff)
		}
		if len(kid.Tags) != 0 || !cmp.Equal(kid.AffectedBy, []string{"t1"}) {
			t.Errorf("t2.update tags %v, affected_by %v; want no tags, affected_by [t1]", kid.Tags, kid.AffectedBy)
		}
	})

	t.Run("change flows to the end of the chain", func(t *testing.T) {
		db := chain(t, "content")
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "t1", "content=bye") })
		if diff := cmp.Diff([]string{"t1.update", "t2.update", "t3.update"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log (-want +got):\n%s", diff)
		}
		for key, by := range map[string]string{"t2.update": "t1", "t3.update": "t2"} {
			e := entry(t, db, key)
			if len(e.Tags) != 0 || !cmp.Equal(e.AffectedBy, []string{by}) {
				t.Errorf("%s tags %v, affected_by %v; want no tags, affected_by [%s]", key, e.Tags, e.AffectedBy, by)
			}
		}
		// Back to the committed value: no child has anything left to do.
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "t1", "content=hello") })
		if got := logKeys(t, db); len(got) != 0 {
			t.Errorf("log after updating back = %v, want empty", got)
		}
	})

	t.Run("fan-out", func(t *testing.T) {
		db := openStore(t)
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if err := create(cat, st, "hub", "file", "", "dir=/srv path=hub content=a"); err != nil {
				return err
			}
			for _, n := range []string{"r1", "r2", "r3"} {
				if err := create(cat, st, n, "file", "", "dir=/srv path="+n); err != nil {
					return err
				}
				if err := connect(cat, st, "hub", n, "content->content"); err != nil {
					return err
				}
			}
			return commit(st, "hub.run", "r1.run", "r2.run", "r3.run")
		})
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "hub", "content=b") })
		if diff := cmp.Diff([]string{"hub.update", "r1.update", "r2.update", "r3.update"}, logKeys(t, db)); diff != "" {
			t.Fatalf("log (-want +got):\n%s", diff)
		}
		for _, n := range []string{"r1", "r2", "r3"} {
			if e := entry(t, db, n+".update"); !cmp.Equal(e.AffectedBy, []string{"hub"}) {
				t.Errorf("%s.update affected_by = %v, want [hub]", n, e.AffectedBy)
			}
		}
	})

	t.Run("mode change does not reach a content receiver", func(t *testing.T) {
		db := chain(t, "content")
		// t1 -> t2 carries content only; a mode change stays on t1.
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "t1", "mode=0644") })
		if diff := cmp.Diff([]string{"t1.update"}, logKeys(t, db)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})
}

func TestConnectStagesReceiver(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if err := create(cat, st, "n1", "node", "", "ip=10.0.0.1"); err != nil {
			return err
		}
		if err := create(cat, st, "db", "mariadb", "env=1", "dir=/srv root_password=pw"); err != nil {
			return err
		}
		return commit(st, "n1.run", "db.run")
	})
	var got []*staging.Entry
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := cat.Connect("n1", "db", nil); err != nil {
			return err
		}
		var err error
		got, err = st.Touch("connect n1", "db")
		return err
	})
	if diff := cmp.Diff([]string{"db.update"}, keysOf(got)); diff != "" {
		t.Fatalf("Touch returned (-want +got):\n%s", diff)
	}
	e := entry(t, db, "db.update")
	want := []string{"~ ip=127.0.0.1>>10.0.0.1", "~ location=>>n1", "+ conn n1.ip -> ip", "+ conn n1.location -> location"}
	if diff := cmp.Diff(want, lines(e.Diff)); diff != "" {
		t.Errorf("db.update diff (-want +got):\n%s", diff)
	}
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		d, err := st.Diff("db")
		if diff := cmp.Diff(want, lines(d)); diff != "" {
			t.Errorf("Diff(db) (-want +got):\n%s", diff)
		}
		return err
	})
	if e.Tags["env"] != "1" || e.Cause != "connect n1" {
		t.Errorf("db.update tags %v cause %q, want the receiver's tags and the connect as cause", e.Tags, e.Cause)
	}
	// Disconnecting gives the receiver its own values back.
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		if _, err := cat.Disconnect("n1", "db"); err != nil {
			return err
		}
		_, err := st.Touch("disconnect n1", "db")
		return err
	})
	if got := logKeys(t, db); len(got) != 0 {
		t.Errorf("log after disconnect = %v, want empty", got)
	}
}

// selectionStore stages, on committed noop resources:
//
//	a (env=1) -> c -> d   value->value: a.update, c.update, d.update
//	b (env=2) -> e        value->value: b.update, e.update
//	x (env=2) -> c        value->location; x changes its own location only
//	f (env=1)             f.restart, staged by hand
func selectionStore(t *testing.T) *store.DB {
	t.Helper()
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		for _, r := range []struct{ name, tag string }{{"a", "env=1"}, {"b", "env=2"}, {"c", ""}, {"d", ""}, {"e", ""}, {"f", "env=1"}, {"x", "env=2"}} {
			if err := create(cat, st, r.name, "noop", r.tag, "value=0"); err != nil {
				return err
			}
		}
		for _, c := range []struct{ from, to, m string }{{"a", "c", "value->value"}, {"c", "d", "value->value"}, {"b", "e", "value->value"}, {"x", "c", "value->location"}} {
			if err := connect(cat, st, c.from, c.to, c.m); err != nil {
				return err
			}
		}
		return commit(st, "a.run", "b.run", "c.run", "d.run", "e.run", "f.run", "x.run")
	})
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "a", "value=1") })
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "b", "value=2") })
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error { return update(cat, st, "x", "location=n9") })
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		_, err := st.StageAction("f", "restart")
		return err
	})
	want := []string{"a.update", "c.update", "d.update", "b.update", "e.update", "x.update", "f.restart"}
	if diff := cmp.Diff(want, logKeys(t, db)); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	return db
}

func TestSelect(t *testing.T) {
	db := selectionStore(t)
	env1 := []string{"a.update", "c.update", "d.update", "f.restart"}
	env2 := []string{"b.update", "e.update", "x.update"}
	tests := []struct {
		expr string
		want []string
	}{
		{"env=1", env1},
		{"env=2", env2},
		{"env=1 | env=3", env1},     // no index term
		{"!env=2", env1},            // negation: untagged entries follow their causes only
		{"role=noop & env=1", env1}, // index on the first term, Match on all
		{"env=*", []string{"a.update", "c.update", "d.update", "b.update", "e.update", "x.update", "f.restart"}},
		{"resource=c", []string{}},           // a child is selected through its cause, never alone
		{"resource=x", []string{"x.update"}}, // x's change does not flow to c
		{"resource=a", []string{"a.update", "c.update", "d.update"}},
		{"env=3", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			expr, err := tags.ParseExpr(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			var got []*staging.Entry
			if err := db.View(func(tx *store.Tx) error {
				got, err = staging.Select(tx, expr)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, keysOf(got)); diff != "" {
				t.Errorf("Select(%s) (-want +got):\n%s", tt.expr, diff)
			}
			checkHeads(t, db, expr, got)
		})
	}
	t.Run("nil selects all", func(t *testing.T) {
		var got []*staging.Entry
		if err := db.View(func(tx *store.Tx) error {
			var err error
			got, err = staging.Select(tx, nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(logKeys(t, db), keysOf(got)); diff != "" {
			t.Errorf("Select(nil) (-want +got):\n%s", diff)
		}
		checkHeads(t, db, nil, got)
	})
}

// checkHeads checks that SelectHeads, which "ch process" plans from,
// selects the entries Select does, in the same order, with the same key,
// resource, action, sequence, tags and causes.
func checkHeads(t *testing.T, db *store.DB, expr *tags.Expr, want []*staging.Entry) {
	t.Helper()
	var heads []*staging.Head
	if err := db.View(func(tx *store.Tx) error {
		var err error
		heads, err = staging.SelectHeads(tx, expr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wantHeads := make([]*staging.Head, len(want))
	for i, e := range want {
		wantHeads[i] = &staging.Head{Key: e.Key, Resource: e.Resource, Action: e.Action, Seq: e.Seq, Tags: e.Tags, AffectedBy: e.AffectedBy}
	}
	if diff := cmp.Diff(wantHeads, heads, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("SelectHeads(%v) (-Select +SelectHeads):\n%s", expr, diff)
	}
}

func TestRetagMovesEntryInIndex(t *testing.T) {
	db := openStore(t)
	run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
		return create(cat, st, "a", "noop", "env=1", "")
	})
	selectKeys := func(s string) []string {
		t.Helper()
		expr, err := tags.ParseExpr(s)
		if err != nil {
			t.Fatal(err)
		}
		var got []*staging.Entry
		if err := db.View(func(tx *store.Tx) error {
			got, err = staging.Select(tx, expr)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return keysOf(got)
	}
	retag := func(set tags.Set, del bool) {
		t.Helper()
		run(t, db, func(cat *resources.Catalog, st *staging.Stager) error {
			if _, err := cat.SetTags("a", set, del); err != nil {
				return err
			}
			_, err := st.Touch("tag", "a")
			return err
		})
	}
	retag(tags.Set{"env": "3"}, false)
	for expr, want := range map[string][]string{"env=1": {}, "env=3": {"a.run"}, "env=*": {"a.run"}} {
		if diff := cmp.Diff(want, selectKeys(expr)); diff != "" {
			t.Errorf("after retag, Select(%s) (-want +got):\n%s", expr, diff)
		}
	}
	retag(tags.Set{"env": ""}, true)
	for expr, want := range map[string][]string{"env=3": {}, "env=*": {}, "resource=a": {"a.run"}} {
		if diff := cmp.Diff(want, selectKeys(expr)); diff != "" {
			t.Errorf("after deleting the tag, Select(%s) (-want +got):\n%s", expr, diff)
		}
	}
}

func TestFormatChangeMasksSensitive(t *testing.T) {
	tests := []struct {
		c    staging.Change
		want string
	}{
		{staging.Change{Op: staging.OpAdd, Key: "pw", New: "s3cret", Sensitive: true}, "+ pw: ********"},
		{staging.Change{Op: staging.OpChange, Key: "pw", Old: "a", New: "b", Sensitive: true}, "~ pw: ******** >> ********"},
		{staging.Change{Op: staging.OpRemove, Key: "pw", Old: "s3cret", Sensitive: true}, "- pw: ********"},
		{staging.Change{Op: staging.OpAdd, Key: "port", New: int64(3306)}, "+ port: 3306"},
		{staging.Change{Op: staging.OpChange, Key: "port", Old: float64(3306), New: int64(3307)}, "~ port: 3306 >> 3307"},
		{staging.Change{Op: staging.OpRemove, Key: "ports", Old: []any{int64(80)}}, "- ports: [80]"},
		{staging.Change{Op: staging.OpAdd, Key: "n1.ip -> ip", Connection: true}, "+ connection n1.ip -> ip"},
		{staging.Change{Op: staging.OpRemove, Key: "n1.ip -> ip", Connection: true}, "- connection n1.ip -> ip"},
		{staging.Change{Op: staging.OpChange, Key: ".", File: true, Old: "web@0123456789abcdef", New: "web2@fedcba9876543210"}, "~ base: web@0123456789ab >> web2@fedcba987654"},
		{staging.Change{Op: staging.OpChange, Key: ".", File: true, New: "web@0123456789abcdef"}, "~ base: (files not stored) >> web@0123456789ab"},
		{staging.Change{Op: staging.OpAdd, Key: "actions/new.sh", File: true, New: "0123456789ab"}, "+ actions/new.sh"},
		{staging.Change{Op: staging.OpChange, Key: "actions/run.sh", File: true, Old: "0123456789ab", New: "ba9876543210"}, "~ actions/run.sh"},
		{staging.Change{Op: staging.OpRemove, Key: "actions/old.sh", File: true, Old: "0123456789ab"}, "- actions/old.sh"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := staging.FormatChange(tt.c)
			if got != tt.want {
				t.Errorf("FormatChange(%+v) = %q, want %q", tt.c, got, tt.want)
			}
			for _, secret := range []string{"s3cret", "a >>", ">> b"} {
				if tt.c.Sensitive && strings.Contains(got, secret) {
					t.Errorf("FormatChange shows a sensitive value: %q", got)
				}
			}
		})
	}
}
