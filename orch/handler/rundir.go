package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The attempts a Local runs keep their files in a private directory of
// the run: one per parent directory, made by the first attempt that needs
// it and removed by Local.Settle once no attempt uses it. Each attempt's
// files carry its number, "17-inputs.json" and "17-result.json", and go
// soon after it (attemptFiles.end). A directory made and removed for each
// attempt cost about 10 µs of a shell task's 0.2 ms.
//
// The notes that find an attempt's process group after the executor died
// share one file of the directory, notesFile, in fixed slots: an attempt
// takes a free slot, writes its note there before its script starts and
// again once the group is known, and clears it when the script has
// ended. A note file per attempt, made, rewritten and removed, cost about
// 20 µs; three writes to a slot cost 2. The directory's watchdog
// (watchdog.go) reads them should the executor die; the next executor's
// SweepTemp reads them again.
const notesFile = "groups"

// noteSlot is the size of one note in notesFile: a note longer than that
// has its task name shortened (the name is only for messages).
const noteSlot = 1024

// runDir is a private directory of the run.
type runDir struct {
	owner *runDirs // the Local whose attempts use it
	path  string
	notes int   // notesFile, open for writing; -1 once closed
	free  []int // slots of notesFile no attempt has
	slots int   // slots handed out so far
	users int   // attempts whose files are in it
	gone  bool  // found removed from under the process: no attempt takes it any more
	// watch ends the noted groups should the executor die.
	watch *watchdog
}

// runDirs are the run directories of one Local, by parent, and what its
// ended attempts left: the state a run creates with its Local and lets go
// of with Local.Settle. Its zero value is ready to use.
type runDirs struct {
	mu       sync.Mutex
	byParent map[string]*runDir
	seq      uint64 // the last attempt's number
	// watchdogs are the watchdogs told to end that Settle has not
	// reaped yet.
	watchdogs []int

	// removing counts the ended attempts whose files are not removed
	// yet (attemptFiles.end).
	removing behindSet
	// left holds the files of ended attempts until the next attempt
	// removes them while its script runs, where the system calls cost
	// the walk nothing; removing them as an attempt ends would come
	// between the script's end and its commit, and so before the next
	// task of a chain starts. Should no attempt start within tidyAfter,
	// a timer removes them: they hold secrets.
	left struct {
		sync.Mutex
		ended []attemptFiles
		timer *time.Timer
		armed bool
	}
}

// attemptFiles are one attempt's share of a run directory.
type attemptFiles struct {
	rd   *runDir
	seq  string // the number in its files' names
	slot int    // its slot in notesFile
}

func (a attemptFiles) inputs() string { return filepath.Join(a.rd.path, a.seq+"-inputs.json") }
func (a attemptFiles) result() string { return filepath.Join(a.rd.path, a.seq+"-result.json") }

// newAttemptFiles gives an attempt its files in the run directory under
// parent ("" is the host's choice, see localTempDir) and writes its
// inputs file. grace is the watchdog's, should the directory be made now
// (see makeRunDir).
func (d *runDirs) newAttemptFiles(parent string, inputs []byte, grace time.Duration) (attemptFiles, error) {
	for tries := 0; ; tries++ {
		a, err := d.takeAttemptFiles(parent, grace)
		if err != nil {
			return attemptFiles{}, fmt.Errorf("cannot make a private temp dir: %w", err)
		}
		err = writeNew(a.inputs(), inputs)
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			_ = syscall.Unlink(a.inputs()) // what a failed write left of it
		}
		a.release()
		switch {
		case tries < 3 && errors.Is(err, fs.ErrNotExist):
			// The directory was removed from under the process (a
			// cleaner of the temp dir): a new one is made.
			d.forgetRunDir(a.rd)
		case tries < 3 && errors.Is(err, fs.ErrExist):
			// A script left a file of that name: the next number.
		default:
			return attemptFiles{}, fmt.Errorf("cannot write the inputs file: %w", err)
		}
	}
}

// attemptDir is the directory of an attempt that has one of its own in
// the run directory (an Ansible attempt's: inventory, vars, Ansible's
// temp dirs).
func (a attemptFiles) attemptDir() string { return filepath.Join(a.rd.path, a.seq+"-attempt") }

