// Package node holds the "solar node" commands: trust a node's SSH host
// key, list the nodes, check that they answer.
package node
