package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// Faults: a node that is dead, unreachable, silent or that drops a
// connection mid-request turns into a prompt error for its slots only, and
// the proxy recovers by itself when the node is back.

// promptly bounds how long any faulty request may take in these tests
// (the node timeouts they set are far shorter).
const promptly = 3 * time.Second

// timed runs f and fails the test if it took longer than limit.
func timed(t *testing.T, what string, limit time.Duration, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	d := time.Since(start)
	if d > limit {
		t.Errorf("%s took %v, want at most %v", what, d, limit)
	}
	return d
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freeAddr returns a loopback address nothing listens on, never one it
// returned before in this test binary: the kernel may hand a closed
// listener's port out again at once, and a test that keeps one address
// down while it starts nodes on others would find it listed twice.
func freeAddr(t *testing.T) string {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if _, seen := freeAddrsGiven.LoadOrStore(addr, true); !seen {
			return addr
		}
	}
}

// freeAddrsGiven holds the addresses freeAddr has returned.
var freeAddrsGiven sync.Map

// fakeNode accepts connections and hands each to serve (in its own
// goroutine); it stops with the test.
func fakeNode(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// serveCommands answers every command read from nc with answer(args),
// until nc fails: the loop of a fake node.
func serveCommands(nc net.Conn, answer func(args [][]byte) string) {
	rd := resp.NewReader(nc)
	for {
		args, ok, err := rd.Next()
		if err != nil {
			return
		}
		if !ok {
			if rd.Fill() != nil {
				return
			}
			continue
		}
		if _, err := nc.Write([]byte(answer(args))); err != nil {
			return
		}
	}
}

// silent reads everything and never answers: a node that is alive but
// hung.
func silent(c net.Conn) { io.Copy(io.Discard, c) }

// clusterWith starts real nodes for every empty address of addrs and a
// proxy over all of them.
func clusterWith(t *testing.T, addrs []string, opts proxy.Options) (string, proxy.Topology) {
	t.Helper()
	for i, a := range addrs {
		if a == "" {
			addrs[i] = freeAddr(t)
			proxytest.StartNodeAt(t, addrs[i], node.Options{})
		}
	}
	topo, err := proxy.NewStaticTopology(addrs)
	if err != nil {
		t.Fatal(err)
	}
	opts.Topology = topo
	_, addr, _ := proxytest.StartProxy(t, opts)
	return addr, topo
}

func connLost(addr string) string { return fmt.Sprintf(resp.ErrNodeConnLost, addr) }

func TestDeadNodeRecoversOnSameAddress(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{RedialBackoff: 50 * time.Millisecond})
	c := dial(t, cl.Addr, 2)
	topo := cl.Proxy.Topology()
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	for _, k := range []string{k0, k1, k2} {
		do(t, c, "SET", k, "v-"+k)
	}
	cl.StopNode[1]()
	// The first request finds the shared connection closed (or learns it
	// on the way); every later one is refused at once.
	timed(t, "GET on a dead node's slot", promptly, func() {
		if v := do(t, c, "GET", k1); !v.IsError() {
			t.Errorf("GET on a dead node's slot: %v, want an error", v)
		}
	})
	for range 3 {
		timed(t, "GET on a dead node's slot", promptly, func() {
			if v := do(t, c, "GET", k1); v.Text() != resp.ErrClusterDownSlot {
				t.Errorf("GET on a dead node's slot: %v, want %q", v, resp.ErrClusterDownSlot)
			}
		})
	}
	// A pipeline over every node, written at once: the dead node's
	// replies are errors, the others are values, all in order (its first
	// command is a live node's: see refuse_test.go for the other case).
	keys := []string{k0, k1, k2, k0, k1, k2}
	if err := c.WriteRaw(pipeline(len(keys), func(i int) []string { return []string{"GET", keys[i]} })); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if want := "v-" + k; k == k1 && v.Text() != resp.ErrClusterDownSlot || k != k1 && v.Text() != want {
			t.Errorf("pipelined reply %d (%s) = %v", i, k, v)
		}
	}
	// CLUSTER INFO counts the dead node's slots as failed (node 1 of 3
	// holds 5461-10922), as a Redis Cluster counts a failed master's.
	if v := do(t, c, "CLUSTER", "INFO"); !strings.Contains(v.Text(), "cluster_state:fail\r\n") ||
		!strings.Contains(v.Text(), "cluster_slots_ok:10922\r\n") || !strings.Contains(v.Text(), "cluster_slots_fail:5462\r\n") {
		t.Errorf("CLUSTER INFO with a node down:\n%s", v.Text())
	}
	// CLUSTER NODES leaves the dead node's slots out, so that redis-cli
	// --cluster check reports them uncovered; CLUSTER SLOTS keeps them
	// (a client refusing a table with gaps would fail the other slots).
	if v := do(t, c, "CLUSTER", "NODES"); !strings.HasSuffix(strings.TrimSpace(v.Text()), " connected 0-5460 10923-16383") {
		t.Errorf("CLUSTER NODES with node 1 of 3 down: %q, want slots 0-5460 10923-16383", v.Text())
	}
	if v := do(t, c, "CLUSTER", "SLOTS"); len(v.Elems) != 1 || v.Elems[0].Elems[0].Int != 0 || v.Elems[0].Elems[1].Int != 16383 {
		t.Errorf("CLUSTER SLOTS with a node down: %v, want 0-16383", v)
	}
	// INFO keyspace counts the keys of the nodes that answer; DBSIZE,
	// which must be exact, does not guess.
	if v := do(t, c, "INFO", "keyspace"); !strings.Contains(v.Text(), "db0:keys=2,") {
		t.Errorf("INFO keyspace with a node down = %q, want db0:keys=2 from the two live nodes", v.Text())
	}
	// Commands that need every node name the one missing (they name no
	// slot for "Hash slot not served" to refer to).
	down := fmt.Sprintf(resp.ErrClusterDownNode, cl.NodeAddrs[1])
	for _, cmd := range [][]string{{"DBSIZE"}, {"KEYS", "*"}, {"RANDOMKEY"}, {"LASTSAVE"}} {
		if v := do(t, c, cmd...); v.Text() != down {
			t.Errorf("%s with a node down = %v, want %q", cmd, v, down)
		}
	}
	// FLUSHALL and FLUSHDB fail without touching the live nodes: an error
	// reply after emptying two thirds of the keyspace would mislead.
	for _, cmd := range []string{"FLUSHALL", "FLUSHDB"} {
		if v := do(t, c, cmd); v.Text() != down {
			t.Errorf("%s with a node down = %v, want %q", cmd, v, down)
		}
		if v := do(t, c, "GET", k0); v.Text() != "v-"+k0 {
			t.Errorf("GET %s after a refused %s: %v", k0, cmd, v)
		}
	}
	// In a transaction, as on a Redis Cluster node whose slot is not
	// served: CLUSTERDOWN when the command is queued, then EXECABORT.
	for _, tx := range [][][]string{{{"SET", k1, "x"}}, {{"SET", k0, "x"}, {"GET", k1}}} {
		do(t, c, "MULTI")
		for i, cmd := range tx {
			want := "QUEUED"
			if i == len(tx)-1 {
				want = resp.ErrClusterDownSlot
			}
			if v := do(t, c, cmd...); v.Text() != want {
				t.Errorf("%v in MULTI with its node down: %v, want %q", cmd, v, want)
			}
		}
		if v := do(t, c, "EXEC"); v.Text() != resp.ErrExecAbort {
			t.Errorf("EXEC after %v: %v, want %q", tx, v, resp.ErrExecAbort)
		}
	}
	// Back on the same address (empty, as a restarted node without
	// persistence): the proxy reconnects by itself.
	cl.RestartNode(t, 1)
	waitFor(t, "the restarted node to serve its slots", promptly, func() bool {
		return do(t, c, "SET", k1, "again").Text() == "OK"
	})
	if v := do(t, c, "GET", k1); v.Text() != "again" {
		t.Errorf("GET after the node came back: %v", v)
	}
	if v := do(t, c, "DBSIZE"); v.Int != 3 {
		t.Errorf("DBSIZE after the node came back: %v, want 3", v)
	}
	if v := do(t, c, "CLUSTER", "INFO"); !strings.Contains(v.Text(), "cluster_state:ok\r\n") ||
		!strings.Contains(v.Text(), "cluster_slots_ok:16384\r\n") {
		t.Errorf("CLUSTER INFO after the node came back:\n%s", v.Text())
	}
	if v := do(t, c, "CLUSTER", "NODES"); !strings.HasSuffix(strings.TrimSpace(v.Text()), " connected 0-16383") {
		t.Errorf("CLUSTER NODES after the node came back: %q", v.Text())
	}
	// A RESP3 client had no connection to the node yet: it dials fresh.
	c3 := dial(t, cl.Addr, 3)
	if v := do(t, c3, "GET", k1); v.Text() != "again" {
		t.Errorf("RESP3 GET after the node came back: %v", v)
	}
}

