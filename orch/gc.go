package orch

import (
	"runtime/debug"
)

// A process that runs one plan (run-once and its relatives) collects
// garbage as the plan's size asks, not as Go's default does (GOGC=100,
// and no collection before the heap reaches 4 MB):
//
//   - A small plan holds little: about 2 MB live for 1,000 shell tasks,
//     while each task allocates some 30 KB, so the default collected
//     every hundred tasks or so, about 20 µs of CPU per task of a chain.
//     Collecting when the heap has grown four times (GOGC=400) spares
//     three collections in four for a few MB more.
//   - A big plan holds about 2 KB per task, and the default lets the
//     heap reach twice that before collecting: GOGC=75 keeps a run of
//     100,000 tasks under 600 MiB for about 5% more CPU, most of it on an
//     otherwise idle core. 50 kept 25 MiB more margin for 0.3 s more at
//     100,000 tasks (docs/performance.md).
//
// A soft memory limit bounds both: near it the runtime collects more
// often and returns freed memory to the system at once rather than over
// minutes (at 100,000 tasks about 35 MiB fewer pages). It is a cost
// bounded by the runtime (at most half the CPU), never a failure.

// bigPlan is the number of tasks from which a run collects garbage more
// often than Go's default, not less.
const bigPlan = 10000

// heapPerTask is what a big run holds per task at most, with room to
// spare: about 2 KiB of plan, task state and effective inputs (1.9 KiB
// measured at 100,000 noop tasks), and three quarters as much again of
// garbage between two collections at GOGC=75.
const heapPerTask = 3584

// minMemoryLimit is the soft memory limit of a small plan's run: far
// above what one holds, it only bounds one whose inputs are unusually
// large.
const minMemoryLimit = 256 << 20

// GCSettings returns the garbage collection percentage and the soft
// memory limit for a process that runs a plan of n tasks. Each is 0
// where the operator chose it (GOGC, GOMEMLIMIT in getenv): the
// runtime's stays.
func GCSettings(n int, getenv func(string) string) (percent int, limit int64) {
	if getenv("GOGC") == "" {
		percent = 400
		if n >= bigPlan {
			percent = 75
		}
	}
	if getenv("GOMEMLIMIT") == "" {
		limit = max(int64(n)*heapPerTask, minMemoryLimit)
	}
	return percent, limit
}

// TuneGC applies GCSettings for a plan of n tasks, and returns what
// restores the settings it changed.
func TuneGC(n int, getenv func(string) string) (restore func()) {
	percent, limit := GCSettings(n, getenv)
	oldPercent, oldLimit := -1, int64(-1)
	if percent > 0 {
		oldPercent = debug.SetGCPercent(percent)
	}
	if limit > 0 {
		oldLimit = debug.SetMemoryLimit(limit)
	}
	return func() {
		if oldPercent != -1 {
			debug.SetGCPercent(oldPercent)
		}
		if oldLimit != -1 {
			debug.SetMemoryLimit(oldLimit)
		}
	}
}
