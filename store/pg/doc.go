// Package pg is the store backend of a team: a PostgreSQL database that
// several operators, on several machines, share. It implements kv.Backend
// and passes the conformance suite (store/kv/kvtest).
//
// # Where
//
// A store is a PostgreSQL schema ("solar" unless the URL's schema parameter
// names another, so that several stores share one database) holding these
// tables, created on first use: kv (bucket, key bytea, value bytea), whose
// keys sort as bbolt's do (memcmp), seq (bucket, n) for the sequences,
// lease (the leases of Locks), the fleet's fleet_plan, fleet_task,
// fleet_slot and fleet_runner with the sequence fleet_fence (see "The
// fleet"), and solar_layout (version), the layout of those tables,
// upgraded in place when older (LayoutVersion). The data's own schema version lives in the
// meta bucket under "schema_version", as in the bbolt file.
//
// # Transactions
//
// Update is one SERIALIZABLE transaction. Its writes are kept in the
// transaction (reads see them) and sent at commit in a few statements, so
// a transaction of 40,000 puts costs a few round trips, not 40,000. When
// PostgreSQL aborts it for a serialization failure or a deadlock, its
// function runs again from the start (see Store.Update). View is a
// read-only REPEATABLE READ transaction.
//
// Round trips are what a small transaction costs, so none is spent on
// BEGIN, which travels with the first statement, or on COMMIT, which
// travels with the writes; a transaction that sends no statement begins
// nothing on the server, and a View rolls back after it returns.
//
// # Locks
//
// There is no lock on the whole store: transactions of several processes
// interleave safely. Locks (and Store.TryLock, Store.Lock) take named
// locks as leases (lease.go): rows that expire on the database's clock
// unless their holder renews them, which no end of a database session
// releases, and whose holder learns (Locks.Lost) when it could not renew
// them in time. StoreLocks is a lock session as kv.Locks, the runner's
// resource locks, slots and plan claims (kvtest.RunLocks checks it).
//
// The rates the store's processes share (kv.Rates, rates.go) are rows of
// the rate table (layout 4), each rate's time updated in one statement on
// the database's clock, by a lock session or, for the fleet's runners, on
// the store's pool.
//
// # Notifications
//
// A transaction's notifications (kv.NotifyTx) go as pg_notify on the
// channel "solar" in the batch of its COMMIT, so only a committed one
// notifies; the payload names the schema, the topic and the key. Listen
// LISTENs on a connection of its own, not the pool's, and connects again
// when it loses it (notify.go).
//
// # The fleet
//
// Store implements kv.Fleet and its transactions kv.FleetTx (fleet.go): a
// submitted plan is a fleet_plan row (epoch, live, limits) and a
// fleet_task row per task (state, predecessors waiting, weight, node,
// slots, owner, fence, lease on the database's clock). Claim is a READ
// COMMITTED transaction of its own, in three round trips: the ready rows,
// heaviest first, FOR UPDATE SKIP LOCKED; the fleet_slot rows of their
// slots locked in name order and each slot's holders counted; the taken
// rows claimed (owner, a fence from fleet_fence, a lease) with the records
// its caller writes for them, and COMMIT. Completion, release, count-down
// and reaping are statements of the KV's SERIALIZABLE transaction, matched
// on task, owner, fence and the plan's epoch; Heartbeat renews a runner's
// leases and its fleet_runner row in one statement.
//
// # Secrets
//
// A URL's password is never shown: Location and every error of this
// package carry the URL through Redact, which hides the password and every
// parameter named like a secret; a URL too broken to tell where its
// password ends (a '@' past the user part) is refused and never shown.
// Values travel as bind parameters, never in a statement's text, so that a
// server logging statements logs no value unless it logs parameters too
// (docs/team-store.md, "Secrets and the server's logs");
// default_query_exec_mode=simple_protocol, which would splice them in, is
// refused.
//
// # Connections
//
// A new connection that fails for a reason that passes (no slot free, a
// server restarting, a refused connection, a timeout) is tried again, for
// up to Options.ConnectWait (see Store.acquire); a failed login is final.
package pg
