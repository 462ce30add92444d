package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

func TestNodeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap-expect", "3"}, "--bootstrap-expect needs cluster mode (--gossip or --join)"},
		{[]string{"--gossip-key", "k"}, "--gossip-key needs cluster mode"},
		{[]string{"--appendfsync", "sometimes"}, `--appendfsync: `},
		{[]string{"--appendfsync", "always"}, "--appendfsync needs --dir"},
		{[]string{"--aof-load-corrupt"}, "--aof-load-corrupt needs --dir"},
		{[]string{"--reassign-after", "1m"}, "--reassign-after needs cluster mode"},
		{[]string{"--gossip-fast"}, "--gossip-fast needs cluster mode"},
		{[]string{"--announce", "10.0.0.1:7001"}, "--announce needs cluster mode"},
		{[]string{"--gossip", "x"}, `bad --gossip address "x"`},
		{[]string{"--join", "nohost"}, `bad --join address "nohost"`},
		{[]string{"--join", "127.0.0.1:1", "--gossip-advertise", "x"}, `bad --gossip-advertise address "x"`},
		{[]string{"--gossip", "127.0.0.1:0", "--bootstrap-expect", "-1"}, "--bootstrap-expect must be 0"},
		{[]string{"--gossip", "127.0.0.1:0", "--reassign-after", "-1s"}, "--reassign-after must be 0"},
		{[]string{"--gossip", "127.0.0.1:0", "--gossip-key", "tooshort"}, "bad --gossip-key"},
		{[]string{"--gossip", "127.0.0.1:0", "--announce", "0.0.0.0:7001"}, "not an address others can reach"},
		{[]string{"--maxmemory", "lots"}, `invalid value "lots" for flag --maxmemory`},
		{[]string{"--maxmemory", "-1"}, `invalid value "-1" for flag --maxmemory`},
	} {
		var out, errb bytes.Buffer
		rc := run(append([]string{"node"}, tc.args...), &out, &errb)
		if rc != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: rc %d, stderr %q; want 2 and %q", tc.args, rc, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"node", "--help"}, &out, &errb); rc != 0 {
		t.Fatalf("--help: rc %d", rc)
	}
	// A value the flag package refuses: one line naming the flag as the
	// usage spells it, a pointer to --help, not the whole usage.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "--shutdown-grace", "5"}, `shardgate node: invalid value "5" for flag --shutdown-grace: parse error (want a duration such as 500ms, 5s or 1m)`},
		{[]string{"node", "--no-such-flag"}, "shardgate node: flag provided but not defined: --no-such-flag"},
		{[]string{"proxy", "--nodes"}, "shardgate proxy: flag needs an argument: --nodes"},
		{[]string{"up", "--size", "x"}, `shardgate up: invalid value "x" for flag --size: parse error (want a whole number)`},
	} {
		var out, errb bytes.Buffer
		rc := run(tc.args, &out, &errb)
		name := strings.Join(tc.args[:1], " ")
		want := tc.want + "\nRun 'shardgate " + name + " --help' for its flags.\n"
		if rc != 2 || errb.String() != want || out.Len() != 0 {
			t.Errorf("%q: rc %d, stdout %q, stderr %q; want 2 and stderr %q", tc.args, rc, out.String(), errb.String(), want)
		}
	}
	for _, f := range []string{"-addr", "-gossip ", "-join", "-bootstrap-expect", "-dir", "-gossip-key", "-gossip-fast",
		"-reassign-after", "-gossip-advertise", "-announce", "-maxmemory", "standalone"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help does not document %s", f)
		}
	}
}

var (
	nodeListeningRE = regexp.MustCompile(`msg="node listening" addr=(\S+)`)
	nodeMemberRE    = regexp.MustCompile(`msg="node is a cluster member" id=(\S+) gossip=(\S+)`)
)

// runningNode is a 'shardgate node' run in this process.
type runningNode struct {
	addr, id, gossip string
	logs             *syncBuffer
	stop             func() int
}