// TestIdleNodeStateFollowsNode: with no client sending it anything, a
// node that dies shows down (INFO nodes, CLUSTER INFO) and one that comes
// back shows up again, as the watchdog tries idle nodes itself.
func TestIdleNodeStateFollowsNode(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{NodeTimeout: 200 * time.Millisecond, RedialBackoff: 50 * time.Millisecond})
	c := dial(t, cl.Addr, 2)
	topo := cl.Proxy.Topology()
	do(t, c, "SET", keyOnNode(t, topo, 0, "a"), "x")
	do(t, c, "SET", keyOnNode(t, topo, 1, "b"), "x")
	status := func() string {
		line := infoField(t, c, "nodes", "node1")
		for _, f := range strings.Split(line, ",") {
			if v, ok := strings.CutPrefix(f, "status="); ok {
				return v
			}
		}
		return line
	}
	if st := status(); st != "up" {
		t.Fatalf("node 1 before it stops: status %s", st)
	}
	cl.StopNode[1]()
	waitFor(t, "an idle dead node to show down", promptly, func() bool { return status() == "down" })
	if v := do(t, c, "CLUSTER", "INFO"); !strings.Contains(v.Text(), "cluster_state:fail\r\n") {
		t.Errorf("CLUSTER INFO with an idle node dead:\n%s", v.Text())
	}
	cl.RestartNode(t, 1)
	waitFor(t, "an idle node back to show up", promptly, func() bool { return status() == "up" })
	if v := do(t, c, "CLUSTER", "INFO"); !strings.Contains(v.Text(), "cluster_state:ok\r\n") {
		t.Errorf("CLUSTER INFO with the node back:\n%s", v.Text())
	}
}

