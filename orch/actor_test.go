package orch

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// TestActors: a plan records who processed it and which actor staged each
// entry it took (for ch process's note); the history a run commits says
// who ran each task and on which host (Runner.Actor, Runner.Host, this
// machine's name when Host is "").
func TestActors(t *testing.T) {
	base, err := resources.LoadBase("../testdata/resources/noop")
	if err != nil {
		t.Fatal(err)
	}
	path := testStorePath(t)
	for _, host := range []string{"runner1", ""} {
		var uid string
		update(t, path, func(tx *store.Tx) error {
			cat := resources.NewCatalog(tx)
			for _, c := range []struct{ name, by string }{{"a" + host, "alice"}, {"b" + host, "bob"}, {"c" + host, "alice"}} {
				if _, err := cat.Create(resources.CreateSpec{Name: c.name, Base: base}, false); err != nil {
					return err
				}
				if _, err := staging.New(cat, time.Now).By(c.by).Touch("create", c.name); err != nil {
					return err
				}
			}
			res, err := Process(tx, nil, nil, false, time.Now(), "bob")
			if err != nil {
				return err
			}
			want := map[string][]string{"alice": {"a" + host + ".run", "c" + host + ".run"}, "bob": {"b" + host + ".run"}}
			if !reflect.DeepEqual(res.StagedBy, want) {
				t.Errorf("StagedBy %v, want %v", res.StagedBy, want)
			}
			uid = res.Record.UID
			return nil
		})
		r := &Runner{Store: store.NewHandle(path), UID: uid, Concurrency: 1, PerNode: 1, Actor: "carol", Host: host}
		if _, _, err := r.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		wantHost := host
		if host == "" {
			wantHost = hostname
		}
		view(t, path, func(tx *store.Tx) error {
			rec, err := Load(tx, uid)
			if err != nil {
				return err
			}
			if rec.ProcessedBy != "bob" {
				t.Errorf("plan processed by %q, want bob", rec.ProcessedBy)
			}
			hs, err := staging.History(tx, 3)
			if err != nil {
				return err
			}
			if len(hs) != 3 || hs[0].Plan != uid {
				t.Fatalf("history %+v, want the plan's 3 commits", hs)
			}
			for _, h := range hs {
				wantBy := map[string]string{"a": "alice", "b": "bob", "c": "alice"}[h.Resource[:1]]
				if h.StagedBy != wantBy || h.RanBy != "carol" || h.RanOn != wantHost {
					t.Errorf("history %s: staged by %q, ran by %q on %q; want %q, carol, %q", h.Key, h.StagedBy, h.RanBy, h.RanOn, wantBy, wantHost)
				}
			}
			return nil
		})
	}
}
