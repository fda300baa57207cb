// Package nodes owns what solar knows about the machines actions run on: a
// node is a resource whose base has node: true, and its inputs transport,
// ip, ssh_port, ssh_user and ssh_key say how to reach it. The package reads
// those into a Node and keeps, in the store's host_keys bucket, the host key
// an operator trusted for each node (solar node trust), so that a shared
// store shares trust.
//
// It knows nothing of SSH itself: keys are kept in authorized_keys form and
// compared as text by the transport (orch/handler/ssh). A node becomes what
// the transports and the Ansible handler see here only (Node.Target, a
// handler.Target; Remote for the SSH nodes among a plan's locations).
package nodes