func TestUnreachableNodeFromTheStart(t *testing.T) {
	down := freeAddr(t)
	addr, topo := clusterWith(t, []string{"", down, ""}, proxy.Options{RedialBackoff: 50 * time.Millisecond})
	c := dial(t, addr, 2)
	k0, k1 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b")
	for range 3 {
		timed(t, "SET on an unreachable node's slot", promptly, func() {
			if v := do(t, c, "SET", k1, "x"); v.Text() != resp.ErrClusterDownSlot {
				t.Errorf("SET on an unreachable node's slot: %v", v)
			}
		})
	}
	if v := do(t, c, "SET", k0, "x"); v.Text() != "OK" {
		t.Errorf("SET on a live node's slot: %v", v)
	}
	// CLUSTERDOWN answered by the proxy is not a request to the node.
	if line := infoField(t, c, "nodes", "node1"); !strings.Contains(line, ",requests=0,") {
		t.Errorf("INFO nodes for the unreachable node: %s; want requests=0 (nothing reached it)", line)
	}
	// Fan-out over every node fails as a whole, promptly.
	timed(t, "DBSIZE with a node down", promptly, func() {
		if v := do(t, c, "DBSIZE"); !v.IsError() {
			t.Errorf("DBSIZE with a node down: %v, want an error", v)
		}
	})
	proxytest.StartNodeAt(t, down, node.Options{})
	waitFor(t, "the node to be reached", promptly, func() bool {
		return do(t, c, "SET", k1, "y").Text() == "OK"
	})
	if v := do(t, c, "DBSIZE"); v.Int != 2 {
		t.Errorf("DBSIZE once every node is up: %v", v)
	}
}

// TestKeylessTransactionWithFirstNodeDown: a transaction without keys
// runs on a node that answers, as a Redis Cluster node runs one while the
// cluster is down; the first node being unreachable does not fail it.
func TestKeylessTransactionWithFirstNodeDown(t *testing.T) {
	addr, topo := clusterWith(t, []string{freeAddr(t), "", ""}, proxy.Options{RedialBackoff: 50 * time.Millisecond})
	c := dial(t, addr, 2)
	// The proxy learns that the node is down.
	if v := do(t, c, "GET", keyOnNode(t, topo, 0, "a")); !v.IsError() {
		t.Fatalf("GET on the unreachable node's slot: %v", v)
	}
	for range 3 {
		do(t, c, "MULTI")
		do(t, c, "PING")
		do(t, c, "ECHO", "x")
		want(t, "keyless EXEC with the first node down", do(t, c, "EXEC"), difftest.ArrayOf(difftest.Simple("PONG"), difftest.BulkOf("x")))
	}
}

// TestSilentNode: a node that accepts and never answers fails the requests
// sent to it after NodeTimeout; other slots, and other clients, keep
// working meanwhile.
func TestSilentNode(t *testing.T) {
	const timeout = 200 * time.Millisecond
	hung := fakeNode(t, silent)
	addr, topo := clusterWith(t, []string{"", hung, ""}, proxy.Options{NodeTimeout: timeout, RedialBackoff: 50 * time.Millisecond})
	c := dial(t, addr, 2)
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	do(t, c, "SET", k0, "0")

	other := dial(t, addr, 2)
	stop := make(chan struct{})
	otherDone := make(chan error, 1)
	go func() {
		// Another client keeps using a live node while c waits.
		var err error
		defer func() { otherDone <- err }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var v difftest.Value
			v, err = other.DoStrings("INCR", k2)
			if err == nil && v.IsError() {
				err = fmt.Errorf("INCR: %v", v)
			}
			if err != nil {
				return
			}
		}
	}()
	d := timed(t, "GET on a silent node's slot", promptly, func() {
		if v := do(t, c, "GET", k1); v.Text() != connLost(hung) {
			t.Errorf("GET on a silent node's slot: %v, want %q", v, connLost(hung))
		}
	})
	if d < timeout {
		t.Errorf("the silent node's request failed after %v, before NodeTimeout %v", d, timeout)
	}
	close(stop)
	if err := <-otherDone; err != nil {
		t.Errorf("a client of a live node, meanwhile: %v", err)
	}
	if v := do(t, other, "GET", k2); v.IsError() || v.Text() == "" {
		t.Errorf("the live node's counter: %v", v)
	}
	// A pipeline mixing the silent node and a live one, written at once:
	// errors for the silent node's commands, values for the others, in
	// order.
	c.WriteRaw(pipeline(10, func(i int) []string {
		if i%2 == 1 {
			return []string{"GET", k1}
		}
		return []string{"GET", k0}
	}))
	timed(t, "a pipeline touching a silent node", promptly, func() {
		for i := range 10 {
			v, err := c.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 && v.Text() != "0" || i%2 == 1 && !v.IsError() {
				t.Errorf("pipelined reply %d: %v", i, v)
			}
		}
	})
	if v := do(t, c, "GET", k0); v.Text() != "0" {
		t.Errorf("GET on a live node after the timeouts: %v", v)
	}
}

