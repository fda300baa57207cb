package node

import (
	"regexp"
	"testing"

	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/resources"
)

// TestParse: each verb's command line becomes the options its run
// function gets.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"list", apptest.Parser(NewCmdList), []string{"--json"}, ListOptions{JSON: true}},
		{"check", apptest.Parser(NewCmdCheck), []string{"n1", "n2", "--json"}, CheckOptions{Nodes: []string{"n1", "n2"}, JSON: true}},
		{"check all", apptest.Parser(NewCmdCheck), nil, CheckOptions{Nodes: []string{}}},
		{"trust", apptest.Parser(NewCmdTrust), []string{"n1", "-y"}, TrustOptions{Node: "n1", Yes: true}},
		{"trust fingerprint", apptest.Parser(NewCmdTrust), []string{"n1", "--fingerprint", "SHA256:abc"}, TrustOptions{Node: "n1", Fingerprint: "SHA256:abc"}},
		{"trust fingerprint and yes", apptest.Parser(NewCmdTrust), []string{"n1", "--fingerprint", "SHA256:abc", "-y"}, nil},
	})
}

// TestRun: each verb's run function, given buffers, on a local node (an
// SSH node's check and trust are end-to-end tests, against a real sshd).
func TestRun(t *testing.T) {
	e := apptest.New(t)
	a := e.App
	// The measured round trip, and the width its column takes.
	rtt := regexp.MustCompile(`  [0-9.]+[µm]?s\n`)
	rttHead := regexp.MustCompile(`RTT +ERROR`)
	e.Replace = func(s string) string {
		return rttHead.ReplaceAllString(rtt.ReplaceAllString(s, "  RTT\n"), "RTT    ERROR")
	}
	e.Steps(t, []apptest.Step{
		{Name: "list without nodes", Run: func() error { return listRun(&ListOptions{App: a}) },
			Out: "NODE  TRANSPORT  ADDRESS  USER  FINGERPRINT\n"},
		{Name: "create", Run: func() error { e.Create(t, "n1", apptest.Resources(t)+"/node", "ip=127.0.0.1"); return nil }},
		{Name: "list", Run: func() error { return listRun(&ListOptions{App: a}) }, Out: `NODE  TRANSPORT  ADDRESS  USER  FINGERPRINT
n1    local      -        -     -
`},
		{Name: "list json", Run: func() error { return listRun(&ListOptions{App: a, JSON: true}) }, Out: `{
  "format_version": 2,
  "nodes": [
    {
      "name": "n1",
      "transport": "local",
      "address": "",
      "user": "",
      "key": "",
      "trusted": false,
      "fingerprint": "",
      "trusted_by": "",
      "trusted_at": ""
    }
  ]
}
`},
		{Name: "check", Run: func() error { return checkRun(&CheckOptions{App: a}) }, Out: `NODE  TRANSPORT  ADDRESS  STATUS  CONNECT  RTT    ERROR
n1    local      -        ok      -        RTT
`},
		{Name: "trust a local node", Run: func() error { return trustRun(&TrustOptions{App: a, Node: "n1", Yes: true}) }, WantErr: nodes.ErrLocal},
		{Name: "trust an unknown node", Run: func() error { return trustRun(&TrustOptions{App: a, Node: "nope", Yes: true}) }, WantErr: resources.ErrNotFound},
	})
}
