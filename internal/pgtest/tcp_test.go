package pgtest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/solarops/solar/internal/sshdtest"
)

// inNS runs psql in the namespace of link against url and returns its
// output and whether it succeeded.
func inNS(link *sshdtest.Link, url string) (string, bool) {
	out, err := exec.Command("ip", "netns", "exec", link.NS, "psql", url, "-XAtc", "SELECT 'from '||inet_client_addr()").CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// TestListenTCPAndTrust: a server listening on the host end of a veth pair
// takes TCP connections from this machine at once and from the namespace
// only when its network is trusted; the socket URL keeps working on the
// chosen port.
func TestListenTCPAndTrust(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		sshdtest.Require(t, "psql", "apt-get install postgresql-client")
	}
	link := sshdtest.NetNS(t, "pgtest")
	for _, trusted := range []bool{false, true} {
		opts := Options{NoFsync: true, Listen: []string{link.HostIP}}
		if trusted {
			opts.Trust = []string{link.NodeIP + "/32"}
		}
		s, err := StartServerWith(opts)
		if err != nil {
			skipOrFail(t, err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		if s.Port == defaultPort {
			t.Errorf("Listen: port %d, want a free one", s.Port)
		}
		if got := query(t, s.URL("postgres"), "SHOW listen_addresses"); got != link.HostIP {
			t.Errorf("listen_addresses = %q, want %s", got, link.HostIP)
		}
		u := s.TCPURL("postgres", link.HostIP)
		if got := query(t, u, "SELECT inet_client_addr()::text"); got != link.HostIP+"/32" {
			t.Errorf("from this machine by TCP: client %q, want %s", got, link.HostIP)
		}
		out, ok := inNS(link, u)
		switch {
		case trusted && (!ok || out != "from "+link.NodeIP+"/32"):
			t.Errorf("trusted %s: psql from the namespace: %s", link.NodeIP, out)
		case !trusted && (ok || !strings.Contains(out, "no pg_hba.conf entry")):
			t.Errorf("untrusted: psql from the namespace got in or failed otherwise: %s", out)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBadTCPOptions(t *testing.T) {
	for _, opts := range []Options{
		{Listen: []string{"db.example"}},
		{Listen: []string{"127.0.0.1"}, Trust: []string{"10.0.0.1"}},
		{Trust: []string{"10.0.0.0/8"}},
	} {
		if _, err := StartServerWith(opts); err == nil || !strings.HasPrefix(err.Error(), "pgtest: ") {
			t.Errorf("%+v: err %v, want a pgtest error", opts, err)
		}
	}
}
