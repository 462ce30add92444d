package cluster

import (
	"net"
	"sync"
	"testing"
	"time"
)

// TestCloseDoesNotWaitForAStuckJoin: a join to an address that accepts
// but never answers holds on for memberlist's TCP timeout (10 s with the
// LAN profile); Close must not wait for it, or a stopping node outlives
// its container's grace period.
func TestCloseDoesNotWaitForAStuckJoin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	// The silent peer goes when the test ends, which ends the join.
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()

	cfg := testConfig(t)
	cfg.Fast = false // the LAN profile's 10 s TCP timeout
	cfg.Join = []string{ln.Addr().String()}
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		c.Close()
		t.Fatal("the join never dialed the silent peer")
	}
	start := time.Now()
	c.Close()
	if took := time.Since(start); took > joinWaitOnClose+2*time.Second {
		t.Errorf("Close took %s with a join stuck on a silent peer", took)
	}
}

// TestCloseAllAtOnce: when every member closes at once, each sees the
// others leave and has nobody left to tell: Close returns without waiting
// out memberlist's leave timeout, which used to fail the last ones' Close
// with "timeout waiting for leave broadcast" (after 5 s on a LAN).
func TestCloseAllAtOnce(t *testing.T) {
	t.Parallel()
	cs := startN(t, 3, nil)
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %d: Close: %v", i, err)
		}
	}
}
