// Package bases keeps the files of resource bases in the store, once per
// content.
//
// A base is a directory with meta.yaml and action scripts. Read takes a
// directory into a Content: its files, directories and symbolic links (those
// that stay inside it), with their modes and bytes, sorted by path, and the
// digest of them all (sha256 over one canonical encoding). Put stores a
// Content under its digest in the store's bases bucket; a thousand
// resources of one base store it once. Get reads it back and verifies the
// digest, so a record damaged in the store is refused naming the base.
// Materialize writes a stored base into a private cache of the machine that
// runs it (0700, one directory per digest, verified before use): runners
// never read the operator's directory.
//
// Find resolves a reference NAME[@DIGEST] as the CLI takes it (NAME alone
// is the newest of that name; a digest prefix needs MinPrefix digits).
// Nothing here removes a base on its own: Delete is called by an explicit
// prune (orch.PruneBases), which knows what refers to each base. The
// missing/ marks (missing.go) name resources that the upgrade of an older
// store could not give their base (package resources registers that
// upgrade, and reports them).
//
// Bad input (exit 2 in the CLI) wraps ErrBase: a symlink leading out of the
// base, a FIFO, socket or device, an unreadable file, a base larger than
// MaxSize in all.
package bases
