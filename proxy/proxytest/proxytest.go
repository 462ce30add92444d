// Package proxytest starts a proxy in front of in-process nodes for tests,
// in one line: every server on a free loopback port, closed when the test
// ends.
package proxytest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

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
	nodeOpts node.Options
}

// Start runs n nodes and a proxy made from opts (Topology is filled in:
// contiguous slot ranges over the nodes). A nil opts.Logger discards
// logs.
func Start(t testing.TB, n int, opts proxy.Options) *Cluster {
	t.Helper()
	return StartWithNodes(t, n, node.Options{}, opts)
}

// StartWithNodes is Start with the nodes made from nodeOpts (a password,
// say).
func StartWithNodes(t testing.TB, n int, nodeOpts node.Options, opts proxy.Options) *Cluster {
	t.Helper()
	c := &Cluster{nodeOpts: nodeOpts}
	for range n {
		srv, addr, stop := nodetest.Start(t, nodeOpts, nil)
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
			// Close may win the race with the Serve goroutine's
			// start in a short test: Serve then refuses to begin.
			if err := <-served; err != nil && !errors.Is(err, proxy.ErrServerClosed) {
				t.Errorf("proxytest: proxy Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, ln.Addr().String(), stop
}

// Stop stops the proxy (the nodes stop at the test's end).
func (c *Cluster) Stop() { c.stop() }

// RestartNode starts a new, empty node i on the address of the one
// StopNode[i] stopped, as a node process restarted on its port would come
// back; StopNode[i] then stops the new one.
func (c *Cluster) RestartNode(t testing.TB, i int) *node.Server {
	t.Helper()
	srv, stop := StartNodeAt(t, c.NodeAddrs[i], c.nodeOpts)
	c.Nodes[i] = srv
	c.StopNode[i] = stop
	return srv
}

// StartNodeAt serves a node made from opts on addr (retrying for a
// moment while the port is still being released) and returns it with an
// idempotent stop function, also run at the test's end.
func StartNodeAt(t testing.TB, addr string, opts node.Options) (*node.Server, func()) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Addr = addr
	srv, err := node.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	for deadline := time.Now().Add(5 * time.Second); ; {
		ln, err = net.Listen("tcp", addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxytest: listen on %s again: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
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
				t.Errorf("proxytest: node Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, stop
}
