package sshdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// linkSlots is how many /30 subnets 10.213.0.0/16 holds: the address space
// links are given from.
const linkSlots = 1 << 14

// Link joins a network namespace, a simulated remote node, to the host by
// a veth pair on a /30 subnet of 10.213.0.0/16: the host end has HostIP,
// the namespace end NodeIP. The node is reachable from the host, and from
// nowhere else, until Cut.
type Link struct {
	NS     string // the namespace: Options.NetNS, ip netns exec NS
	HostIP string // the host end's address, e.g. 10.213.N.1
	NodeIP string // the namespace end's address, e.g. 10.213.N.2: Options.IP

	hostDev, nodeDev string

	mu    sync.Mutex
	cut   bool
	shape []string // the root qdisc Shape put on both ends, for Heal
}

// linkCount numbers this process's links.
var linkCount atomic.Int64

// NetNS creates a network namespace for t, joined to the host by a veth
// pair (see Link), with its loopback and its end of the pair up. The
// namespace is named solar-NAME-PID-N, where name is a label of t's
// choosing. Its subnet and interface names are free machine-wide, also
// among test processes running in parallel. The namespace and the pair are
// deleted when t ends, after the servers started in it later have been
// stopped.
//
// It needs root and ip (iproute2); without them the test is skipped (see
// Require).
func NetNS(t testing.TB, name string) *Link {
	t.Helper()
	if os.Geteuid() != 0 {
		Require(t, "root", "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		Require(t, "ip", "apt-get install iproute2")
	}
	ns := fmt.Sprintf("solar-%s-%d-%d", sanitize(name), os.Getpid(), linkCount.Add(1))
	unlock, err := lockMachine()
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	defer unlock()
	sweepStale()
	slot, err := freeSlot()
	if err != nil {
		t.Fatalf("sshdtest: namespace %s: %v", ns, err)
	}
	l := &Link{
		NS:      ns,
		HostIP:  fmt.Sprintf("10.213.%d.%d", slot/64, slot%64*4+1),
		NodeIP:  fmt.Sprintf("10.213.%d.%d", slot/64, slot%64*4+2),
		hostDev: fmt.Sprintf("sv%dh", slot), // at most 15 bytes: sv16383h
		nodeDev: fmt.Sprintf("sv%dn", slot),
	}
	run(t, "ip", "netns", "add", l.NS)
	t.Cleanup(func() {
		// Deleting the namespace takes its end of the pair, and with it
		// the host end, once no process is left in it.
		_ = exec.Command("ip", "netns", "delete", l.NS).Run()
		_ = exec.Command("ip", "link", "delete", l.hostDev).Run()
	})
	run(t, "ip", "link", "add", l.hostDev, "type", "veth", "peer", "name", l.nodeDev)
	run(t, "ip", "link", "set", l.nodeDev, "netns", l.NS)
	run(t, "ip", "address", "add", l.HostIP+"/30", "dev", l.hostDev)
	run(t, "ip", "link", "set", l.hostDev, "up")
	run(t, "ip", "-n", l.NS, "address", "add", l.NodeIP+"/30", "dev", l.nodeDev)
	run(t, "ip", "-n", l.NS, "link", "set", l.nodeDev, "up")
	run(t, "ip", "-n", l.NS, "link", "set", "lo", "up")
	return l
}

// freeSlot returns a /30 subnet of 10.213.0.0/16, by number, that no host
// address lies in and whose interface names are free. The caller holds the
// machine lock until its address is assigned. The search starts at a place
// given by the pid, so that parallel processes rarely look at the same
// slots.
func freeSlot() (int, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, err
	}
	used := make(map[int]bool)
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := ipnet.IP.To4(); ip != nil && ip[0] == 10 && ip[1] == 213 {
			used[int(ip[2])*64+int(ip[3])/4] = true
		}
	}
	start := os.Getpid() * 16 % linkSlots
	for i := range linkSlots {
		slot := (start + i) % linkSlots
		if used[slot] {
			continue
		}
		if _, err := net.InterfaceByName(fmt.Sprintf("sv%dh", slot)); err == nil {
			continue // left without an address by a test that died
		}
		return slot, nil
	}
	return 0, fmt.Errorf("every /30 of 10.213.0.0/16 is taken: delete stale namespaces (ip netns list)")
}

