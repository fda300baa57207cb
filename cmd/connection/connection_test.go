package connection

import (
	"testing"

	"github.com/solarops/solar/cmd/app/apptest"
	"github.com/solarops/solar/resources"
)

// TestParse: each verb's command line becomes the options its run
// function gets.
func TestParse(t *testing.T) {
	apptest.CheckParse(t, []apptest.ParseCase{
		{"connect", apptest.Parser(NewCmdConnect), []string{"db", "ks", "port->db_port", "--no-events"},
			ConnectOptions{Emitter: "db", Receiver: "ks", Mapping: []string{"port->db_port"}, NoEvents: true}},
		{"disconnect", apptest.Parser(NewCmdDisconnect), []string{"db", "ks"}, DisconnectOptions{Emitter: "db", Receiver: "ks"}},
		{"show", apptest.Parser(NewCmdShow), []string{"ks", "--json"}, ShowOptions{Resource: "ks", JSON: true}},
		{"show all", apptest.Parser(NewCmdShow), nil, ShowOptions{}},
	})
}

// TestRun: each verb's run function, given buffers.
func TestRun(t *testing.T) {
	e := apptest.New(t)
	a := e.App
	res := apptest.Resources(t)
	e.Create(t, "db", res+"/mariadb", "dir=/tmp/x", "root_password=s")
	e.Create(t, "ks", res+"/keystone", "dir=/tmp/x")
	e.Steps(t, []apptest.Step{
		{Name: "show without connections", Run: func() error { return showRun(&ShowOptions{App: a}) }, Out: "EMITTER    RECEIVER\n"},
		{Name: "connect", Run: func() error {
			return connectRun(&ConnectOptions{App: a, Emitter: "db", Receiver: "ks", Mapping: []string{"port->db_port", "root_password->db_password"}})
		}, Out: "connected db -> ks (port->db_port, root_password->db_password); 3 rules added; staged ks.run\n"},
		{Name: "show", Run: func() error { return showRun(&ShowOptions{App: a}) }, Out: `EMITTER               RECEIVER
db.port           ->  ks.db_port
db.root_password  ->  ks.db_password
`},
		{Name: "show json", Run: func() error { return showRun(&ShowOptions{App: a, Resource: "ks", JSON: true}) }, Out: `{
  "format_version": 2,
  "connections": [
    {
      "emitter": "db",
      "receiver": "ks",
      "mappings": [
        {
          "from": "port",
          "to": "db_port"
        },
        {
          "from": "root_password",
          "to": "db_password"
        }
      ]
    }
  ]
}
`},
		{Name: "disconnect", Run: func() error { return disconnectRun(&DisconnectOptions{App: a, Emitter: "db", Receiver: "ks"}) },
			Out: "disconnected db -> ks; 3 rules removed; staged ks.run\n"},
		{Name: "disconnect again", Run: func() error { return disconnectRun(&DisconnectOptions{App: a, Emitter: "db", Receiver: "ks"}) },
			WantErr: resources.ErrInvalid},
	})
}
