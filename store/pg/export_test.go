package pg

import (
	"context"

	"github.com/solarops/solar/store/kv"
)

// Crash makes the lock session of l stop renewing its leases and drop its
// connection without releasing them, as a holder that died on another
// machine would: they stay until they expire.
func Crash(l kv.Locks) {
	s := l.(StoreLocks).l
	s.mu.Lock()
	s.closed = true
	quit := s.renewer
	s.mu.Unlock()
	if quit != nil {
		close(quit)
		s.stopped.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
		s.conn = nil
	}
	s.held = nil
}
