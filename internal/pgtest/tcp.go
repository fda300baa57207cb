package pgtest

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// checkTCP checks opts.Listen and opts.Trust and returns the networks
// pg_hba.conf must trust: each Listen address as ADDR/32 (or /128), then
// each of Trust.
func checkTCP(opts Options) ([]string, error) {
	var trust []string
	for _, a := range opts.Listen {
		ip := net.ParseIP(a)
		if ip == nil {
			return nil, fmt.Errorf("pgtest: Listen address %q is not an IP address", a)
		}
		bits := 32
		if ip.To4() == nil {
			bits = 128
		}
		trust = append(trust, fmt.Sprintf("%s/%d", ip, bits))
	}
	for _, n := range opts.Trust {
		if _, _, err := net.ParseCIDR(n); err != nil {
			return nil, fmt.Errorf("pgtest: Trust network %q: want CIDR notation such as 10.213.0.0/30", n)
		}
		if len(opts.Listen) == 0 {
			return nil, fmt.Errorf("pgtest: Trust network %q without a Listen address: nothing listens by TCP", n)
		}
		trust = append(trust, n)
	}
	return trust, nil
}

// freePort returns a TCP port free on addr now. The server binds it a
// moment later; another process taking it in between makes pg_ctl start
// fail with the server's log, not a test that passes wrongly.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("pgtest: no free port on %s (is it an address of this machine?): %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// appendHBA lets TCP clients of the networks nets in as any role without a
// password, after initdb's own lines (local sockets and loopback).
func appendHBA(path string, nets []string) error {
	var b strings.Builder
	b.WriteString("\n# pgtest: Options.Listen and Options.Trust\n")
	for _, n := range nets {
		fmt.Fprintf(&b, "host all all %s trust\n", n)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
