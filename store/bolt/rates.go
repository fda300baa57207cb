package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/solarops/solar/store/kv"
)

// The shared rates of a bbolt file's processes (kv.Rates) live in one small
// file next to its locks, <store>.locks/rates: a JSON object mapping each
// rate's name to its theoretical arrival time (kv.GCRATake), in
// nanoseconds of the wall clock (CLOCK_REALTIME), the one clock every
// process of the machine shares. Reserve reads and rewrites it under an
// OFD write lock on the whole file, waited for: the lock belongs to the
// open file description Reserve makes, so two goroutines of one process
// exclude each other as two processes do.
//
// The file is not synced: a machine that crashes loses the rates' times,
// which then start afresh (as a rate never taken). A file that does not
// parse (a write torn by that crash) starts afresh the same way.

// RatesFileName is the file, inside <store>.locks, that holds the rates.
const RatesFileName = "rates"

// fOFDSetLKW is F_OFD_SETLKW, the waiting F_OFD_SETLK.
const fOFDSetLKW = 38

var _ kv.Rates = (*Locks)(nil)

// Reserve takes n starts of the rate called name (kv.Rates), on this
// machine's wall clock, exactly between the processes that share the file.
func (l *Locks) Reserve(ctx context.Context, name string, every time.Duration, burst, n int) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	dir := l.storePath + ".locks"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(filepath.Join(dir, RatesFileName), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close() // drops the lock
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	for {
		err = syscall.FcntlFlock(f.Fd(), fOFDSetLKW, &lk)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	tats := map[string]int64{}
	if len(raw) > 0 && json.Unmarshal(raw, &tats) != nil {
		tats = map[string]int64{} // torn by a crash: start afresh
	}
	var tat time.Time
	if ns, ok := tats[name]; ok {
		tat = time.Unix(0, ns)
	}
	now := time.Unix(0, time.Now().UnixNano()) // the wall clock alone
	next, wait := kv.GCRATake(tat, now, every, burst, n)
	// A rate whose time has passed holds nothing: dropping it keeps the
	// file as small as the rates in use.
	for k, ns := range tats {
		if ns < now.UnixNano() {
			delete(tats, k)
		}
	}
	tats[name] = next.UnixNano()
	out, err := json.Marshal(tats)
	if err != nil {
		return 0, err
	}
	// One write from offset 0, then the length: the file never reads as
	// empty to the next process.
	if _, err := f.WriteAt(out, 0); err != nil {
		return 0, err
	}
	if err := f.Truncate(int64(len(out))); err != nil {
		return 0, err
	}
	return wait, nil
}
