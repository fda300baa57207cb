// Package store is solar's persistent state as domain packages see it:
// named buckets (resources, connections, events, the staged log, history,
// committed state, plans, ...) of byte-ordered keys, reached only through
// Tx. Where the bytes live is a backend's business (store/kv is the seam):
// a bbolt file by default (store/bolt), or a PostgreSQL schema that a team
// shares, for a postgres:// URL (store/pg).
//
// Contracts:
//   - Every solar command runs in exactly one transaction: View for reads,
//     Update for writes. An Update either commits entirely or leaves the
//     store untouched.
//   - Open waits up to the given timeout for another process's lock and then
//     fails with ErrLocked; it never blocks forever.
//   - The store carries a schema version; Open refuses one written by a
//     newer, incompatible solar with ErrSchema.
//   - A location is a postgres:// or postgresql:// URL or a bbolt path;
//     one that looks like a URL or a connection string but is neither
//     (CheckLocation) is refused with ErrBadLocation, and no error or
//     Redact shows its password.
//   - Every backend has Locks (resource locks, slots, plan claims; see
//     kv.Locks for what each shares). A long-lived process is given a
//     Handle, which opens the store and its locks and says whether others
//     write beside it (Shared), so that it never asks which backend it has.
//   - DB.Created says whether Open made the store (for the caller to tell
//     the user); DB.Exposed gives the mode of a bbolt file others may read
//     that Open could not make private (for the caller to warn about).
package store
