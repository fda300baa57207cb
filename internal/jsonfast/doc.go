// Package jsonfast reads and writes the JSON of solar's hottest records
// (staged entries, committed snapshots, history, task states, plans)
// without reflection. It produces and accepts exactly what encoding/json
// does for them: the stored forms are unchanged, and any record it does not
// read the common way (an unknown or repeated field, a number out of range,
// bytes that are not UTF-8) is left to encoding/json by the caller, which
// then decides, and names the fault of a damaged one.
package jsonfast
