// Package fileread reads a file that solar did not write and must not
// trust: a script's result file, a base's meta.yaml, a composition, a
// node's private key (PrivateKey, for every reader of one). It
// opens without blocking, so that a FIFO put in the file's place cannot
// hang solar, insists on a regular file, and reads at most a limit.
package fileread
