package handler

import (
	"os/exec"
	"strings"
	"testing"
)

// Every name the installed ansible-core reserves is kept out of the plain
// variables: otherwise its playbooks warn "Found variable using reserved
// name" on every run.
func TestAnsibleReservedNamesCovered(t *testing.T) {
	needAnsible(t)
	out, err := exec.Command(ansiblePython(t), "-c",
		"from ansible.vars.reserved import get_reserved_names; print(' '.join(sorted(get_reserved_names())))").Output()
	if err != nil {
		t.Fatalf("ask Ansible for its reserved names: %v", err)
	}
	for _, name := range strings.Fields(string(out)) {
		if plainVarName(name) {
			t.Errorf("Ansible reserves %q, which solar would pass as a plain variable", name)
		}
	}
}

// Every input is under solar_inputs; a free name is also plain, a reserved
// or ansible_* one is not; a failure reading a reserved name says where it is.
func TestAnsibleVarsShape(t *testing.T) {
	got, err := ansibleVars(map[string]any{"dir": "/d", "port": int64(8080), "ansible_host": "x", "solar_inputs": "s"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{!unsafe "dir": !unsafe "/d", !unsafe "solar_inputs": {!unsafe "ansible_host": !unsafe "x", !unsafe "dir": !unsafe "/d", !unsafe "port": 8080, !unsafe "solar_inputs": !unsafe "s"}}` + "\n"
	if string(got) != want {
		t.Errorf("vars:\n got %s\nwant %s", got, want)
	}
	msg := reservedInputHint("The task includes an option with an undefined variable. The error was: 'port' is undefined", map[string]any{"port": 1})
	if !strings.Contains(msg, "input port reaches playbooks as solar_inputs.port") {
		t.Errorf("no hint in %q", msg)
	}
	if msg := reservedInputHint("'dir' is undefined", map[string]any{"dir": "/d"}); strings.Contains(msg, "solar_inputs") {
		t.Errorf("a hint for a plain input: %q", msg)
	}
}
