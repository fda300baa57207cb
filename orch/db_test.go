package orch

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/store"
)

// TestWaitingNow checks that the runner notices a process waiting for the
// store, looking no more often than every waitLook.
func TestWaitingNow(t *testing.T) {
	path, _ := chain4(t)
	s := &sharedDB{store: store.NewHandle(path), lockWait: time.Second, idle: time.Hour, yield: time.Hour}
	defer s.Close()
	if _, err := s.acquire(); err != nil {
		t.Fatal(err)
	}
	defer s.release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waitingNow() {
		t.Fatal("a waiting process seen where there is none")
	}
	// What a process waiting to open the store holds (store/bolt).
	f, err := os.OpenFile(path+".waiting", os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if s.waitingNow() {
		t.Error("looked again within waitLook of the last look")
	}
	time.Sleep(waitLook + time.Millisecond)
	if !s.waitingNow() {
		t.Error("the waiting process not seen once waitLook passed")
	}
}