// TestStoppedNodeAnswersClusterDown: a node process that is stopped
// (SIGSTOP) still has its connections completed by its kernel. After the
// first request has waited NodeTimeout, the node's slots answer
// CLUSTERDOWN at once until it answers PING again, rather than every
// fresh connection taking the next request into another NodeTimeout wait;
// once the process resumes, its slots are served again.
func TestStoppedNodeAnswersClusterDown(t *testing.T) {
	const timeout = 300 * time.Millisecond
	resumed, ended := make(chan struct{}), make(chan struct{})
	stopped := fakeNode(t, func(c net.Conn) {
		select {
		case <-resumed:
		case <-ended:
			return
		}
		serveCommands(c, func(args [][]byte) string {
			if strings.EqualFold(string(args[0]), "PING") {
				return "+PONG\r\n"
			}
			return "$-1\r\n" // GET of a missing key
		})
	})
	t.Cleanup(func() { close(ended) }) // before fakeNode's, which waits for its handlers
	addr, topo := clusterWith(t, []string{"", stopped}, proxy.Options{NodeTimeout: timeout, RedialBackoff: 20 * time.Millisecond})
	k1 := keyOnNode(t, topo, 1, "b")
	c := dial(t, addr, 2)
	if v := do(t, c, "GET", k1); v.Text() != connLost(stopped) {
		t.Fatalf("GET on a stopped node's slot: %v, want %q", v, connLost(stopped))
	}
	// Many redial periods later, no request waits on the node again.
	for end := time.Now().Add(5 * timeout); time.Now().Before(end); {
		start := time.Now()
		v := do(t, c, "GET", k1)
		if d := time.Since(start); d > timeout/2 {
			t.Fatalf("GET on a stopped node's slot took %v (reply %v): a fresh connection was trusted", d, v)
		}
		if v.Text() != resp.ErrClusterDownSlot {
			t.Fatalf("GET on a stopped node's slot: %v, want %q", v, resp.ErrClusterDownSlot)
		}
	}
	close(resumed)
	waitFor(t, "the resumed node's slots served", promptly, func() bool {
		v := do(t, c, "GET", k1)
		return v.Kind == difftest.NullBulk
	})
}

// TestStoppedNodeIdleWatchConnections: the idle dedicated connections
// that WATCH clients left behind are not handed to new WATCHes once the
// node stopped answering; those get CLUSTERDOWN at once rather than a
// NodeTimeout wait each.
func TestStoppedNodeIdleWatchConnections(t *testing.T) {
	const timeout = 300 * time.Millisecond
	var frozen atomic.Bool
	ended := make(chan struct{})
	stopping := fakeNode(t, func(c net.Conn) {
		serveCommands(c, func(args [][]byte) string {
			for frozen.Load() { // a stopped process answers nothing
				select {
				case <-ended:
					return ""
				case <-time.After(time.Millisecond):
				}
			}
			switch strings.ToUpper(string(args[0])) {
			case "PING":
				return "+PONG\r\n"
			case "GET":
				return "$-1\r\n"
			}
			return "+OK\r\n" // WATCH, UNWATCH
		})
	})
	t.Cleanup(func() { close(ended) }) // before fakeNode's, which waits for its handlers
	addr, topo := clusterWith(t, []string{"", stopping}, proxy.Options{NodeTimeout: timeout, RedialBackoff: 20 * time.Millisecond})
	k1 := keyOnNode(t, topo, 1, "b")
	var watchers []*difftest.Conn
	for range 3 {
		w := dial(t, addr, 2)
		if v := do(t, w, "WATCH", k1); v.Text() != "OK" {
			t.Fatalf("WATCH: %v", v)
		}
		watchers = append(watchers, w)
	}
	for _, w := range watchers {
		if v := do(t, w, "UNWATCH"); v.Text() != "OK" { // its node connection goes back to the pool
			t.Fatalf("UNWATCH: %v", v)
		}
	}
	time.Sleep(50 * time.Millisecond)
	frozen.Store(true)
	c := dial(t, addr, 2)
	if v := do(t, c, "GET", k1); v.Text() != connLost(stopping) {
		t.Fatalf("GET on a stopped node's slot: %v, want %q", v, connLost(stopping))
	}
	for i := range 3 {
		w := dial(t, addr, 2)
		start := time.Now()
		v := do(t, w, "WATCH", k1)
		if d := time.Since(start); d > timeout/2 || v.Text() != resp.ErrClusterDownSlot {
			t.Errorf("WATCH %d on a stopped node's slot: %v after %v, want %q at once", i, v, d, resp.ErrClusterDownSlot)
		}
		w.Close()
	}
	frozen.Store(false)
}

