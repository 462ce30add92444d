// Package nodetest starts shardgate nodes for tests in one line: each on a
// free loopback port, served in the background and closed when the test
// ends, with a Serve error failing the test.
package nodetest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/node"
)

// Start serves a new node made from opts on 127.0.0.1:0 and returns it,
// its address and a stop function (idempotent; the test's cleanup calls
// it too). A nil opts.Logger discards logs. setup, when not nil, runs
// between node.New and Serve (to inject test hooks).
func Start(t testing.TB, opts node.Options, setup func(*node.Server)) (srv *node.Server, addr string, stop func()) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := node.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			srv.Close()
			// Close may win the race with the Serve goroutine's
			// start in a short test: Serve then refuses to begin.
			if err := <-served; err != nil && !errors.Is(err, node.ErrServerClosed) {
				t.Errorf("nodetest: node Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, ln.Addr().String(), stop
}
