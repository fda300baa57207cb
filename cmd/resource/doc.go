// Package resource holds the "solar resource" commands: one file per verb.
package resource