// TestCloseDuringRecovery: Close does not wait out the recoverer's
// handshake with a node that accepts connections and never answers.
func TestCloseDuringRecovery(t *testing.T) {
	const timeout = 300 * time.Millisecond
	hung := fakeNode(t, silent)
	topo, err := proxy.NewStaticTopology([]string{hung})
	if err != nil {
		t.Fatal(err)
	}
	// The recoverer's PING may wait DialTimeout+NodeTimeout: 20 s.
	srv, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, NodeTimeout: timeout, DialTimeout: 20 * time.Second, RedialBackoff: time.Millisecond})
	c := dial(t, addr, 2)
	if v := do(t, c, "GET", "k"); v.Text() != connLost(hung) {
		t.Fatalf("GET on a silent node: %v, want %q", v, connLost(hung))
	}
	time.Sleep(50 * time.Millisecond) // the recoverer is in its handshake
	timed(t, "Close during a recovery handshake", promptly, func() { srv.Close() })
}

// TestSilentNodeUnderTrickle: commands that keep arriving for a node that
// never answers (a stopped process, whose kernel still takes them in) do
// not keep its connection alive: the oldest request fails after about
// NodeTimeout, not NodeTimeout after the last one sent.
func TestSilentNodeUnderTrickle(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		trickle = 3 * time.Second
	)
	hung := fakeNode(t, silent)
	addr, topo := clusterWith(t, []string{"", hung}, proxy.Options{NodeTimeout: timeout, RedialBackoff: 50 * time.Millisecond})
	k1 := keyOnNode(t, topo, 1, "b")
	c := dial(t, addr, 2)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A client runs one batch at a time, so the trickle comes from
		// many clients, as from a client library's connection pool.
		var others []*difftest.Conn
		defer func() {
			for _, o := range others {
				o.Close()
			}
		}()
		for end := time.Now().Add(trickle); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			select {
			case <-stop:
				return
			default:
			}
			o, err := difftest.Dial(addr)
			if err != nil {
				return
			}
			others = append(others, o)
			if err := o.Send([]byte("GET"), []byte(k1)); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	time.Sleep(20 * time.Millisecond) // the trickle is flowing
	start := time.Now()
	if v := do(t, c, "GET", k1); !v.IsError() {
		t.Errorf("GET on a silent node's slot: %v, want an error", v)
	}
	if d := time.Since(start); d > trickle/2 {
		t.Errorf("the silent node's request failed after %v with commands trickling in; want about NodeTimeout (%v)", d, timeout)
	}
}

// TestSilentNodeHandshakeBackoff: with a handshake to do (a node
// password), a node that accepts and never answers costs one handshake
// timeout, after which the requests queued behind it fail at once with
// CLUSTERDOWN for the backoff (shorter than the handshake timeout here,
// as by default); they used to try one full handshake each,
// one after another.
func TestSilentNodeHandshakeBackoff(t *testing.T) {
	const (
		dialTimeout = 100 * time.Millisecond
		nodeTimeout = 300 * time.Millisecond
		clients     = 6
	)
	hung := fakeNode(t, silent)
	addr, topo := clusterWith(t, []string{"", hung}, proxy.Options{
		NodePassword: "pw", DialTimeout: dialTimeout, NodeTimeout: nodeTimeout, RedialBackoff: 100 * time.Millisecond,
	})
	k1 := keyOnNode(t, topo, 1, "b")
	conns := make([]*difftest.Conn, clients)
	for i := range conns {
		conns[i] = dial(t, addr, 2)
	}
	start := time.Now()
	var wg sync.WaitGroup
	replies := make([]difftest.Value, clients)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], _ = c.DoStrings("GET", k1)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, v := range replies {
		if !v.IsError() {
			t.Errorf("client %d: GET on a silent node's slot: %v, want an error", i, v)
		}
	}
	// One handshake timeout is DialTimeout+NodeTimeout (400 ms); one each
	// would take 2.4 s.
	if limit := 3 * (dialTimeout + nodeTimeout); took > limit {
		t.Errorf("%d clients of a silent node answered after %v; want about one handshake timeout (%v), under %v",
			clients, took, dialTimeout+nodeTimeout, limit)
	}
}

// TestInFlightRequestsFailWhenNodeDies: a node that reads a request and
// drops the connection without answering fails the request with the
// connection-lost error at once, not after NodeTimeout.
func TestInFlightRequestsFailWhenNodeDies(t *testing.T) {
	crashing := fakeNode(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		c.Read(buf) // one request arrives ...
		time.Sleep(20 * time.Millisecond)
		c.Close() // ... and the node "crashes" before answering
	})
	addr, topo := clusterWith(t, []string{"", crashing}, proxy.Options{NodeTimeout: time.Minute})
	c := dial(t, addr, 2)
	k0, k1 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b")
	timed(t, "a request in flight on a dying node", promptly, func() {
		if v := do(t, c, "GET", k1); v.Text() != connLost(crashing) {
			t.Errorf("GET in flight on a dying node: %v, want %q", v, connLost(crashing))
		}
	})
	// A pipeline in flight: every request on the dying node fails, the
	// other node's answer.
	for range 50 {
		c.Send([]byte("INCR"), []byte(k0))
		c.Send([]byte("INCR"), []byte(k1))
	}
	timed(t, "a pipeline in flight on a dying node", promptly, func() {
		for i := range 100 {
			v, err := c.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 && v.Int != int64(i/2+1) || i%2 == 1 && !strings.HasPrefix(v.Text(), "ERR connection to node") && v.Text() != resp.ErrClusterDownSlot {
				t.Errorf("reply %d: %v", i, v)
			}
		}
	})
}

