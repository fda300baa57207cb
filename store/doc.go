// Package store owns solar's persistent state: one bbolt file holding every
// bucket the other packages fill (resources, connections, events, the staged
// log, history, committed state and plans).
//
// Contracts:
//   - Every solar command runs in exactly one transaction: View for reads,
//     Update for writes. An Update either commits entirely or leaves the file
//     untouched.
//   - Only one process holds the file at a time. Open waits up to the given
//     timeout for the lock and then fails with ErrLocked; it never blocks
//     forever and never opens a file another process is writing.
//   - The file carries a schema version; Open refuses a file written by a
//     newer, incompatible solar with ErrSchema.
//
// Domain packages reach the data only through Tx's bucket-level methods
// (Get, Put, Delete, ForEach, NextSequence), so a different backend (etcd,
// for teams) can implement the same surface later.
package store
