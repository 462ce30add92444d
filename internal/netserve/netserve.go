// Package netserve holds the listener plumbing a node and the proxy
// share: the accept loop and closing on a context.
package netserve

import (
	"context"
	"errors"
	"net"
	"time"
)

// AcceptLoop passes every connection ln accepts to handle until Accept
// fails for good. It returns nil when closed() then reports true (the
// server shut down), the error otherwise. Temporary errors (out of file
// descriptors, ...) are retried after a short pause instead of ending
// the server.
func AcceptLoop(ln net.Listener, closed func() bool, handle func(net.Conn)) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if closed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		handle(nc)
	}
}

// CloseOnDone calls closeFn when ctx ends, unless stopped is closed
// first (the server was closed directly).
func CloseOnDone(ctx context.Context, stopped <-chan struct{}, closeFn func()) {
	go func() {
		select {
		case <-ctx.Done():
			closeFn()
		case <-stopped:
		}
	}()
}
