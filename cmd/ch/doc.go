// Package ch holds the "solar ch" (changes) commands: the staged log,
// discard, history, revert, and process (staged changes into a plan).
package ch