// TestCloseWithRequestOnSilentNode: shutting the proxy down while a client
// waits for a silent node ends promptly once the shutdown grace is over
// (the client is disconnected), long before the node timeout.
func TestCloseWithRequestOnSilentNode(t *testing.T) {
	hung := fakeNode(t, silent)
	topo, err := proxy.NewStaticTopology([]string{hung})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, stop := proxytest.StartProxy(t, proxy.Options{Topology: topo, NodeTimeout: time.Minute, ShutdownGrace: 500 * time.Millisecond})
	c := dial(t, addr, 2)
	if err := c.Send([]byte("GET"), []byte("k")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the request is on its way
	timed(t, "closing the proxy with a request on a silent node", promptly, stop)
}

// infoField returns a field of an INFO reply.
func infoField(t *testing.T, c *difftest.Conn, section, field string) string {
	t.Helper()
	for _, line := range strings.Split(do(t, c, "INFO", section).Text(), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

// pipeline encodes n commands made by cmd(i) into one buffer.
func pipeline(n int, cmd func(i int) []string) []byte {
	var b []byte
	for i := range n {
		args := cmd(i)
		bs := make([][]byte, len(args))
		for j, a := range args {
			bs[j] = []byte(a)
		}
		b = resp.AppendCommand(b, bs)
	}
	return b
}

// TestClientGoneMidPipelineLeaksNothing: clients that send 10,000 commands
// in one write and close without reading leave no goroutine behind, and
// the proxy keeps serving the others.
func TestClientGoneMidPipelineLeaksNothing(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{ConnsPerNode: 1})
	keep := dial(t, cl.Addr, 2)
	for i := range 30 { // every node's shared connection exists from here on
		do(t, keep, "SET", fmt.Sprint("warm", i), "x")
	}
	before := goleak.IgnoreCurrent()
	cmds := pipeline(10000, func(i int) []string {
		if i%2 == 0 {
			return []string{"SET", fmt.Sprint("p", i), "value"}
		}
		return []string{"GET", fmt.Sprint("p", i-1)}
	})
	for round := range 6 {
		nc, err := net.Dial("tcp", cl.Addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetWriteDeadline(time.Now().Add(promptly))
		switch round % 3 {
		case 0: // everything, then close
			nc.Write(cmds)
		case 1: // half a command at the end
			nc.Write(cmds[:len(cmds)/2+3])
		case 2: // read a little, then close mid-stream
			nc.Write(cmds)
			nc.Read(make([]byte, 100))
		}
		if round >= 3 {
			nc.(*net.TCPConn).SetLinger(0) // a reset instead of a clean close
		}
		nc.Close()
	}
	waitFor(t, "the clients to be accepted and gone", promptly, func() bool {
		return infoField(t, keep, "stats", "total_connections_received") == "7" &&
			infoField(t, keep, "clients", "connected_clients") == "1"
	})
	t.Logf("commands processed: %s", infoField(t, keep, "stats", "total_commands_processed"))
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left behind: %v", err)
	}
	if v := do(t, keep, "GET", "warm1"); v.Text() != "x" {
		t.Errorf("GET after the clients left: %v", v)
	}
}

// TestWatchConnectionsReleasedWhenClientGoes: a client holding WATCHes on
// every node (dedicated node connections) and an open MULTI that
// disappears closes those connections, so the nodes drop its WATCHes.
func TestWatchConnectionsReleasedWhenClientGoes(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{ConnsPerNode: 1})
	keep := dial(t, cl.Addr, 2)
	for i := range 30 {
		do(t, keep, "SET", fmt.Sprint("warm", i), "x")
	}
	nodeConns := make([]*difftest.Conn, 3)
	clients := func() []string {
		var n []string
		for _, c := range nodeConns {
			n = append(n, infoField(t, c, "clients", "connected_clients"))
		}
		return n
	}
	for i, a := range cl.NodeAddrs {
		nodeConns[i] = dial(t, a, 2)
	}
	base := fmt.Sprint(clients())
	before := goleak.IgnoreCurrent()
	topo := cl.Proxy.Topology()
	for round := range 3 {
		c, err := difftest.Dial(cl.Addr)
		if err != nil {
			t.Fatal(err)
		}
		for n := range 3 {
			if v := do(t, c, "WATCH", keyOnNode(t, topo, n, "w")); v.Text() != "OK" {
				t.Fatalf("WATCH: %v", v)
			}
		}
		if round > 0 {
			do(t, c, "MULTI")
			do(t, c, "SET", keyOnNode(t, topo, 0, "w"), "x")
		}
		if got := fmt.Sprint(clients()); got == base {
			t.Fatalf("WATCH opened no node connection: %s", got)
		}
		c.Close()
		waitFor(t, "the WATCH connections to close", promptly, func() bool {
			return fmt.Sprint(clients()) == base
		})
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left behind: %v", err)
	}
	// The watched key is free for others.
	do(t, keep, "WATCH", keyOnNode(t, topo, 0, "w"))
	do(t, keep, "MULTI")
	do(t, keep, "SET", keyOnNode(t, topo, 0, "w"), "mine")
	if v := do(t, keep, "EXEC"); len(v.Elems) != 1 {
		t.Errorf("EXEC: %v", v)
	}
}

// TestShutdownWithBlockedClientLogsNoLoss: stopping the proxy while a
// client waits in BLPOP closes the proxy's own node connection, which is
// no lost connection to warn about or count.
func TestShutdownWithBlockedClientLogsNoLoss(t *testing.T) {
	var log proxy.LogBuffer
	cl := proxytest.Start(t, 1, proxy.Options{})
	topo, _ := proxy.NewStaticTopology(cl.NodeAddrs)
	_, addr, stop := proxytest.StartProxy(t, proxy.Options{Topology: topo, Logger: log.Logger()})
	c := rawDial(t, addr)
	io.WriteString(c, "*3\r\n$5\r\nBLPOP\r\n$6\r\nnolist\r\n$1\r\n0\r\n")
	watcher := dial(t, addr, 2)
	waitFor(t, "the client to block", promptly, func() bool {
		return infoField(t, watcher, "clients", "blocked_clients") == "1"
	})
	stop()
	if strings.Contains(log.String(), "node connection lost") {
		t.Errorf("shutdown logged a lost node connection:\n%s", log.String())
	}
}

// TestNodeAtMaxClients: a node that refuses the proxy a new connection at
// its maxclients is up, not down. A blocking command that needed a
// connection of its own gets the node's error (not CLUSTERDOWN), and the
// node's slots keep being served on the connections the proxy has, also
// when the handshake (AUTH) is what met the refusal.
func TestNodeAtMaxClients(t *testing.T) {
	for _, pass := range []string{"", "secret"} {
		t.Run(fmt.Sprintf("password=%q", pass), func(t *testing.T) {
			cl := proxytest.StartWithNodes(t, 1, node.Options{MaxClients: 3, RequirePass: pass},
				proxy.Options{NodePassword: pass, RedialBackoff: time.Minute})
			c := dial(t, cl.Addr, 2)
			do(t, c, "SET", "k", "v")

			const blockers = 6
			replies := make([]difftest.Value, blockers)
			var wg sync.WaitGroup
			for i := range blockers {
				b := dial(t, cl.Addr, 2)
				wg.Add(1)
				go func() {
					defer wg.Done()
					v, err := b.DoStrings("BLPOP", "q", "0.5")
					if err != nil {
						t.Error(err)
					}
					replies[i] = v
				}()
			}
			wg.Wait()
			full := 0
			for i, v := range replies {
				switch {
				case isNull(v):
				case v.Text() == resp.ErrMaxClients:
					full++
				default:
					t.Errorf("blocker %d: BLPOP = %v; want a timeout or %q", i, v, resp.ErrMaxClients)
				}
			}
			if full == 0 {
				t.Errorf("no BLPOP met the node's maxclients (3) with %d blockers", blockers)
			}
			// RedialBackoff is a minute: had the refusal marked the node
			// down, this would be CLUSTERDOWN.
			if v := do(t, c, "GET", "k"); v.Text() != "v" {
				t.Errorf("GET k after the refusals = %v, want v", v)
			}
		})
	}
}

// TestSlowNodeBigWrite: a big value that a node takes in slowly keeps
// the connection alive while its bytes move, even when the whole write
// lasts longer than NodeTimeout; only a node that stops taking bytes is
// cut off.
func TestSlowNodeBigWrite(t *testing.T) {
	const (
		timeout = 2 * time.Second
		size    = 32 << 20
	)
	header := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", size)
	want := len(header) + size + 2
	slow := fakeNode(t, func(c net.Conn) {
		buf := make([]byte, 64<<10)
		got := 0
		for got < want {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			got += n
			// At most 12.8 MB/s: the 32 MB take over 2.5 s, more
			// than NodeTimeout, while a 1 MB piece takes about 80 ms
			// (and under NodeTimeout even if each sleep lasts 100 ms,
			// as on a machine loaded by the race detector and more).
			time.Sleep(5 * time.Millisecond)
		}
		c.Write([]byte("+OK\r\n"))
		io.Copy(io.Discard, c)
	})
	addr, _ := clusterWith(t, []string{slow}, proxy.Options{NodeTimeout: timeout})
	nc := rawDial(t, addr)
	nc.SetDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	bw := bufio.NewWriterSize(nc, 1<<20)
	bw.WriteString(header)
	bw.Write(bytes.Repeat([]byte("x"), size))
	bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("SET of %d MB to a slow node: %q %v", size>>20, line, err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the write took %v, under NodeTimeout %v: the node was not slow enough to test anything", took, timeout)
	}
}

// TestCloseDuringIdleProbe: a proxy closed while its watchdog starts
// connecting to an idle node returns, closing the connection the probe
// makes. The watchdog could start a probe after Close had closed the node
// connections, and Close then waited for the probe's reader for as long as
// the node kept the connection open (an idle Redis: forever).
func TestCloseDuringIdleProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	dropAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close(); dropAll() })
	topo, err := proxy.NewStaticTopology([]string{ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 100 {
		// The watchdog ticks every NodeTimeout/4: 1 ms, so that Close
		// meets it in every state.
		srv, _, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, NodeTimeout: 4 * time.Millisecond})
		time.Sleep(time.Duration(round%10) * time.Millisecond)
		closed := make(chan struct{})
		go func() {
			srv.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(promptly):
			dropAll() // lets Close end
			t.Fatalf("round %d: Close has not returned after %v with an idle node connected", round, promptly)
		}
	}
}

