package store

// Handle is a store that a long-lived process (a runner) opens and lets
// go of as it works, and whose locks it takes: what the process needs of a
// store besides its transactions, whichever backend holds it. A Handle
// holds nothing open itself; it is safe to use from several goroutines.
type Handle struct {
	location string
}

// NewHandle returns the handle of the store at location (see Open). A
// location CheckLocation refuses is refused by Open and OpenLocks.
func NewHandle(location string) *Handle { return &Handle{location: location} }

// Open opens the store (see Open).
func (h *Handle) Open(opts Options) (*DB, error) { return Open(h.location, opts) }

// OpenLocks opens a lock client of the store (see OpenLocks). opts apply
// where locks are leases (Locks.Leased).
func (h *Handle) OpenLocks(opts LockOptions) (Locks, error) { return OpenLocks(h.location, opts) }

// Shared reports whether other processes may write the store while this
// one has it open (PostgreSQL), so that what it read may have changed by
// its next transaction. A store that is not shared (a bbolt file) is held
// by one process at a time, which other processes ask to let go of it
// (DB.Waiting), and never write beside it.
func (h *Handle) Shared() bool { return IsURL(h.location) }

// Location returns where the store lives, fit to print.
func (h *Handle) Location() string { return Redact(h.location) }
