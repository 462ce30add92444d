package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

func TestProxyFlagsModes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "one of --nodes (static mode) or --join (cluster mode) is required"},
		{[]string{"--nodes", "127.0.0.1:1", "--join", "127.0.0.1:2"}, "--nodes and --join are exclusive"},
		{[]string{"--nodes", "127.0.0.1:1", "--gossip-key", "x"}, "--gossip-key needs --join"},
		{[]string{"--nodes", "127.0.0.1:1", "--gossip", "127.0.0.1:0"}, "--gossip needs --join"},
		{[]string{"--join", "127.0.0.1:2", "--gossip-key", "tooshort"}, "bad --gossip-key"},
		{[]string{"--join", "nohost"}, `bad --join address "nohost"`},
		{[]string{"--join", "127.0.0.1:2", "--gossip", "x"}, `bad --gossip address "x"`},
		{[]string{"--join", "127.0.0.1:2", "--announce", "0.0.0.0:7379"}, "not an address others can reach"},
		{[]string{"--join", "127.0.0.1:2", "--announce", "nohost"}, `bad --announce address "nohost"`},
		{[]string{"--nodes", "127.0.0.1:1", "--client-announce", "0.0.0.0:7379"}, `bad --client-announce address "0.0.0.0:7379"`},
		{[]string{"--nodes", "127.0.0.1:1", "--client-announce", "nohost"}, `bad --client-announce address "nohost"`},
		{[]string{"--nodes", "127.0.0.1:1", "--segment-bits", "100"}, "--segment-bits must be a power of two from 4096 (2^12) to 4294967296 (2^32), got 100"},
		{[]string{"--nodes", "127.0.0.1:1", "--segment-bits", "8589934592"}, "--segment-bits must be a power of two"},
		{[]string{"--nodes", "127.0.0.1:1", "--node-timeout", "0"}, "--node-timeout must be a positive duration, got 0s"},
		{[]string{"--nodes", "127.0.0.1:1", "--redirect-timeout", "-1s"}, "--redirect-timeout must be a positive duration, got -1s"},
	} {
		var out, errb bytes.Buffer
		rc := run(append([]string{"proxy"}, tc.args...), &out, &errb)
		if rc != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: rc %d, stderr %q; want 2 and %q", tc.args, rc, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"proxy", "--help"}, &out, &errb); rc != 0 {
		t.Fatalf("--help: rc %d", rc)
	}
	for _, f := range []string{"-nodes", "-join", "-gossip ", "-gossip-key", "-gossip-fast", "-gossip-advertise", "-announce"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help does not document %s", f)
		}
	}
}

func TestAnnounceAddr(t *testing.T) {
	for _, tc := range []struct{ announce, addr, want string }{
		{"", "127.0.0.1:7379", "127.0.0.1:7379"},
		{"10.1.2.3:7000", "0.0.0.0:7379", "10.1.2.3:7000"},
		{"proxy.example:7379", "0.0.0.0:7379", "proxy.example:7379"},
		{"", "localhost:7379", "localhost:7379"},
	} {
		if got, err := announceAddr(tc.announce, tc.addr); err != nil || got != tc.want {
			t.Errorf("announceAddr(%q, %q) = %q, %v; want %q", tc.announce, tc.addr, got, err, tc.want)
		}
	}
	for _, addr := range []string{"0.0.0.0:7379", ":7379", "[::]:7379"} {
		got, err := announceAddr("", addr)
		host, port, _ := net.SplitHostPort(got)
		if err != nil || port != "7379" || net.ParseIP(host) == nil || net.ParseIP(host).IsUnspecified() {
			t.Errorf("announceAddr(\"\", %q) = %q, %v", addr, got, err)
		}
	}
}

// TestProxyJoinsCluster runs 'shardgate proxy --join' against a one-node
// gossip cluster (an in-process cluster member announcing an in-process
// node): the proxy joins, learns the node's slots and serves through it,
// and its INFO shows the cluster.
func TestProxyJoinsCluster(t *testing.T) {
	_, nodeAddr, _ := nodetest.Start(t, node.Options{}, nil)
	ctx := context.Background()
	member, err := cluster.Start(ctx, cluster.Config{
		Role: cluster.RoleNode, RESPAddr: nodeAddr, Bind: "127.0.0.1:0", BootstrapExpect: 1,
		Dir: t.TempDir(), Fast: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()

	pctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var out, errb syncBuffer
	go func() {
		done <- runProxy(pctx, []string{"--addr", "127.0.0.1:0", "--join", member.GossipAddr(), "--gossip", "127.0.0.1:0", "--gossip-fast"}, &out, &errb)
	}()
	addr := ""
	waitLog := time.Now().Add(10 * time.Second)
	for addr == "" {
		if m := listeningRE.FindStringSubmatch(errb.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(waitLog) {
			t.Fatalf("no 'proxy listening' line: %s", errb.String())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer func() {
		cancel()
		select {
		case rc := <-done:
			if rc != 0 {
				t.Errorf("proxy exited %d: %s", rc, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("proxy did not stop")
		}
	}()
	var c *difftest.Conn
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c == nil {
			c, _ = difftest.Dial(addr)
		}
		if c != nil {
			if v, err := c.DoStrings("SET", "k", "v"); err == nil && v.Text() == "OK" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy never served the cluster's slots: %s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c.Close()
	nc, err := difftest.Dial(nodeAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if v, _ := nc.DoStrings("GET", "k"); v.Text() != "v" {
		t.Errorf("the key is not on the node: %v", v)
	}
	info, err := c.DoStrings("INFO", "cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster_mode:gossip", "cluster_table_epoch:1", "cluster_nodes_alive:1", "cluster_proxies_alive:1",
		fmt.Sprintf("role=node,addr=%s,state=alive,slots=0-16383", nodeAddr), fmt.Sprintf("role=proxy,addr=%s,state=alive", addr)} {
		if !strings.Contains(info.Text(), want) {
			t.Errorf("INFO cluster lacks %q:\n%s", want, info.Text())
		}
	}
}

var listeningRE = regexp.MustCompile(`msg="proxy listening" addr=(\S+)`)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
