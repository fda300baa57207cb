// Package bolt is the store backend of one operator on one machine: one
// bbolt file, one bucket per store bucket, and a lock between processes (the
// file's flock). A runner may open it with a journal (journal.go), which
// makes each of its commits one fdatasync of an append-only file instead of
// bbolt's two. Its runs' resource locks are bytes of a lock file beside it
// (locks.go, kv.Locks), and the rates its processes share one more file
// there (rates.go, kv.Rates).
//
// The file holds secrets: it is made 0600, and every Open, a read-only one
// too, takes away what others may do with an existing file. A file it
// cannot change (another user's, a read-only file system) is left as it
// is and reported by Store.Exposed for the caller to warn about.
package bolt
