// Package loopserve runs throwaway TCP servers on loopback for tests: a
// fake node or cluster member that answers what a test needs.
package loopserve

import (
	"net"
	"testing"
)

// Serve listens on a free loopback port and runs handle for every
// connection, each in its own goroutine, until the listener is closed:
// by the caller (to make the address refuse connections) or when the
// test ends.
func Serve(t testing.TB, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln
}
