package torture

import "fmt"

// stats counts what the rounds did: runs, the faults injected and how the
// runners ended.
type stats struct {
	runs         int // runners started, second runners included
	kills        int // kill -9 of a runner
	killedInTask int // ... while a script ran
	crashes      int // crashes of the PostgreSQL server
	idleRounds   int // rounds with idle_session_timeout set
	cuts         int // cuts of a node's link
	second       int // second runners, on another machine
	waited       int // ... that waited for a silent runner's lease
	tookOver     int // ... that ran tasks
	refused      int // runners refused because another ran the plan
	lostLease    int // runners that lost their lease and killed their tasks
	lostNoCrash  int // ... in a run without a crash of the server
	storeGone    int // runners that could not reach the store, during a crash
	failedRuns   int // runners whose tasks failed (exit 3), during a cut
	retries      int // orch retry runs after failed tasks
}

func (s *stats) add(o stats) {
	s.runs += o.runs
	s.kills += o.kills
	s.killedInTask += o.killedInTask
	s.crashes += o.crashes
	s.idleRounds += o.idleRounds
	s.cuts += o.cuts
	s.second += o.second
	s.waited += o.waited
	s.tookOver += o.tookOver
	s.refused += o.refused
	s.lostLease += o.lostLease
	s.lostNoCrash += o.lostNoCrash
	s.storeGone += o.storeGone
	s.failedRuns += o.failedRuns
	s.retries += o.retries
}

// summary is one line of the counts.
func (s stats) summary() string {
	return fmt.Sprintf("%d runs, %d kill -9 (%d while a script ran), %d server crashes, %d rounds with idle_session_timeout, "+
		"%d link cuts, %d second runners (%d waited for a lease, %d ran tasks), %d refused, %d lost their lease (%d without a crash), "+
		"%d without the store, %d with failed tasks (%d retries)",
		s.runs, s.kills, s.killedInTask, s.crashes, s.idleRounds, s.cuts, s.second, s.waited, s.tookOver, s.refused,
		s.lostLease, s.lostNoCrash, s.storeGone, s.failedRuns, s.retries)
}
