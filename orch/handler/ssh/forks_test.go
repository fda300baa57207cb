package ssh

import (
	"encoding/binary"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forkCounter counts the processes started below given roots, exactly,
// from the kernel's process events (the netlink process connector, which
// needs CAP_NET_ADMIN): other programs on the machine do not add to it, as
// they do to /proc/stat's "processes".
type forkCounter struct {
	fd   int
	mu   sync.Mutex
	tree map[uint32]bool // processes below the roots, as seen so far
	n    int64
	done chan struct{}
}

// Process connector constants (linux/connector.h, linux/cn_proc.h).
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procEventFork     = 1
)

// newForkCounter starts counting processes started below the processes
// roots, or returns nil when the kernel's process events cannot be had.
func newForkCounter(t *testing.T, roots []int) *forkCounter {
	t.Helper()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		return nil
	}
	// nlmsghdr (16) + cn_msg (20) + the operation (4).
	msg := make([]byte, 40)
	binary.NativeEndian.PutUint32(msg[0:], 40)
	binary.NativeEndian.PutUint16(msg[4:], unix.NLMSG_DONE)
	binary.NativeEndian.PutUint32(msg[12:], uint32(os.Getpid()))
	binary.NativeEndian.PutUint32(msg[16:], cnIdxProc)
	binary.NativeEndian.PutUint32(msg[20:], cnValProc)
	binary.NativeEndian.PutUint16(msg[32:], 4)
	binary.NativeEndian.PutUint32(msg[36:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil
	}
	fc := &forkCounter{fd: fd, tree: map[uint32]bool{}, done: make(chan struct{})}
	for _, r := range roots {
		fc.tree[uint32(r)] = true
	}
	fc.addDescendants()
	go fc.read()
	t.Cleanup(fc.close)
	return fc
}

// addDescendants adds every live process below the tree to it.
func (fc *forkCounter) addDescendants() {
	entries, _ := os.ReadDir("/proc")
	parent := map[uint32]uint32{}
	for _, e := range entries {
		p, ok := readProcPPID(e.Name())
		if ok {
			parent[p[0]] = p[1]
		}
	}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if !fc.tree[pid] && fc.tree[pp] {
				fc.tree[pid] = true
				changed = true
			}
		}
	}
}

func readProcPPID(name string) ([2]uint32, bool) {
	p, ok := 0, false
	for _, c := range name {
		if c < '0' || c > '9' {
			return [2]uint32{}, false
		}
		p, ok = p*10+int(c-'0'), true
	}
	if !ok {
		return [2]uint32{}, false
	}
	np, live := readProc(p)
	if !live {
		return [2]uint32{}, false
	}
	return [2]uint32{uint32(p), uint32(np.ppid)}, true
}

func (fc *forkCounter) read() {
	defer close(fc.done)
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fc.fd, buf, 0)
		if err != nil {
			return
		}
		for b := buf[:n]; len(b) >= 16; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < 16 || l > len(b) {
				break
			}
			fc.event(b[16:l])
			b = b[(l+3)&^3:]
		}
	}
}

// event takes one cn_msg with its proc_event: what (4), cpu (4),
// timestamp (8), then for a fork parent pid, parent tgid, child pid,
// child tgid.
func (fc *forkCounter) event(m []byte) {
	const data = 20
	if len(m) < data+32 || binary.NativeEndian.Uint32(m[data:]) != procEventFork {
		return
	}
	ev := m[data+16:]
	parent, childPid, child := binary.NativeEndian.Uint32(ev[4:]), binary.NativeEndian.Uint32(ev[8:]), binary.NativeEndian.Uint32(ev[12:])
	if childPid != child {
		return // a thread
	}
	fc.mu.Lock()
	if fc.tree[parent] {
		fc.tree[child] = true
		fc.n++
	}
	fc.mu.Unlock()
}

// during returns how many processes were started below the roots while fn
// ran; the events of the last forks may come a moment after it.
func (fc *forkCounter) during(fn func()) int64 {
	fc.mu.Lock()
	before := fc.n
	fc.mu.Unlock()
	fn()
	time.Sleep(50 * time.Millisecond)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.n - before
}

func (fc *forkCounter) close() {
	unix.Close(fc.fd)
}
