// Package connection holds "solar connect", "solar disconnect" and
// "solar connections".
package connection
