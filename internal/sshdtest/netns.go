package sshdtest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// Link joins a network namespace (a simulated node) to the host by a veth
// pair on a /30.
type Link struct {
	NS     string
	HostIP string
	NodeIP string
	host   string // the host end's interface
}

var links atomic.Int32

// NetNS makes a namespace for t, deleted at cleanup.
func NetNS(t testing.TB, name string) *Link {
	t.Helper()
	if os.Geteuid() != 0 {
		Require(t, "root", "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		Require(t, "ip", "apt-get install iproute2")
	}
	n := int(links.Add(1))
	// Unique per process and link: interface names are at most 15 bytes.
	id := (os.Getpid()%1000)*8 + n%8
	l := &Link{
		NS:     fmt.Sprintf("solar-%s-%d", name, id),
		HostIP: fmt.Sprintf("10.213.%d.%d", id/64, (id%64)*4+1),
		NodeIP: fmt.Sprintf("10.213.%d.%d", id/64, (id%64)*4+2),
		host:   fmt.Sprintf("sv%dh", id),
	}
	node := fmt.Sprintf("sv%dn", id)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", l.NS).Run()
		_ = exec.Command("ip", "link", "del", l.host).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", l.NS},
		{"link", "add", l.host, "type", "veth", "peer", "name", node},
		{"link", "set", node, "netns", l.NS},
		{"addr", "add", l.HostIP + "/30", "dev", l.host},
		{"link", "set", l.host, "up"},
		{"-n", l.NS, "addr", "add", l.NodeIP + "/30", "dev", node},
		{"-n", l.NS, "link", "set", node, "up"},
		{"-n", l.NS, "link", "set", "lo", "up"},
	} {
		ip(t, args...)
	}
	return l
}

// Cut partitions the node: packets are dropped silently both ways, so
// neither side sees a reset.
func (l *Link) Cut(t testing.TB) {
	t.Helper()
	ip(t, "-n", l.NS, "route", "add", "blackhole", l.HostIP+"/32")
	ip(t, "route", "add", "blackhole", l.NodeIP+"/32")
}

// Heal ends the partition.
func (l *Link) Heal(t testing.TB) {
	t.Helper()
	ip(t, "-n", l.NS, "route", "del", "blackhole", l.HostIP+"/32")
	ip(t, "route", "del", "blackhole", l.NodeIP+"/32")
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
