package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

var (
	upNodeRE = regexp.MustCompile(`(?m)^  node \d+  (\S+)  slots `)
	upAddrRE = regexp.MustCompile(`behind a proxy at (\S+) `)
)

// TestUpPassword: with --requirepass, 'shardgate up' guards its nodes
// with the same password (their loopback ports are open to anyone on the
// machine) and the proxy authenticates to them; the banner's hint asks
// for the password.
func TestUpPassword(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runUp(ctx, []string{"--addr", "127.0.0.1:0", "--size", "1", "--requirepass", "s3cret"}, out, out)
	}()
	defer func() {
		cancel()
		select {
		case rc := <-done:
			if rc != 0 {
				t.Errorf("up exited %d:\n%s", rc, out)
			}
		case <-time.After(10 * time.Second):
			t.Error("up did not stop")
		}
	}()
	var proxyAddr, nodeAddr string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, n := upAddrRE.FindStringSubmatch(out.String()), upNodeRE.FindStringSubmatch(out.String())
		if p != nil && n != nil && regexp.MustCompile(`(?m)^try: `).MatchString(out.String()) {
			proxyAddr, nodeAddr = p[1], n[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner:\n%s", out)
		}
	}
	if !regexp.MustCompile(`shardgate: 1 node behind`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^try: redis-cli -p \d+ --askpass$`).MatchString(out.String()) {
		t.Errorf("banner:\n%s", out)
	}
	node, err := difftest.Dial(nodeAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if v, _ := node.DoStrings("GET", "k"); v.Text() != "NOAUTH Authentication required." {
		t.Errorf("node without AUTH: %s", v)
	}
	px, err := difftest.Dial(proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	for _, cmd := range [][]string{{"AUTH", "s3cret"}, {"SET", "k", "v"}} {
		if v, _ := px.DoStrings(cmd...); v.Text() != "OK" {
			t.Errorf("proxy %v: %s", cmd, v)
		}
	}
	if v, _ := node.DoStrings("AUTH", "s3cret"); v.Text() != "OK" {
		t.Errorf("node AUTH: %s", v)
	}
	if v, _ := node.DoStrings("GET", "k"); v.Text() != "v" {
		t.Errorf("node GET k after the proxy's SET: %s", v)
	}
}
