package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// TestUpNodeBasePort: --node-base-port puts the nodes on consecutive
// ports from it; a port range past 65535 is a usage error, and a port in
// use stops 'up' with the node named.
func TestUpNodeBasePort(t *testing.T) {
	base := freeTCPPortPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runUp(ctx, []string{"--addr", "127.0.0.1:0", "--size", "2", "--node-base-port", strconv.Itoa(base)}, out, out)
	}()
	for deadline := time.Now().Add(10 * time.Second); !regexp.MustCompile(`(?m)^try: `).MatchString(out.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no banner:\n%s", out)
		}
	}
	var got []string
	for _, m := range upNodeRE.FindAllStringSubmatch(out.String(), -1) {
		got = append(got, m[1])
	}
	want := []string{fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+1)}
	if !slices.Equal(got, want) {
		t.Errorf("nodes at %v, want %v:\n%s", got, want, out)
	}
	cancel()
	if rc := <-done; rc != 0 {
		t.Errorf("up exited %d:\n%s", rc, out)
	}

	var errOut syncBuffer
	if rc := runUp(context.Background(), []string{"--size", "3", "--node-base-port", "65534"}, &errOut, &errOut); rc != 2 ||
		!strings.Contains(errOut.String(), "--node-base-port must leave room for 3 ports below 65536, got 65534") {
		t.Errorf("a range past 65535: rc %d, %s", rc, errOut.String())
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	errOut = syncBuffer{}
	if rc := runUp(context.Background(), []string{"--addr", "127.0.0.1:0", "--size", "1", "--node-base-port", strconv.Itoa(port)}, &errOut, &errOut); rc != 1 ||
		!strings.Contains(errOut.String(), "shardgate up: node 0: listen tcp 127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("a node port in use: rc %d, %s", rc, errOut.String())
	}
}

// freeTCPPortPair returns a loopback port p such that p and p+1 are free
// at the time of the call.
func freeTCPPortPair(t *testing.T) int {
	t.Helper()
	for range 100 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		a.Close()
		if err == nil {
			b.Close()
			return p
		}
	}
	t.Fatal("no two consecutive free ports")
	return 0
}

// TestUpRefusesClusterFlags: the proxy's --nodes and the gossip flags are
// not up's; the error says why, not just that the flag is unknown.
func TestUpRefusesClusterFlags(t *testing.T) {
	for _, args := range [][]string{{"--join", "127.0.0.1:7946"}, {"--size", "2", "-gossip=127.0.0.1:0"}, {"--nodes", "a:1"}, {"--announce", "x:1"}} {
		var errOut syncBuffer
		rc := runUp(context.Background(), args, &errOut, &errOut)
		if rc != 2 || !strings.Contains(errOut.String(), "which runs a static cluster of its own") {
			t.Errorf("up %q: rc %d, %s", args, rc, errOut.String())
		}
	}
}

// TestUpChecksProxyFlagsFirst: a proxy option the proxy would refuse is
// a usage error before any node starts, so nothing is left listening and
// no node logs that it is.
func TestUpChecksProxyFlagsFirst(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--segment-keys", "a["}, "--segment-keys"},
		{[]string{"--segment-keys", ""}, "--segment-keys"},
		{[]string{"--segment-bits", "4097"}, "power of two"},
	} {
		var out, errOut syncBuffer
		args := append([]string{"--addr", "127.0.0.1:0"}, tc.args...)
		rc := runUp(context.Background(), args, &out, &errOut)
		if rc != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("up %q: rc %d, stderr %s", tc.args, rc, errOut.String())
		}
		if strings.Contains(errOut.String(), "listening") {
			t.Errorf("up %q started something before refusing its flags: %s", tc.args, errOut.String())
		}
	}
}

// TestRedisCLICommand: the hint `up` prints connects to the proxy's
// address, wherever it listens.
func TestRedisCLICommand(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		askpass bool
		want    string
	}{
		{"127.0.0.1:7379", false, "redis-cli -p 7379"},
		{"127.0.0.1:7379", true, "redis-cli -p 7379 --askpass"},
		{"0.0.0.0:7379", false, "redis-cli -p 7379"},
		{"[::]:7379", false, "redis-cli -p 7379"},
		{"127.0.0.2:20490", false, "redis-cli -h 127.0.0.2 -p 20490"},
		{"[::1]:20490", true, "redis-cli -h ::1 -p 20490 --askpass"},
		{"10.1.2.3:6379", false, "redis-cli -h 10.1.2.3 -p 6379"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := redisCLICommand(addr, tc.askpass); got != tc.want {
			t.Errorf("%s (askpass %v): %q, want %q", tc.addr, tc.askpass, got, tc.want)
		}
	}
}
