package orch

import (
	"encoding/json"
	"errors"

	sshx "github.com/solarops/solar/orch/handler/ssh"

	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
)

// wireTransports completes the run's handlers once every location of its
// plan is known: the attempts of this machine, ansible-playbook's
// included, run on the run's Local (r.local, settled when the run ends:
// r.settle); the SSH nodes among locations get the run's SSH connections
// (r.transports), and the Ansible handler their targets. Any other
// location runs here.
//
// A task reaches its node as the task's pin says (pin.Node: the node's
// values as the plan saw them), never with a change staged on the node
// outside the plan; a task of a plan made before pins, with the node's
// values now (nodes.Remote). Tasks of one node normally share its values.
// When they do not (the node's own update is in the plan: the tasks after
// it see its new values, those before it the committed ones), each set of
// values gets handlers and connections of its own (variants): an attempt
// never reaches a node as another task's values say.
func (r *Runner) wireTransports(cat *resources.Catalog, rec *Record, infos map[string]*taskInfo, shell *handler.Shell, ansible *handler.Ansible) error {
	if r.local == nil {
		r.local = &handler.Local{}
	}
	if shell.Transport == nil {
		shell.Transport = r.local
	}
	ansible.Local = r.local
	vs, err := targetVariants(cat, rec.Plan.Nodes, infos)
	if err != nil || !vs.remote {
		return err
	}
	fallback := shell.Transport
	for i, targets := range vs.targets {
		sh, an := shell, ansible
		if i > 0 {
			// Copies, given only to the tasks of this variant.
			shc, anc := *shell, *ansible
			sh, an = &shc, &anc
		}
		r.wireVariant(targets, fallback, sh, an)
		for _, info := range vs.tasks[i] {
			info.handler = handlerFor(info.handler, shell, ansible, sh, an)
		}
	}
	return nil
}

// wireVariant gives shell and ansible the SSH connections and targets of
// targets, by location; any other location runs on fallback.
func (r *Runner) wireVariant(targets map[string]handler.Target, fallback handler.Transport, shell *handler.Shell, ansible *handler.Ansible) {
	sshNodes := make(map[string]*sshx.Node, len(targets))
	for loc, t := range targets {
		sshNodes[loc] = sshx.NodeOf(t)
	}
	tr := sshx.New(sshNodes, fallback, r.SSH)
	r.transports = append(r.transports, tr)
	shell.Transport = tr
	ansible.Target = func(loc string) (handler.Target, error) {
		if t, ok := targets[loc]; ok {
			return t, nil
		}
		return handler.Target{Name: "localhost", Local: true}, nil
	}
}

// handlerFor is h, one of the run's handlers shell and ansible, as the
// variant whose copies of them are sh and an has it.
func handlerFor(h handler.Handler, shell *handler.Shell, ansible *handler.Ansible, sh *handler.Shell, an *handler.Ansible) handler.Handler {
	switch h {
	case handler.Handler(shell):
		return sh
	case handler.Handler(ansible):
		return an
	}
	return h
}

// variants are the run's SSH targets, by location, in as many sets as one
// node has different pinned values among the tasks on it: targets[0]
// holds each node's first values in plan order, targets[i] the i-th
// others; tasks[i] the tasks that need a set other than the first (the
// first set's tasks keep the run's own handlers). remote says whether any
// task runs over SSH.
type variants struct {
	targets []map[string]handler.Target
	tasks   [][]*taskInfo
	remote  bool
}

// targetVariants sorts the tasks of plan nodes by the values of the node
// they run on (variants). A location that names no node runs here.
func targetVariants(cat *resources.Catalog, plan []planner.Node, infos map[string]*taskInfo) (*variants, error) {
	vs := &variants{targets: []map[string]handler.Target{{}}, tasks: [][]*taskInfo{nil}}
	known := map[string]*nodes.Node{} // by location, read once; nil: not a node
	seen := map[string][]string{}     // location -> the keys of its values, in the order met
	for i := range plan {
		info := infos[plan[i].ID]
		if info.location == "" {
			continue
		}
		t, key, ok, err := taskTarget(cat, known, info)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // runs here
		}
		n := indexOf(seen[info.location], key)
		if n < 0 {
			n = len(seen[info.location])
			seen[info.location] = append(seen[info.location], key)
			if n == len(vs.targets) {
				vs.targets = append(vs.targets, map[string]handler.Target{})
				vs.tasks = append(vs.tasks, nil)
			}
			if !t.Local {
				vs.targets[n][info.location] = t
				vs.remote = true
			}
		}
		if n > 0 {
			vs.tasks[n] = append(vs.tasks[n], info)
		}
	}
	return vs, nil
}

// taskTarget returns the target task info reaches its node with, and the
// key of the values it was made from: its pin's node values, else the
// node's now (key ""). ok is false when its location names no node.
// known caches the nodes read.
func taskTarget(cat *resources.Catalog, known map[string]*nodes.Node, info *taskInfo) (t handler.Target, key string, ok bool, err error) {
	loc := info.location
	n, read := known[loc]
	if !read {
		n, err = nodes.Get(cat, loc)
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, nodes.ErrNotNode) {
			n, err = nil, nil
		}
		if err != nil {
			return t, "", false, err
		}
		known[loc] = n
	}
	if n == nil {
		return t, "", false, nil
	}
	if info.pin == nil || info.pin.Node == nil {
		return n.Target(), "", true, nil
	}
	raw, err := json.Marshal(info.pin.Node) // map keys sorted: one key per values
	if err != nil {
		return t, "", false, err
	}
	p := nodes.FromValues(loc, info.pin.Node)
	p.Trusted = n.Trusted // trust is the store's now, not a value of the plan
	return p.Target(), string(raw), true, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// settle removes what the run's attempts left on this machine, and the
// run's private directories, before the run returns (handler.Local.Settle).
func (r *Runner) settle() {
	if r.local != nil {
		r.local.Settle()
	}
}
