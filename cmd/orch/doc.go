// Package orch holds the "solar orch" commands: inspect, draw and run plans.
package orch