// TestCloseRacingServe: Close called while Serve is starting waits for
// the background goroutines Serve starts, and Serve returns. Serve used to
// add them to the WaitGroup Close was already waiting on (reported by the
// race detector).
func TestCloseRacingServe(t *testing.T) {
	topo, err := proxy.NewStaticTopology([]string{freeAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		srv, err := proxy.New(proxy.Options{Topology: topo, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), ln) }()
		// Close just after Serve has taken the listener, while it
		// starts its goroutines.
		for srv.Addr() == nil {
			runtime.Gosched()
		}
		srv.Close()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, proxy.ErrServerClosed) {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(promptly):
			t.Fatal("Serve did not return after Close")
		}
	}
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}

// TestShutdownGraceDialsNodes: a command read before Close that needs a
// new node connection gets one during the shutdown grace and its node's
// reply. It used to get CLUSTERDOWN from a healthy node: connections made
// once Close had begun were refused.
func TestShutdownGraceDialsNodes(t *testing.T) {
	authSeen, release, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var seen sync.Once
	nodeAddr := fakeNode(t, func(c net.Conn) {
		serveCommands(c, func(args [][]byte) string {
			if strings.EqualFold(string(args[0]), "AUTH") {
				seen.Do(func() { close(authSeen) })
				select { // the handshake waits until Close has begun
				case <-release:
				case <-ended:
				}
			}
			return "+OK\r\n"
		})
	})
	t.Cleanup(func() { close(ended) }) // before fakeNode's, which waits for its handlers
	topo, err := proxy.NewStaticTopology([]string{nodeAddr})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, stop := proxytest.StartProxy(t, proxy.Options{Topology: topo, NodePassword: "pw", ShutdownGrace: 5 * time.Second})
	c := dial(t, addr, 2)
	if err := c.Send([]byte("SET"), []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-authSeen:
	case <-time.After(promptly):
		t.Fatal("the proxy did not dial the node")
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	waitFor(t, "Close to stop accepting", promptly, func() bool {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	close(release)
	v, err := c.Receive()
	if err != nil || v.Text() != "OK" {
		t.Errorf("SET read before Close, during the grace: %v, %v; want OK", v, err)
	}
	<-stopped
}

// TestBlockedClientsOfSilentNode: a node that stops answering (a stopped
// process, a partition) fails the commands blocked on it without a
// timeout too, within a bounded time: at once when other traffic finds
// the node silent, and by a PING of the proxy's own when nothing else is
// sent to it. A BLPOP 0 waited for ever.
func TestBlockedClientsOfSilentNode(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, traffic := range []bool{true, false} {
		t.Run(fmt.Sprintf("traffic=%v", traffic), func(t *testing.T) {
			var frozen atomic.Bool
			ended := make(chan struct{})
			fake := fakeNode(t, func(c net.Conn) {
				serveCommands(c, func(args [][]byte) string {
					for len(args) > 2 && strings.EqualFold(string(args[0]), "SHARDGATE") {
						args = args[2:] // SHARDGATE UNLOGGED ...
					}
					switch {
					case frozen.Load():
						<-ended
						return ""
					case strings.EqualFold(string(args[0]), "BLPOP"):
						<-ended // blocked: nothing is ever pushed
						return ""
					case strings.EqualFold(string(args[0]), "CLIENT"):
						return ":7\r\n"
					case strings.EqualFold(string(args[0]), "PING"):
						return "+PONG\r\n"
					}
					return "*-1\r\n" // LMPOP of an empty list, GET of a missing key
				})
			})
			t.Cleanup(func() { close(ended) }) // before fakeNode's, which waits for its handlers
			addr, _ := clusterWith(t, []string{fake}, proxy.Options{NodeTimeout: timeout, RedialBackoff: 20 * time.Millisecond})
			blocked := dial(t, addr, 2)
			send(t, blocked, "BLPOP", "q", "0")
			got := receiveAsync(blocked)
			time.Sleep(timeout / 2) // the BLPOP is on the node
			frozen.Store(true)
			limit := 2 * timeout
			if traffic {
				c := dial(t, addr, 2)
				if v := do(t, c, "GET", "k"); v.Text() != connLost(fake) {
					t.Fatalf("GET on the silent node: %v", v)
				}
			} else {
				limit = 4 * timeout // quiet for NodeTimeout, then the PING's NodeTimeout
			}
			if v := recvWithin(t, "BLPOP 0 on a silent node", got, limit+promptly); v.Text() != connLost(fake) {
				t.Errorf("BLPOP 0 on a silent node: %v, want %q", v, connLost(fake))
			}
		})
	}
}

// TestPipelineWrittenBeforeReading: a client that writes a whole big
// pipeline before it reads (redis-py's execute, go-redis's Pipeline) gets
// every reply: the proxy keeps reading while the client's socket is full
// of replies, as Redis does. Both sides waited for ever.
func TestPipelineWrittenBeforeReading(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	if err := difftest.WriteAllThenRead(cl.Addr, "k", 300_000, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}
