package netserve

import (
	"sync"
	"testing"
	"time"
)

// TestWaitGrace: true once the group finishes within the grace, false
// when it is still busy at its end.
func TestWaitGrace(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	release := make(chan struct{})
	go func() {
		<-release
		wg.Done()
	}()
	start := time.Now()
	if WaitGrace(&wg, 50*time.Millisecond) {
		t.Fatal("WaitGrace reported a busy group finished")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("WaitGrace gave up after %v, before its grace", d)
	}
	close(release)
	if !WaitGrace(&wg, 5*time.Second) {
		t.Fatal("WaitGrace reported a finished group busy")
	}
}
