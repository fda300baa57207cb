package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/solarops/solar/store/kv"
)

// The bbolt file format, as far as the size check needs it: two meta pages
// at the start, each a 16-byte page header followed by the meta fields.
const (
	boltMagic      = 0xED0CDAED
	metaOff        = 16           // page header
	metaPageSize   = metaOff + 8  // magic, version
	metaHighWater  = metaOff + 40 // root bucket (16), freelist (8), then pgid
	metaTxID       = metaOff + 48 // after the high-water mark
	metaChecksum   = metaOff + 56 // FNV-64a of the fields before it
	metaMinPageLen = metaChecksum + 8
)

// checkSize refuses a file shorter than the pages its newest valid meta
// page says it has: bbolt would map past the end of the file and die of
// SIGBUS on the first read there.
func checkSize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // missing: bbolt creates it; unreadable: bbolt says why
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return nil
	}
	if !st.Mode().IsRegular() {
		return kv.Damagedf("not a regular file")
	}
	var best struct {
		ok        bool
		txid, end uint64
	}
	first := make([]byte, metaMinPageLen)
	if _, err := io.ReadFull(f, first); err != nil {
		return kv.Damagedf("the file is only %d bytes long", st.Size())
	}
	pages := []int64{0}
	if ps, ok := parseMeta(first); ok {
		pages = append(pages, int64(ps.pageSize))
		best.ok, best.txid, best.end = true, ps.txid, ps.end
	} else {
		pages = append(pages, int64(os.Getpagesize()))
	}
	buf := make([]byte, metaMinPageLen)
	if _, err := f.ReadAt(buf, pages[1]); err == nil {
		if m, ok := parseMeta(buf); ok && (!best.ok || m.txid > best.txid) {
			best.ok, best.txid, best.end = true, m.txid, m.end
		}
	}
	if !best.ok {
		return nil // not a bbolt file at all: bbolt's own error names it
	}
	if uint64(st.Size()) < best.end {
		return kv.Damagedf("the file is %d bytes long but its pages reach byte %d (truncated?)", st.Size(), best.end)
	}
	return nil
}

type metaInfo struct {
	pageSize  uint32
	txid, end uint64
}

func parseMeta(b []byte) (metaInfo, bool) {
	le := binary.LittleEndian
	if le.Uint32(b[metaOff:]) != boltMagic {
		return metaInfo{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(b[metaOff:metaChecksum])
	if h.Sum64() != le.Uint64(b[metaChecksum:]) {
		return metaInfo{}, false
	}
	ps := le.Uint32(b[metaPageSize:])
	return metaInfo{pageSize: ps, txid: le.Uint64(b[metaTxID:]), end: le.Uint64(b[metaHighWater:]) * uint64(ps)}, true
}

// guard turns a panic inside bbolt, or a memory fault reading the mapped
// file, into a DamagedError in *err. Any other panic is a bug in solar and
// goes on. Call it deferred, after setting the goroutine's panic-on-fault
// (faultOn).
func guard(path string, prev bool, err *error) {
	debug.SetPanicOnFault(prev)
	v := recover()
	if v == nil {
		return
	}
	if !fromStore(v) {
		panic(v)
	}
	*err = &kv.DamagedError{Path: path, Detail: strings.TrimSpace(fmt.Sprint(v))}
}

// fromStore reports whether the panic being recovered comes from reading the
// file: a fault on the mapped memory, or a panic raised inside bbolt.
func fromStore(v any) bool {
	if _, ok := v.(interface{ Addr() uintptr }); ok {
		return true // a fault (SIGBUS, SIGSEGV) turned into a panic
	}
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs) // skip Callers, fromStore, guard
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, "runtime."):
		case strings.HasPrefix(f.Function, "go.etcd.io/bbolt"):
			return true
		default:
			return false // the first frame below the panic is solar's own
		}
		if !more {
			return false
		}
	}
}
