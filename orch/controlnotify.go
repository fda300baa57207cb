package orch

import (
	"context"
	"time"
)

// listen makes the control act on a stop request as soon as its
// transaction commits, on a store that notifies (store.DB.Listen): each
// notification of the plan's uid makes it read the request (checkStop).
// On a store that cannot, or when listening fails, it does nothing: the
// runner's idle look (pollEvery) and its writes find the request. end
// stops listening.
func (c *control) listen() {
	if !c.sdb.shared() {
		return
	}
	db, err := c.sdb.acquire()
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	keys, ok, err := db.Listen(ctx, stopTopic)
	c.sdb.release()
	if err != nil || !ok {
		cancel()
		return
	}
	done := make(chan struct{})
	c.endListen = func() {
		cancel()
		<-done // no look at the store once the run has let it go
	}
	c.listening.Store(true)
	go func() {
		defer close(done)
		for key := range keys {
			if key == c.rec.UID && ctx.Err() == nil {
				_ = c.sdb.View(c.checkStop)
			}
		}
	}()
}

// end stops the walk, if it has not stopped, and the listening; it
// returns once the control no longer reads the store.
func (c *control) end() {
	c.closeStop()
	if c.endListen != nil {
		c.endListen()
	}
}

// pollEvery is how often an idle runner looks for a stop request.
func (c *control) pollEvery() time.Duration {
	if c.listening.Load() {
		return stopLookListening
	}
	return stopLook
}

// userStopped reports whether the caller's stop channel is closed: the
// caller (a signal, Ctrl-C) asked for the stop, and said so.
func (c *control) userStopped() bool {
	if c.userStop == nil {
		return false
	}
	select {
	case <-c.userStop:
		return true
	default:
		return false
	}
}
