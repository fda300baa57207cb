package pg

import (
	"testing"

	"github.com/solarops/solar/internal/pgtest"
	"github.com/solarops/solar/store/kv"
)

// TestIgnoredReadErrorFailsTheUpdate: Has cannot return its error, and
// PostgreSQL aborts the transaction after it; Update must fail with that
// error, not with the commit's "transaction is aborted", so that a
// serialization failure there still leads to a retry.
func TestIgnoredReadErrorFailsTheUpdate(t *testing.T) {
	s, err := Open(pgtest.Shared(t), Options{Buckets: []string{"meta", "one"}, Meta: "meta", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	good := s.sql.has
	s.sql.has = "SELECT no_such_column FROM " + s.sql.schema + ".kv WHERE bucket = $1 AND key = $2"
	err = s.Update(func(tx kv.Tx) error {
		if tx.Has("one", "k") {
			t.Error("Has of a failed query said yes")
		}
		return tx.Put("one", "k", []byte("v"))
	})
	s.sql.has = good
	if !isCode(err, "42703") {
		t.Fatalf("Update after a failed Has: %v, want the query's error (42703)", err)
	}
	_ = s.View(func(tx kv.Tx) error {
		if tx.Has("one", "k") {
			t.Error("the failed Update committed its put")
		}
		return nil
	})
}