// newAttemptDir gives an attempt a number, a note slot and a 0700
// directory of its own in the run directory under parent, so that what
// removes the run directory of a dead executor (SweepTemp) removes the
// attempt's files too, and what kills the groups its notes name kills
// the attempt's. grace is as for takeAttemptFiles. The attempt ends with
// removeAttemptDir.
func (d *runDirs) newAttemptDir(parent string, grace time.Duration) (attemptFiles, error) {
	for tries := 0; ; tries++ {
		a, err := d.takeAttemptFiles(parent, grace)
		if err != nil {
			return attemptFiles{}, fmt.Errorf("cannot make a private temp dir: %w", err)
		}
		err = os.Mkdir(a.attemptDir(), 0o700)
		if err == nil {
			return a, nil
		}
		a.release()
		switch {
		case tries < 3 && errors.Is(err, fs.ErrNotExist):
			d.forgetRunDir(a.rd) // see newAttemptFiles
		case tries < 3 && errors.Is(err, fs.ErrExist):
			// A script made a directory of that name: the next number.
		default:
			return attemptFiles{}, fmt.Errorf("cannot make a private temp dir: %w", err)
		}
	}
}

// removeAttemptDir ends an attempt made by newAttemptDir, whose group has
// ended: its note is cleared, its directory removed at once (it holds
// secrets, and an Ansible attempt lasts far longer than the removal
// takes), its slot given back.
func (a attemptFiles) removeAttemptDir() {
	a.clearNote()
	_ = os.RemoveAll(a.attemptDir())
	a.release()
}

// takeAttemptFiles takes a number and a note slot in the run directory
// under parent, making the directory if need be.
func (d *runDirs) takeAttemptFiles(parent string, grace time.Duration) (attemptFiles, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rd, err := d.runDirUnder(parent, grace)
	if err != nil {
		return attemptFiles{}, err
	}
	a := attemptFiles{rd: rd}
	if n := len(rd.free); n > 0 {
		a.slot, rd.free = rd.free[n-1], rd.free[:n-1]
	} else {
		a.slot = rd.slots
		rd.slots++
	}
	rd.users++
	d.seq++
	a.seq = strconv.FormatUint(d.seq, 10)
	return a, nil
}

// runDirUnder returns the run directory under parent, made if there is
// none yet. With no parent it prefers $XDG_RUNTIME_DIR: a tmpfs only the
// user can enter, so secrets in the inputs file never reach a disk, and
// the files of an attempt cost a fraction of what they cost on a
// disk-backed /tmp (see BenchmarkShell). Where that dir is unusable (a
// session's dir after su), an explicit $TMPDIR comes next, then /dev/shm
// (the tmpfs every Linux has; the run's dir in it is still 0700), then
// os.TempDir(). It is called with d.mu held.
func (d *runDirs) runDirUnder(parent string, grace time.Duration) (*runDir, error) {
	return inFirstParent(parent, func(p string) (*runDir, error) {
		if rd := d.byParent[p]; rd != nil {
			return rd, nil
		}
		rd, err := makeRunDir(p, grace)
		if err != nil {
			return nil, err
		}
		rd.owner = d
		if d.byParent == nil {
			d.byParent = map[string]*runDir{}
		}
		d.byParent[p] = rd
		return rd, nil
	})
}

// makeRunDir makes a run directory and its notes file in parent, and
// starts its watchdog, which ends its attempts' groups with grace should
// the executor die.
func makeRunDir(parent string, grace time.Duration) (*runDir, error) {
	dir, err := localTempDir(parent)
	if err != nil {
		return nil, err
	}
	notes := filepath.Join(dir, notesFile)
	fd, err := syscall.Open(notes, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, &os.PathError{Op: "open", Path: notes, Err: err}
	}
	wd, err := startWatchdog(dir, notes, grace)
	if err != nil {
		_ = syscall.Close(fd)
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &runDir{path: dir, notes: fd, watch: wd}, nil
}

// forgetRunDir drops rd, which is gone, so that the next attempt makes a
// new one.
func (d *runDirs) forgetRunDir(rd *runDir) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rd.gone = true
	for p, other := range d.byParent {
		if other == rd {
			delete(d.byParent, p)
		}
	}
	rd.closeIfUnused()
}

// closeIfUnused closes the notes file of a run directory that is no
// longer in its owner's list once no attempt uses it, and tells its
// watchdog to end (reaped by Settle). Called with the owner's mu held.
func (rd *runDir) closeIfUnused() {
	if rd.gone && rd.users == 0 && rd.notes >= 0 {
		_ = syscall.Close(rd.notes)
		rd.notes = -1
		if rd.watch.end() && rd.owner != nil {
			rd.owner.watchdogs = append(rd.owner.watchdogs, rd.watch.pid)
		}
	}
}

// note writes the attempt's note into its slot, whole, so that no part of
// an earlier one is left after it.
func (a attemptFiles) note(task string, g Procs) error {
	var slot [noteSlot]byte
	raw, err := json.Marshal(procsNote{Task: task, Procs: g})
	for err == nil && len(raw) > noteSlot {
		task = task[:len(task)/2]
		raw, err = json.Marshal(procsNote{Task: task, Procs: g})
	}
	if err != nil {
		return err
	}
	copy(slot[:], raw)
	return a.writeSlot(slot[:])
}

