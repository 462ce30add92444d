package proxytest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay forwards TCP connections from its own loopback address to a
// target, and can cut them: a node behind it looks gone to whoever dials
// the relay (connections closed, new ones refused) while the node itself
// keeps running with its data, and comes back on Heal.
type Relay struct {
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// NewRelay starts a relay to target, closed when the test ends.
func NewRelay(t testing.TB, target string) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go r.accept(ln)
	t.Cleanup(r.Cut)
	return r
}

func (r *Relay) accept(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		if !r.track(in) {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil || !r.track(out) {
			in.Close()
			if out != nil {
				out.Close()
			}
			continue
		}
		go r.pipe(in, out)
		go r.pipe(out, in)
	}
}

// track registers c unless the relay is cut.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes every relayed connection and stops listening, so that
// connections are refused, until Heal.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	r.ln.Close()
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// Heal listens again on the same address and lets connections through.
func (r *Relay) Heal() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.cut {
		return nil
	}
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return err
	}
	r.ln, r.cut = ln, false
	go r.accept(ln)
	return nil
}