// startNodeCmd runs 'shardgate node args...' until stop, once it listens.
func startNodeCmd(t *testing.T, args ...string) *runningNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	logs := &syncBuffer{}
	go func() { done <- runNode(ctx, args, logs, logs) }()
	n := &runningNode{logs: logs}
	deadline := time.Now().Add(10 * time.Second)
	for n.addr == "" {
		if m := nodeListeningRE.FindStringSubmatch(logs.String()); m != nil {
			n.addr = m[1]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no 'node listening' line: %s", logs.String())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if m := nodeMemberRE.FindStringSubmatch(logs.String()); m != nil {
		n.id, n.gossip = m[1], m[2]
	}
	stopped := false
	rc := 0
	n.stop = func() int {
		if !stopped {
			stopped = true
			cancel()
			select {
			case rc = <-done:
			case <-time.After(10 * time.Second):
				t.Error("node did not stop")
			}
		}
		return rc
	}
	t.Cleanup(func() { n.stop() })
	return n
}

// waitClusterOK waits until the node reports cluster_state:ok and knows
// nodes members.
func waitClusterOK(t *testing.T, addr string, nodes string) {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := c.DoStrings("CLUSTER", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		if s := v.Text(); strings.Contains(s, "cluster_state:ok\r\n") && strings.Contains(s, "cluster_known_nodes:"+nodes+"\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became ok: %s", addr, v.Text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNodeClusterMode runs two 'shardgate node' commands that bootstrap a
// cluster (--gossip, --join, --bootstrap-expect, --dir, --gossip-key,
// --gossip-fast): each serves its half of the slots and redirects the
// other half; one restarted on the same --dir comes back with the same
// id and its slots, without bootstrapping again.
func TestNodeClusterMode(t *testing.T) {
	const key = "000102030405060708090a0b0c0d0e0f"
	dirA, dirB := t.TempDir(), t.TempDir()
	common := []string{"--addr", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--gossip-fast", "--gossip-key", key, "--bootstrap-expect", "2"}
	a := startNodeCmd(t, append(common, "--dir", dirA)...)
	if a.gossip == "" {
		t.Fatalf("no cluster member line: %s", a.logs.String())
	}
	b := startNodeCmd(t, append(common, "--dir", dirB, "--join", a.gossip)...)
	waitClusterOK(t, a.addr, "2")
	waitClusterOK(t, b.addr, "2")

	ca, err := difftest.Dial(a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	id, _ := ca.DoStrings("CLUSTER", "MYID")
	if id.Text() != a.id {
		t.Errorf("CLUSTER MYID %s, logged id %s", id, a.id)
	}
	// The split is by sorted node id: whoever has the lower id owns 0-8191.
	low, high := a, b
	if b.id < a.id {
		low, high = b, a
	}
	nodes, _ := ca.DoStrings("CLUSTER", "NODES")
	for _, want := range []string{low.id + " " + low.addr + "@", " 0-8191\n", high.id + " " + high.addr + "@", " 8192-16383\n"} {
		if !strings.Contains(nodes.Text(), want) {
			t.Errorf("CLUSTER NODES lacks %q:\n%s", want, nodes.Text())
		}
	}
	cl, err := difftest.Dial(low.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// "a" is in slot 15495 (high), "b" in 3300 (low).
	if v, _ := cl.DoStrings("SET", "b", "1"); v.Text() != "OK" {
		t.Errorf("SET b on its owner: %s", v)
	}
	if v, _ := cl.DoStrings("SET", "a", "1"); v.Text() != "MOVED 15495 "+high.addr {
		t.Errorf("SET a on the other node: %s", v)
	}

	// Restart b on its --dir: same id, same slots, no new bootstrap.
	if rc := b.stop(); rc != 0 {
		t.Fatalf("node exited %d: %s", rc, b.logs.String())
	}
	b2 := startNodeCmd(t, append(common, "--dir", dirB, "--join", a.gossip)...)
	if b2.id != b.id {
		t.Errorf("restarted with id %s, was %s", b2.id, b.id)
	}
	waitClusterOK(t, b2.addr, "2")
	c2, err := difftest.Dial(b2.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	nodes, _ = c2.DoStrings("CLUSTER", "NODES")
	for _, want := range []string{b.id + " " + b2.addr + "@", "myself,master"} {
		if !strings.Contains(nodes.Text(), want) {
			t.Errorf("CLUSTER NODES after the restart lacks %q:\n%s", want, nodes.Text())
		}
	}
	info, _ := c2.DoStrings("CLUSTER", "INFO")
	if !strings.Contains(info.Text(), "cluster_current_epoch:1\r\n") {
		t.Errorf("a second bootstrap? %s", info.Text())
	}
}

// TestNodeStandalone: without --gossip and --join the node serves every
// slot, as before cluster mode existed.
func TestNodeStandalone(t *testing.T) {
	n := startNodeCmd(t, "--addr", "127.0.0.1:0", "--maxmemory", "3gb")
	c, err := difftest.Dial(n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, _ := c.DoStrings("CONFIG", "GET", "maxmemory"); len(v.Elems) != 2 || v.Elems[1].Text() != "3221225472" {
		t.Errorf("CONFIG GET maxmemory after --maxmemory 3gb: %v", v)
	}
	for _, k := range []string{"a", "b", "c", "foo"} {
		if v, _ := c.DoStrings("SET", k, "1"); v.Text() != "OK" {
			t.Errorf("SET %s: %s", k, v)
		}
	}
	if strings.Contains(n.logs.String(), "cluster member") {
		t.Errorf("a standalone node joined a cluster: %s", n.logs.String())
	}
	// The first line says which build runs, in which role.
	first, _, _ := strings.Cut(n.logs.String(), "\n")
	if !strings.Contains(first, `msg="shardgate starting" role=node version=`) || !strings.Contains(first, "redis_version=7.0.15") {
		t.Errorf("first log line %q, want the build and role", first)
	}
	if rc := n.stop(); rc != 0 {
		t.Errorf("node exited %d", rc)
	}
}

// TestVersion: 'shardgate version' (and --version) names the binary, the
// Go release and the Redis release it follows.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		var out, errb bytes.Buffer
		if rc := run([]string{arg}, &out, &errb); rc != 0 || errb.Len() != 0 {
			t.Fatalf("%s: rc %d, stderr %q", arg, rc, errb.String())
		}
		got := out.String()
		var help bytes.Buffer
		if rc := run([]string{arg, "--help"}, &help, &errb); rc != 0 || !strings.HasPrefix(help.String(), "Usage: shardgate version") {
			t.Errorf("%s --help: rc %d, %q", arg, rc, help.String())
		}
		if !strings.HasPrefix(got, "shardgate ") || !strings.Contains(got, runtime.Version()) ||
			!strings.HasSuffix(got, "redis_version 7.0.15\n") {
			t.Errorf("%s printed %q", arg, got)
		}
	}
}

// TestHelpCommand: 'shardgate help X' is 'shardgate X --help'; 'shardgate
// help' alone is the overview.
func TestHelpCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"help"}, 0, "Usage:\n  shardgate <command> [flags]"},
		{[]string{"help", "node"}, 0, "Usage: shardgate node [flags]"},
		{[]string{"help", "proxy"}, 0, "Usage: shardgate proxy"},
		{[]string{"help", "up"}, 0, "Usage: shardgate up"},
		{[]string{"help", "cluster"}, 0, "Usage: shardgate cluster <command>"},
		{[]string{"help", "version"}, 0, "Usage: shardgate version"},
		{[]string{"help", "bogus"}, 2, `shardgate: unknown command "bogus"`},
	} {
		var out, errb bytes.Buffer
		rc := run(tc.args, &out, &errb)
		if got := out.String() + errb.String(); rc != tc.rc || !strings.Contains(got, tc.want) {
			t.Errorf("%q: rc %d, output %q; want %d and %q", tc.args, rc, got, tc.rc, tc.want)
		}
	}
}
