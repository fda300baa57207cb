package handler

import "strings"

// A playbook reads a base's inputs as variables. ansible-playbook reserves
// some names for the keywords of plays, blocks, tasks and roles (port,
// name, timeout, environment...) and warns on every run where a variable
// bears one ("Found variable using reserved name: port"); variables named
// ansible_* are connection and behaviour settings that, as extra vars,
// would win over the inventory solar writes (host key checking included).
// So every input reaches a playbook under one namespace, InputsVar, and,
// for playbooks written against plain names, also under its own name when
// that name is free: not reserved, not ansible_*, not InputsVar itself.

// InputsVar is the variable that holds every input of the task, by name:
// {{ solar_inputs.port }}. An input whose name Ansible reserves is found
// only there.
const InputsVar = "solar_inputs"

// ansibleReserved holds the names ansible-core reserves
// (ansible.vars.reserved.get_reserved_names(), private ones included, as
// of ansible-core 2.14; TestAnsibleReservedNamesCovered compares it with
// the installed Ansible). "vars", which Ansible itself does not warn
// about, is in too: as a variable it would shadow a play's vars keyword.
var ansibleReserved = map[string]bool{
	"action": true, "always": true, "any_errors_fatal": true, "args": true,
	"async": true, "async_val": true, "become": true, "become_exe": true,
	"become_flags": true, "become_method": true, "become_user": true,
	"block": true, "changed_when": true, "check_mode": true,
	"collections": true, "connection": true, "debugger": true, "delay": true,
	"delegate_facts": true, "delegate_to": true, "diff": true,
	"environment": true, "fact_path": true, "failed_when": true,
	"force_handlers": true, "gather_facts": true, "gather_subset": true,
	"gather_timeout": true, "handlers": true, "hosts": true,
	"ignore_errors": true, "ignore_unreachable": true, "local_action": true,
	"loop": true, "loop_control": true, "loop_with": true,
	"max_fail_percentage": true, "module_defaults": true, "name": true,
	"no_log": true, "notify": true, "order": true, "poll": true, "port": true,
	"post_tasks": true, "pre_tasks": true, "register": true,
	"remote_user": true, "rescue": true, "retries": true, "roles": true,
	"run_once": true, "serial": true, "strategy": true, "tags": true,
	"tasks": true, "throttle": true, "timeout": true, "until": true,
	"vars": true, "vars_files": true, "vars_prompt": true, "when": true,
	"with_": true,
}

// plainVarName reports whether an input named name also reaches a playbook
// under its own name (see InputsVar).
func plainVarName(name string) bool {
	return !ansibleReserved[name] && !strings.HasPrefix(name, "ansible_") && name != InputsVar
}

// ansibleVars returns the extra vars file of an attempt: every input under
// InputsVar, and those with a free name (plainVarName) under their own
// name too; every string in it is tagged !unsafe (unsafeVarsYAML).
func ansibleVars(inputs map[string]any) ([]byte, error) {
	vars := make(map[string]any, len(inputs)+1)
	for k, v := range inputs {
		if plainVarName(k) {
			vars[k] = v
		}
	}
	vars[InputsVar] = inputs
	return unsafeVarsYAML(vars)
}

// reservedInputHint is added to a failed task's message when the failure
// is a playbook reading an input by a name it cannot have as a variable
// ("'port' is undefined"): it says where the value is.
func reservedInputHint(msg string, inputs map[string]any) string {
	for k := range inputs {
		if !plainVarName(k) && strings.Contains(msg, "'"+k+"' is undefined") {
			return msg + " (input " + k + " reaches playbooks as " + InputsVar + "." + k + ": Ansible reserves the name " + k + ")"
		}
	}
	return msg
}