// sweepStale deletes the namespaces of test processes that died without
// cleaning up (a test binary killed on timeout runs no cleanup), so that
// they do not pile up on a machine that runs the tests again and again.
// Their sshd died with them; deleting a namespace takes its veth pair. A
// namespace whose pid is alive, whatever the process, is left alone.
func sweepStale() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		// solar-NAME-PID-N, where NAME may hold dashes.
		fields := strings.Split(e.Name(), "-")
		if len(fields) < 4 || fields[0] != "solar" {
			continue
		}
		pid, err := strconv.Atoi(fields[len(fields)-2])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue
		}
		_ = exec.Command("ip", "netns", "delete", e.Name()).Run()
	}
}

// sanitize keeps name usable in a namespace name, a file in /run/netns.
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
}

// Cut partitions the node from the host without either side noticing:
// every packet on the link is dropped, both ways, so no RST, FIN or ICMP
// error reaches anyone. A new connection attempt from the host times out;
// established connections stay open, their data unanswered, until a
// keepalive or a timeout of their own gives up, as across a real network
// partition. Cut on a cut link does nothing.
//
// The drop is a queue of length zero (tc pfifo limit 0) on both ends of the
// pair. Two simpler ways are not silent: with the host end down, the
// host's route to NodeIP disappears and packets follow the default route
// instead, where a gateway may answer them; a blackhole route makes
// connect fail at once with EINVAL.
func (l *Link) Cut(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("tc"); err != nil {
		Require(t, "tc", "apt-get install iproute2")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return
	}
	l.qdisc(t, "replace", "pfifo", "limit", "0")
	l.cut = true
}

// Heal ends the partition Cut began: packets flow again, and connections
// that survived the partition resume. Heal on a link that is not cut does
// nothing.
func (l *Link) Heal(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cut {
		return
	}
	if l.shape != nil {
		l.qdisc(t, "replace", l.shape...)
	} else {
		l.qdisc(t, "delete")
	}
	l.cut = false
}

// Shape makes the link slow but lossless, both ways, as a thin line to a
// remote site: at most rate (in tc's units, e.g. "256kbit"), in bursts of
// 16 kbit, with up to 400 ms of queue before the line drops a packet (tc's
// token bucket filter: tbf rate RATE burst 16kbit latency 400ms). TCP
// carries everything across, slowly. A cut link stays cut until Heal,
// which restores the shape.
func (l *Link) Shape(t testing.TB, rate string) {
	t.Helper()
	if _, err := exec.LookPath("tc"); err != nil {
		Require(t, "tc", "apt-get install iproute2")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shape = []string{"tbf", "rate", rate, "burst", "16kbit", "latency", "400ms"}
	if !l.cut {
		l.qdisc(t, "replace", l.shape...)
	}
}

// qdisc changes the root qdisc of both ends of the pair: tc qdisc VERB dev
// DEV root ARGS.... The caller holds l.mu.
func (l *Link) qdisc(t testing.TB, verb string, args ...string) {
	t.Helper()
	for _, end := range []struct {
		cmd []string
		dev string
	}{{nil, l.hostDev}, {[]string{"ip", "netns", "exec", l.NS}, l.nodeDev}} {
		cmd := append(append(end.cmd, "tc", "qdisc", verb, "dev", end.dev, "root"), args...)
		run(t, cmd[0], cmd[1:]...)
	}
}

// run runs a command that changes the machine, failing t with its output
// if it fails.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("sshdtest: %s %s: %v: %s", name, strings.Join(args, " "), err, bytesTrim(out))
	}
}