// clearNote empties the attempt's slot: its group has ended.
func (a attemptFiles) clearNote() {
	var slot [noteSlot]byte
	_ = a.writeSlot(slot[:])
}

func (a attemptFiles) writeSlot(b []byte) error {
	_, err := syscall.Pwrite(a.rd.notes, b, int64(a.slot)*noteSlot)
	if err != nil {
		return &os.PathError{Op: "write", Path: filepath.Join(a.rd.path, notesFile), Err: err}
	}
	return nil
}

// remove removes the attempt's files, then gives back its slot.
func (a attemptFiles) remove() {
	_ = syscall.Unlink(a.inputs())
	_ = syscall.Unlink(a.result())
	a.release()
}

// release gives back the attempt's slot and its use of the directory.
func (a attemptFiles) release() {
	a.rd.owner.mu.Lock()
	defer a.rd.owner.mu.Unlock()
	a.rd.free = append(a.rd.free, a.slot)
	a.rd.users--
	a.rd.closeIfUnused()
}

// removeIdleRunDirs removes the run directories no attempt uses.
func (d *runDirs) removeIdleRunDirs() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, rd := range d.byParent {
		if rd.users > 0 {
			continue
		}
		delete(d.byParent, p)
		rd.gone = true
		rd.closeIfUnused()
		// What a script left there goes too.
		if syscall.Unlink(filepath.Join(rd.path, notesFile)) != nil || syscall.Rmdir(rd.path) != nil {
			_ = os.RemoveAll(rd.path)
		}
	}
}

// notesIn reads the notes of the attempts whose files are in dir: the
// slots of its notes file, and the note file of an attempt that had a
// directory of its own (the Ansible handler's).
func notesIn(dir string) []procsNote {
	var out []procsNote
	if raw, err := os.ReadFile(filepath.Join(dir, notesFile)); err == nil {
		for off := 0; off < len(raw); off += noteSlot {
			slot := raw[off:min(off+noteSlot, len(raw))]
			if end := bytes.IndexByte(slot, 0); end >= 0 {
				slot = slot[:end]
			}
			var note procsNote
			if len(slot) > 0 && json.Unmarshal(slot, &note) == nil {
				out = append(out, note)
			}
		}
	}
	var note procsNote
	if raw, err := os.ReadFile(filepath.Join(dir, procsFile)); err == nil && json.Unmarshal(raw, &note) == nil {
		out = append(out, note)
	}
	return out
}

// tidyAfter bounds how long an ended attempt's files stay.
const tidyAfter = 100 * time.Millisecond

// end is called as the attempt ends: its note is cleared at once (its
// group is gone), its files soon. The timer is set once for many
// attempts: setting it again at each end could wake a sleeping thread
// each time.
func (a attemptFiles) end() {
	a.clearNote()
	d := a.rd.owner
	d.removing.add()
	d.left.Lock()
	defer d.left.Unlock()
	d.left.ended = append(d.left.ended, a)
	if d.left.armed {
		return
	}
	d.left.armed = true
	if d.left.timer == nil {
		d.left.timer = time.AfterFunc(tidyAfter, d.tidyLeft)
	} else {
		d.left.timer.Reset(tidyAfter)
	}
}

// tidyLeft is the timer's: it removes what no attempt has.
func (d *runDirs) tidyLeft() {
	d.left.Lock()
	d.left.armed = false
	d.left.Unlock()
	d.removeEnded()
}

// removeEnded removes the files of the attempts that have ended.
func (d *runDirs) removeEnded() {
	d.left.Lock()
	ended := d.left.ended
	d.left.ended = nil
	d.left.Unlock()
	for _, a := range ended {
		a.remove()
		d.removing.done()
	}
}

// settle removes the files of every attempt that has ended, waits for
// those being removed, then removes the run directories no attempt uses
// and waits for their watchdogs to exit (see Local.Settle).
func (d *runDirs) settle() {
	d.removeEnded()
	d.removing.wait()
	d.removeIdleRunDirs()
	d.reapWatchdogs()
}

// behindSet counts work going on behind; wait returns once none is left.
// (A sync.WaitGroup may not be added to while a wait on it could be
// returning, which concurrent runs in one process would do.)
type behindSet struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

func (b *behindSet) add() {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	b.mu.Unlock()
}

func (b *behindSet) done() {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.idle)
	}
	b.mu.Unlock()
}

func (b *behindSet) wait() {
	b.mu.Lock()
	idle := b.idle
	n := b.n
	b.mu.Unlock()
	if n > 0 {
		<-idle
	}
}
