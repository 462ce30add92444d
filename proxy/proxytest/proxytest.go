// Package proxytest starts a proxy in front of in-process nodes for tests,
// in one line: every server on a free loopback port, closed when the test
// ends.
package proxytest

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
)

// Cluster is a proxy with its nodes.
type Cluster struct {
	Proxy     *proxy.Server
	Addr      string // the proxy's address
	Nodes     []*node.Server
	NodeAddrs []string
	// StopNode stops node i (its slots go dark); the test's cleanup stops
	// the rest.
	StopNode []func()
	stop     func()
}

// Start runs n nodes and a proxy made from opts (Topology is filled in:
// contiguous slot ranges over the nodes). A nil opts.Logger discards
// logs.
func Start(t testing.TB, n int, opts proxy.Options) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range n {
		srv, addr, stop := nodetest.Start(t, node.Options{}, nil)
		c.Nodes = append(c.Nodes, srv)
		c.NodeAddrs = append(c.NodeAddrs, addr)
		c.StopNode = append(c.StopNode, stop)
	}
	topo, err := proxy.NewStaticTopology(c.NodeAddrs)
	if err != nil {
		t.Fatal(err)
	}
	opts.Topology = topo
	c.Proxy, c.Addr, c.stop = StartProxy(t, opts)
	return c
}

// StartProxy serves a proxy made from opts (with its Topology set) on a
// free port and returns it, its address and an idempotent stop function.
func StartProxy(t testing.TB, opts proxy.Options) (*proxy.Server, string, func()) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			srv.Close()
			if err := <-served; err != nil {
				t.Errorf("proxytest: proxy Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, ln.Addr().String(), stop
}

// Stop stops the proxy (the nodes stop at the test's end).
func (c *Cluster) Stop() { c.stop() }
