// Package bolt is the store backend of one operator on one machine: one
// bbolt file, one bucket per store bucket, and a lock between processes (the
// file's flock). A runner may open it with a journal (journal.go), which
// makes each of its commits one fdatasync of an append-only file instead of
// bbolt's two. Its runs' resource locks are bytes of a lock file beside it
// (locks.go, kv.Locks).
package bolt
