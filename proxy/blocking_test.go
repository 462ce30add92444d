package proxy_test

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// Blocking commands through the proxy, over plain redis-servers and over
// shardgate nodes: served by a later push, timeouts,
// pipelines around them, many blocked clients next to pipelined traffic,
// a client that leaves or QUITs while blocked (nothing left blocked on the
// node), a node that dies under blocked clients, CLIENT UNBLOCK, and the
// cross-slot rules.

// blockEnv is a proxy over two nodes: plain redis-servers, or shardgate
// nodes.
type blockEnv struct {
	addr   string // the proxy's
	stop   func() // stops the proxy
	nodes  []*blockNode
	nodeOf func(key string) *blockNode
}

type blockNode struct {
	Addr string
	Stop func()
}

// blockNodeTimeout is short, so that a watchdog that cut blocked
// connections would show within the tests' waits, yet long enough that a
// node on a loaded machine answers within it (300 ms was not, at a load
// average of 30 on 2 cores).
const blockNodeTimeout = time.Second

// forBackends runs f over redis-servers, then over shardgate nodes, with
// a proxy whose NodeTimeout is blockNodeTimeout.
func forBackends(t *testing.T, f func(t *testing.T, e *blockEnv)) {
	forBackendsTimeout(t, blockNodeTimeout, f)
}

// forBackendsTimeout is forBackends with the proxy's NodeTimeout given.
func forBackendsTimeout(t *testing.T, nodeTimeout time.Duration, f func(t *testing.T, e *blockEnv)) {
	if slots.Lookup([]byte("blpop")) == nil || slots.Lookup([]byte("lpush")) == nil {
		t.Skip("the command table does not serve the list commands yet")
	}
	opts := proxy.Options{NodeTimeout: nodeTimeout}
	t.Run("redis", func(t *testing.T) {
		if !onPath(difftest.RedisBinary) {
			skipOrFail(t, "redis-server not on PATH: the blocking-command tests use redis-servers as nodes")
		}
		e := &blockEnv{}
		var addrs []string
		for range 2 {
			r, err := difftest.StartPlainRedis()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.Stop)
			e.nodes = append(e.nodes, &blockNode{Addr: r.Addr, Stop: r.Stop})
			addrs = append(addrs, r.Addr)
		}
		topo, err := proxy.NewStaticTopology(addrs)
		if err != nil {
			t.Fatal(err)
		}
		opts := opts
		opts.Topology = topo
		opts.PlainRedisNodes = true
		_, e.addr, e.stop = proxytest.StartProxy(t, opts)
		e.nodeOf = func(key string) *blockNode { return e.nodes[topo.Owner(slots.SlotString(key))] }
		f(t, e)
	})
	t.Run("shardgate", func(t *testing.T) {
		px := proxytest.Start(t, 2, opts)
		probe := dial(t, px.NodeAddrs[0], 2)
		if v := do(t, probe, "BLPOP", "probe", "0.01"); v.IsError() {
			t.Skipf("the node does not serve BLPOP yet: %v", v)
		}
		e := &blockEnv{addr: px.Addr, stop: px.Stop}
		for i, a := range px.NodeAddrs {
			e.nodes = append(e.nodes, &blockNode{Addr: a, Stop: px.StopNode[i]})
		}
		topo := px.Proxy.Topology()
		e.nodeOf = func(key string) *blockNode { return e.nodes[topo.Owner(slots.SlotString(key))] }
		f(t, e)
	})
}

func send(t *testing.T, c *difftest.Conn, args ...string) {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if err := c.Send(b...); err != nil {
		t.Fatal(err)
	}
}

// receiveAsync receives one reply in the background.
func receiveAsync(c *difftest.Conn) <-chan difftest.Value {
	ch := make(chan difftest.Value, 1)
	go func() {
		v, err := c.Receive()
		if err != nil {
			v = difftest.Err("receive: " + err.Error())
		}
		ch <- v
	}()
	return ch
}

func want(t *testing.T, what string, got, exp difftest.Value) {
	t.Helper()
	if !difftest.Equal(got, exp) {
		t.Errorf("%s: got %v, want %v", what, got, exp)
	}
}

func recvWithin(t *testing.T, what string, ch <-chan difftest.Value, limit time.Duration) difftest.Value {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("%s: no reply within %v", what, limit)
		return difftest.Value{}
	}
}

// blockedOn is INFO's blocked_clients of a server.
func blockedOn(t *testing.T, addr string) int {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.DoStrings("INFO", "clients")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(v.Text(), "\r\n") {
		if s, ok := strings.CutPrefix(l, "blocked_clients:"); ok {
			n, _ := strconv.Atoi(s)
			return n
		}
	}
	t.Fatalf("no blocked_clients in %q", v.Text())
	return 0
}

func waitBlocked(t *testing.T, addr string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d blocked clients on %s", n, addr), promptly, func() bool { return blockedOn(t, addr) == n })
}

func arr(elems ...string) difftest.Value {
	vs := make([]difftest.Value, len(elems))
	for i, e := range elems {
		vs[i] = difftest.BulkOf(e)
	}
	return difftest.ArrayOf(vs...)
}

func TestBlockingServedByPush(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		for _, proto := range []int{2, 3} {
			a := dial(t, e.addr, proto)
			b := dial(t, e.addr, proto)
			node := e.nodeOf("q").Addr

			send(t, a, "BLPOP", "q", "0")
			got := receiveAsync(a)
			waitBlocked(t, node, 1)
			if n := blockedOn(t, e.addr); n != 1 {
				t.Errorf("proxy blocked_clients = %d, want 1", n)
			}
			// Longer than NodeTimeout: the watchdog leaves it alone.
			time.Sleep(3 * blockNodeTimeout)
			want(t, "LPUSH", do(t, b, "LPUSH", "q", "x"), difftest.Int(1))
			want(t, "BLPOP served", recvWithin(t, "BLPOP", got, promptly), arr("q", "x"))

			// The dedicated connection went back clean: block again, on
			// BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP.
			for _, c := range []struct {
				args []string
				exp  difftest.Value
			}{
				{[]string{"BRPOP", "q", "0"}, arr("q", "y")},
				{[]string{"BLMOVE", "q", "{q}2", "LEFT", "RIGHT", "0"}, difftest.BulkOf("y")},
				{[]string{"BRPOPLPUSH", "q", "{q}2", "0"}, difftest.BulkOf("y")},
				{[]string{"BLMPOP", "0", "1", "q", "LEFT"}, difftest.ArrayOf(difftest.BulkOf("q"), arr("y"))},
			} {
				send(t, a, c.args...)
				got := receiveAsync(a)
				waitBlocked(t, node, 1)
				do(t, b, "RPUSH", "q", "y")
				want(t, c.args[0], recvWithin(t, c.args[0], got, promptly), c.exp)
			}
			waitBlocked(t, node, 0)
			do(t, b, "DEL", "q", "{q}2")
		}
	})
}

func TestBlockingTimeout(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		for _, proto := range []int{2, 3} {
			c := dial(t, e.addr, proto)
			direct := dial(t, e.nodeOf("q").Addr, proto)
			for _, args := range [][]string{
				{"BLPOP", "q", "0.1"},
				{"BRPOP", "q", "0.05"},
				{"BLMOVE", "q", "q", "LEFT", "RIGHT", "0.05"},
				{"BRPOPLPUSH", "q", "q", "0.05"},
				{"BLMPOP", "0.05", "1", "q", "RIGHT"},
				{"BLPOP", "q", "-1"},
				{"BLPOP", "q", "abc"},
			} {
				start := time.Now()
				got := do(t, c, args...)
				if d := time.Since(start); d > promptly {
					t.Errorf("%q took %v", args, d)
				}
				want(t, fmt.Sprintf("RESP%d %q", proto, args), got, do(t, direct, args...))
			}
		}
	})
}

// TestBlockingPipeline: the commands before a blocking one are answered
// (and written) before it blocks, the ones after it once it is served.
func TestBlockingPipeline(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		c := dial(t, e.addr, 2)
		b := dial(t, e.addr, 2)
		send(t, c, "SET", "k", "v")
		send(t, c, "BLPOP", "q", "0")
		send(t, c, "GET", "k")
		want(t, "SET before BLPOP", recvWithin(t, "SET", receiveAsync(c), promptly), difftest.Simple("OK"))
		waitBlocked(t, e.nodeOf("q").Addr, 1)
		do(t, b, "RPUSH", "q", "1")
		want(t, "BLPOP", recvWithin(t, "BLPOP", receiveAsync(c), promptly), arr("q", "1"))
		want(t, "GET after BLPOP", recvWithin(t, "GET", receiveAsync(c), promptly), difftest.BulkOf("v"))

		// Served at once, in one write with other commands.
		send(t, c, "RPUSH", "q", "a", "b")
		send(t, c, "BLPOP", "q", "0")
		send(t, c, "BRPOP", "q", "0")
		send(t, c, "LLEN", "q")
		for _, exp := range []difftest.Value{difftest.Int(2), arr("q", "a"), arr("q", "b"), difftest.Int(0)} {
			want(t, "pipeline", recvWithin(t, "pipeline", receiveAsync(c), promptly), exp)
		}

	})
}

func TestBlockingManyClients(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		const n = 40
		conns := make([]*difftest.Conn, n)
		replies := make([]<-chan difftest.Value, n)
		for i := range n {
			conns[i] = dial(t, e.addr, 2)
			send(t, conns[i], "BLPOP", fmt.Sprint("w", i), "0")
			replies[i] = receiveAsync(conns[i])
		}
		total := func() int {
			s := 0
			for _, r := range e.nodes {
				s += blockedOn(t, r.Addr)
			}
			return s
		}
		waitFor(t, "all clients blocked", promptly, func() bool { return total() == n })

		// The shared connections carry other clients' pipelines meanwhile.
		other := dial(t, e.addr, 2)
		timed(t, "a pipeline next to blocked clients", promptly, func() {
			for i := range 500 {
				send(t, other, "SET", fmt.Sprint("k", i), fmt.Sprint(i))
				send(t, other, "GET", fmt.Sprint("k", i))
			}
			for i := range 500 {
				want(t, "SET", recvWithin(t, "SET", receiveAsync(other), promptly), difftest.Simple("OK"))
				want(t, "GET", recvWithin(t, "GET", receiveAsync(other), promptly), difftest.BulkOf(fmt.Sprint(i)))
			}
		})
		for i := range n {
			do(t, other, "RPUSH", fmt.Sprint("w", i), "job")
		}
		for i := range n {
			want(t, "BLPOP", recvWithin(t, "BLPOP", replies[i], promptly), arr(fmt.Sprint("w", i), "job"))
		}
		waitFor(t, "no client blocked", promptly, func() bool { return total() == 0 })
	})
}

func TestBlockingClientLeaves(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("q").Addr
		b := dial(t, e.addr, 2)

		// Disconnect.
		a := dial(t, e.addr, 2)
		send(t, a, "BLPOP", "q", "0")
		waitBlocked(t, node, 1)
		a.Close()
		waitBlocked(t, node, 0)
		waitFor(t, "proxy blocked_clients 0", promptly, func() bool { return blockedOn(t, e.addr) == 0 })
		// Nothing is consumed for the client that left.
		do(t, b, "RPUSH", "q", "kept")
		want(t, "LLEN", do(t, b, "LLEN", "q"), difftest.Int(1))
		do(t, b, "DEL", "q")

		// CLIENT KILL from another client.
		a = dial(t, e.addr, 2)
		id := do(t, a, "CLIENT", "ID").Int
		send(t, a, "BLMOVE", "q", "{q}2", "LEFT", "LEFT", "0")
		waitBlocked(t, node, 1)
		want(t, "CLIENT KILL", do(t, b, "CLIENT", "KILL", "ID", fmt.Sprint(id)), difftest.Int(1))
		waitBlocked(t, node, 0)

		// QUIT while blocked, as in Redis: the client stays blocked until
		// served, then gets QUIT's OK, then the connection closes;
		// commands pipelined before QUIT run, in order.
		for _, proto := range []int{2, 3} {
			a = dial(t, e.addr, proto)
			send(t, a, "BLPOP", "q", "0")
			waitBlocked(t, node, 1)
			send(t, a, "SET", "after", "1")
			send(t, a, "QUIT")
			send(t, a, "SET", "ignored", "1")
			got := receiveAsync(a)
			time.Sleep(50 * time.Millisecond)
			waitBlocked(t, node, 1)
			do(t, b, "RPUSH", "q", "x")
			want(t, "BLPOP served after QUIT", recvWithin(t, "BLPOP", got, promptly), arr("q", "x"))
			want(t, "SET", recvWithin(t, "SET", receiveAsync(a), promptly), difftest.Simple("OK"))
			want(t, "QUIT", recvWithin(t, "QUIT", receiveAsync(a), promptly), difftest.Simple("OK"))
			if v := recvWithin(t, "EOF", receiveAsync(a), promptly); !v.IsError() {
				t.Errorf("after QUIT: got %v, want the connection closed", v)
			}
			waitBlocked(t, node, 0)
			want(t, "EXISTS ignored", do(t, b, "EXISTS", "ignored"), difftest.Int(0))
		}
	})
}

// TestBlockingHalfClose: a client that shuts its writing side while
// blocked is freed without a reply, as Redis frees it when it reads the
// close (it does not answer the blocking command as timed out), and
// nothing is popped for it.
func TestBlockingHalfClose(t *testing.T) {
	const blpop = "*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n"
	halfClose := func(t *testing.T, addr string, blocked func(n int)) string {
		t.Helper()
		nc := rawDial(t, addr)
		nc.SetDeadline(time.Now().Add(promptly))
		io.WriteString(nc, "PING\r\n"+blpop)
		blocked(1)
		nc.(*net.TCPConn).CloseWrite()
		out, err := io.ReadAll(nc)
		if err != nil {
			t.Errorf("reading until the close: %v", err)
		}
		blocked(0)
		return string(out)
	}
	oracle := startPlainOracle(t, "half-close")
	if got := halfClose(t, oracle, func(n int) { waitBlocked(t, oracle, n) }); got != "+PONG\r\n" {
		t.Fatalf("redis-server sent %q before closing", got)
	}
	forBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("q").Addr
		got := halfClose(t, e.addr, func(n int) {
			waitBlocked(t, node, n)
			waitFor(t, fmt.Sprint("proxy blocked_clients ", n), promptly, func() bool { return blockedOn(t, e.addr) == n })
		})
		if got != "+PONG\r\n" {
			t.Errorf("the proxy sent %q before closing, want %q as Redis", got, "+PONG\r\n")
		}
		b := dial(t, e.addr, 2)
		do(t, b, "RPUSH", "q", "kept")
		want(t, "LLEN", do(t, b, "LLEN", "q"), difftest.Int(1))
		do(t, b, "DEL", "q")
	})
}

func TestBlockingNodeDies(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		r := e.nodeOf("q")
		a := dial(t, e.addr, 2)
		send(t, a, "BLPOP", "q", "0")
		got := receiveAsync(a)
		waitBlocked(t, r.Addr, 1)
		r.Stop()
		v := recvWithin(t, "BLPOP on a dead node", got, promptly)
		if !v.IsError() || !strings.Contains(v.Text(), "connection to node") {
			t.Errorf("BLPOP on a dead node: got %v, want the node-lost error", v)
		}
		// The client and the other node carry on.
		var other string
		for i := 0; ; i++ {
			other = fmt.Sprint("k", i)
			if e.nodeOf(other) != r {
				break
			}
		}
		want(t, "SET on the live node", do(t, a, "SET", other, "v"), difftest.Simple("OK"))
	})
}

func TestBlockingClientUnblock(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("q").Addr
		direct := dial(t, node, 2)
		for _, proto := range []int{2, 3} {
			a := dial(t, e.addr, proto)
			b := dial(t, e.addr, 2)
			id := fmt.Sprint(do(t, a, "CLIENT", "ID").Int)
			want(t, "not blocked", do(t, b, "CLIENT", "UNBLOCK", id), difftest.Int(0))

			send(t, a, "BLPOP", "q", "0")
			got := receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "CLIENT UNBLOCK", do(t, b, "CLIENT", "UNBLOCK", id), difftest.Int(1))
			nullArr := difftest.Value{Kind: difftest.NullArray}
			if proto == 3 {
				nullArr = difftest.Value{Kind: difftest.Null}
			}
			want(t, "unblocked BLPOP", recvWithin(t, "BLPOP", got, promptly), nullArr)

			send(t, a, "BLMOVE", "q", "{q}2", "RIGHT", "LEFT", "0")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "CLIENT UNBLOCK ERROR", do(t, b, "CLIENT", "UNBLOCK", id, "error"), difftest.Int(1))
			want(t, "unblocked BLMOVE", recvWithin(t, "BLMOVE", got, promptly), difftest.Err("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
			waitBlocked(t, node, 0)

			// The connection still works, and blocks again.
			send(t, a, "BLPOP", "q", "0")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "CLIENT UNBLOCK TIMEOUT", do(t, b, "CLIENT", "UNBLOCK", id, "TIMEOUT"), difftest.Int(1))
			want(t, "unblocked again", recvWithin(t, "BLPOP", got, promptly), nullArr)
			want(t, "after unblock", do(t, b, "CLIENT", "UNBLOCK", id), difftest.Int(0))
		}
		// Refusals, as Redis gives them.
		b := dial(t, e.addr, 2)
		for _, args := range [][]string{
			{"CLIENT", "UNBLOCK", "999999"},
			{"CLIENT", "UNBLOCK", "abc"},
			{"CLIENT", "UNBLOCK", "1", "foo"},
			{"CLIENT", "UNBLOCK", "abc", "foo"},
			{"CLIENT", "UNBLOCK", "1", "timeout", "x"},
			{"client", "Unblock", "1", "timeout", "x"},
			{"CLIENT", "UNBLOCK"},
		} {
			want(t, fmt.Sprintf("%q", args), do(t, b, args...), do(t, direct, args...))
		}
	})
}

func TestBlockingCrossSlot(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		c := dial(t, e.addr, 2)
		b := dial(t, e.addr, 2)
		crossslot := difftest.Err("CROSSSLOT Keys in request don't hash to the same slot")
		for _, args := range [][]string{
			{"BLPOP", "a", "b", "0"},
			{"BRPOP", "a", "b", "0"},
			{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"},
			{"BRPOPLPUSH", "a", "b", "0"},
			{"BLMPOP", "0", "2", "a", "b", "LEFT"},
		} {
			want(t, fmt.Sprintf("%q", args), do(t, c, args...), crossslot)
		}
		// Same slot by hash tag: served, multi-key BLPOP takes the first
		// non-empty key in argument order.
		node := e.nodeOf("{t}src").Addr
		send(t, c, "BLMOVE", "{t}src", "{t}dst", "LEFT", "RIGHT", "0")
		got := receiveAsync(c)
		waitBlocked(t, node, 1)
		do(t, b, "RPUSH", "{t}src", "job1")
		want(t, "BLMOVE", recvWithin(t, "BLMOVE", got, promptly), difftest.BulkOf("job1"))
		want(t, "LRANGE dst", do(t, b, "LRANGE", "{t}dst", "0", "-1"), arr("job1"))
		do(t, b, "RPUSH", "{t}b", "x")
		do(t, b, "RPUSH", "{t}c", "y")
		want(t, "BLPOP tags", do(t, c, "BLPOP", "{t}a", "{t}c", "{t}b", "0"), arr("{t}c", "y"))
		want(t, "BLMPOP tags", do(t, c, "BLMPOP", "0", "2", "{t}a", "{t}b", "LEFT"), difftest.ArrayOf(difftest.BulkOf("{t}b"), arr("x")))

		// Inside MULTI: queued, and EXEC does not block.
		want(t, "MULTI", do(t, c, "MULTI"), difftest.Simple("OK"))
		want(t, "queued", do(t, c, "BLPOP", "{t}empty", "0"), difftest.Simple("QUEUED"))
		want(t, "EXEC", do(t, c, "EXEC"), difftest.ArrayOf(difftest.Value{Kind: difftest.NullArray}))
	})
}

// TestBlockingConcurrentQueue: workers blocked in BLMOVE, producers
// pushing; every job is moved exactly once and no waiter is left.
func TestBlockingConcurrentQueue(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		const workers, jobs = 8, 400
		var wg sync.WaitGroup
		seen := make(chan string, 2*jobs)
		for w := range workers {
			c := dial(t, e.addr, 2)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					v, err := c.DoStrings("BLMOVE", "{q}jobs", "{q}processing", "RIGHT", "LEFT", "0.5")
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					if v.Kind == difftest.NullArray { // Redis 7.0 times BLMOVE out with a null array
						return
					}
					if v.Kind != difftest.Bulk {
						t.Errorf("worker %d: BLMOVE answered %v", w, v)
						return
					}
					seen <- v.Text()
				}
			}()
		}
		p := dial(t, e.addr, 2)
		for i := range jobs {
			do(t, p, "LPUSH", "{q}jobs", fmt.Sprint(i))
		}
		wg.Wait()
		close(seen)
		got := map[string]int{}
		for s := range seen {
			got[s]++
		}
		if len(got) != jobs {
			t.Errorf("%d distinct jobs moved, want %d", len(got), jobs)
		}
		for s, n := range got {
			if n != 1 {
				t.Errorf("job %s moved %d times", s, n)
			}
		}
		want(t, "processing", do(t, p, "LLEN", "{q}processing"), difftest.Int(jobs))
		waitBlocked(t, e.nodeOf("{q}jobs").Addr, 0)
	})
}

// TestBlockingSilentNode: a node that takes commands and never answers
// fails blocking commands, with or without a timeout, once NodeTimeout has
// passed: the proxy first tries the command's non-blocking form on the
// shared connection, and the watchdog cuts that connection off.
func TestBlockingSilentNode(t *testing.T) {
	if slots.Lookup([]byte("blpop")) == nil {
		t.Skip("the command table does not serve the list commands yet")
	}
	addr := fakeNode(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	topo, err := proxy.NewStaticTopology([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	_, paddr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, NodeTimeout: blockNodeTimeout})
	for _, timeout := range []string{"0", "0.2"} {
		c := dial(t, paddr, 2)
		start := time.Now()
		v := do(t, c, "BLPOP", "q", timeout)
		d := time.Since(start)
		if !v.IsError() || !strings.Contains(v.Text(), "connection to node") && !strings.HasPrefix(v.Text(), "CLUSTERDOWN") {
			t.Errorf("BLPOP %s on a silent node: got %v, want the node-lost error or CLUSTERDOWN", timeout, v)
		}
		if d > promptly {
			t.Errorf("BLPOP %s on a silent node failed after %v", timeout, d)
		}
	}
}

// TestBlockingLeaksNothing: clients that leave while blocked, and a proxy
// closed under blocked clients, leave no goroutine behind.
func TestBlockingLeaksNothing(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		keep := dial(t, e.addr, 2)
		do(t, keep, "SET", "warm", "x")
		before := goleak.IgnoreCurrent()
		var left []*difftest.Conn
		for i := range 10 {
			c, err := difftest.Dial(e.addr)
			if err != nil {
				t.Fatal(err)
			}
			send(t, c, "BLPOP", fmt.Sprint("leak", i), "0")
			if i%2 == 0 {
				left = append(left, c)
			} else {
				defer c.Close()
			}
		}
		waitFor(t, "10 blocked clients", promptly, func() bool { return blockedOn(t, e.addr) == 10 })
		for _, c := range left {
			c.Close()
		}
		waitFor(t, "5 blocked clients", promptly, func() bool { return blockedOn(t, e.addr) == 5 })
		keep.Close()
		timed(t, "closing the proxy under blocked clients", promptly, e.stop)
		for _, n := range e.nodes {
			waitBlocked(t, n.Addr, 0)
		}
		if err := goleak.Find(before); err != nil {
			t.Errorf("goroutines left behind: %v", err)
		}
	})
}

// TestBlockingClientLeavesPushAtOnce closes a blocked client and pushes
// at once from another: whatever the node handed to the proxy for the
// client that left goes back where it was, so the list ends as it would
// on Redis (which reads the close before the push and serves nobody).
func TestBlockingClientLeavesPushAtOnce(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("q").Addr
		b := dial(t, e.addr, 2)
		for _, args := range [][]string{
			{"BLPOP", "q", "0"},
			{"BRPOP", "q", "0"},
			{"BLMPOP", "0", "1", "q", "LEFT", "COUNT", "2"},
			{"BLMPOP", "0", "1", "q", "RIGHT", "COUNT", "2"},
		} {
			for round := range 10 {
				do(t, b, "DEL", "q")
				a := dial(t, e.addr, 2)
				send(t, a, args...)
				waitBlocked(t, node, 1)
				a.Close()
				do(t, b, "RPUSH", "q", "x", "y")
				waitFor(t, fmt.Sprintf("%q round %d: the list whole again", args, round), promptly, func() bool {
					v := do(t, b, "LRANGE", "q", "0", "-1")
					return len(v.Elems) == 2 && string(v.Elems[0].Str) == "x" && string(v.Elems[1].Str) == "y"
				})
				waitBlocked(t, node, 0)
			}
		}
	})
}

// TestBlockingClientGoneAtOnce: a client that closes right after sending
// a blocking command (before the node has blocked it, so the first CLIENT
// UNBLOCK overtakes it) leaves nothing blocked on the node: a push a
// moment later is not taken for it, as in Redis. The unblock used to be
// sent once, and the command then stayed blocked for NodeTimeout.
func TestBlockingClientGoneAtOnce(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("q").Addr
		b := dial(t, e.addr, 2)
		for round := range 10 {
			do(t, b, "DEL", "q", "{q}dst")
			a := dial(t, e.addr, 2)
			send(t, a, "BLMOVE", "q", "{q}dst", "RIGHT", "LEFT", "0")
			a.Close()
			// Well under NodeTimeout (1 s), well over the unblock's
			// retries.
			time.Sleep(blockNodeTimeout / 4)
			if n := blockedOn(t, node); n != 0 {
				t.Fatalf("round %d: %d clients still blocked on the node %v after their client left", round, n, blockNodeTimeout/4)
			}
			do(t, b, "RPUSH", "q", "a", "b")
			want(t, fmt.Sprintf("round %d: LRANGE q", round), do(t, b, "LRANGE", "q", "0", "-1"), arr("a", "b"))
			want(t, fmt.Sprintf("round %d: LLEN {q}dst", round), do(t, b, "LLEN", "{q}dst"), difftest.Int(0))
		}
	})
}

// TestBlockingWait: WAIT for replicas blocks on a dedicated node
// connection, so the shared ones keep serving other clients meanwhile; it
// answers 0 after its timeout or at CLIENT UNBLOCK, at once for 0 replicas
// and inside MULTI, and leaves nothing blocked when its client goes.
func TestBlockingWait(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		blocked := func() int {
			n := 0
			for _, nd := range e.nodes {
				n += blockedOn(t, nd.Addr)
			}
			return n
		}
		waitTotal := func(n int) {
			t.Helper()
			waitFor(t, fmt.Sprintf("%d clients blocked on the nodes", n), promptly, func() bool { return blocked() == n })
		}
		a := dial(t, e.addr, 2)
		b := dial(t, e.addr, 3)
		want(t, "WAIT 0 0", do(t, a, "WAIT", "0", "0"), difftest.Int(0))
		start := time.Now()
		want(t, "WAIT 1 50", do(t, a, "WAIT", "1", "50"), difftest.Int(0))
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("WAIT 1 50 answered after %v", d)
		}

		id := fmt.Sprint(do(t, a, "CLIENT", "ID").Int)
		send(t, a, "WAIT", "1", "0")
		got := receiveAsync(a)
		waitTotal(1)
		for i := range 30 {
			k := fmt.Sprint("wait:", i)
			do(t, b, "SET", k, k)
			want(t, "GET while a client waits", do(t, b, "GET", k), difftest.BulkOf(k))
		}
		want(t, "CLIENT UNBLOCK", do(t, b, "CLIENT", "UNBLOCK", id), difftest.Int(1))
		want(t, "unblocked WAIT", recvWithin(t, "WAIT", got, promptly), difftest.Int(0))
		waitTotal(0)

		want(t, "MULTI", do(t, a, "MULTI"), difftest.Simple("OK"))
		want(t, "queued WAIT", do(t, a, "WAIT", "1", "0"), difftest.Simple("QUEUED"))
		want(t, "EXEC", do(t, a, "EXEC"), difftest.ArrayOf(difftest.Int(0)))

		c := dial(t, e.addr, 2)
		send(t, c, "WAIT", "2", "0")
		waitTotal(1)
		c.Close()
		waitTotal(0)
		want(t, "after", do(t, a, "PING"), difftest.Simple("PONG"))
	})
}

// TestUnblockedBeforeReply: CLIENT UNBLOCK and CLIENT KILL of a blocked
// client answer once its command has ended on the node, so an element
// pushed after that answer (or pipelined right behind it) goes to the
// next waiter, as in Redis. It used
// to reach the client being unblocked or killed now and then: the answer
// came as soon as the blocked client had been told to unblock.
func TestUnblockedBeforeReply(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("w").Addr
		c := dial(t, e.addr, 2)
		for i := range 40 {
			kill := i%2 == 1
			a, b := dial(t, e.addr, 2), dial(t, e.addr, 2)
			id := fmt.Sprint(do(t, a, "CLIENT", "ID").Int)
			send(t, a, "BLMOVE", "w", "{w}a", "RIGHT", "LEFT", "0")
			gotA := receiveAsync(a)
			waitBlocked(t, node, 1)
			send(t, b, "BLMOVE", "w", "{w}b", "RIGHT", "LEFT", "0")
			gotB := receiveAsync(b)
			waitBlocked(t, node, 2)
			// In one write: the push right behind the unblock.
			end := []string{"CLIENT", "UNBLOCK", id}
			if kill {
				end = []string{"CLIENT", "KILL", "ID", id}
			}
			if err := c.WriteRaw(pipeline(2, func(i int) []string { return [][]string{end, {"RPUSH", "w", "e"}}[i] })); err != nil {
				t.Fatal(err)
			}
			for _, what := range []string{end[1], "RPUSH"} {
				v, err := c.Receive()
				if err != nil {
					t.Fatal(err)
				}
				want(t, what, v, difftest.Int(1))
			}
			want(t, "the next waiter's BLMOVE", recvWithin(t, "BLMOVE", gotB, promptly), difftest.BulkOf("e"))
			if !kill {
				want(t, "the unblocked BLMOVE", recvWithin(t, "BLMOVE", gotA, promptly), difftest.Value{Kind: difftest.NullArray})
			}
			want(t, "LLEN of the unblocked client's destination", do(t, c, "LLEN", "{w}a"), difftest.Int(0))
			do(t, c, "DEL", "{w}b")
			a.Close()
			b.Close()
			waitBlocked(t, node, 0)
		}
	})
}

// TestBlockingReusesConnections: clients that block again and again, many
// at once, reuse the dedicated node connections their earlier calls
// released, as many as were in use together: each round of 40 clients
// blocking at once (and timing out) opens no new connection to the nodes
// after the first. With at most 8 kept, every round opened 32 more.
func TestBlockingReusesConnections(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		const n, rounds = 40, 4
		conns := make([]*difftest.Conn, n)
		for i := range conns {
			conns[i] = dial(t, e.addr, 2)
		}
		received := func() int {
			s := 0
			for _, nd := range e.nodes {
				c := dial(t, nd.Addr, 2)
				v, err := strconv.Atoi(infoField(t, c, "stats", "total_connections_received"))
				if err != nil {
					t.Fatal(err)
				}
				s += v - 1 // not this one
				c.Close()
			}
			return s
		}
		var afterFirst int
		for r := range rounds {
			replies := make([]<-chan difftest.Value, n)
			for i, c := range conns {
				send(t, c, "BLPOP", fmt.Sprint("r", i), "0.2")
				replies[i] = receiveAsync(c)
			}
			for i := range n {
				if v := recvWithin(t, "BLPOP", replies[i], promptly); !isNull(v) {
					t.Fatalf("round %d: BLPOP = %v, want a timeout", r, v)
				}
			}
			if r == 0 {
				afterFirst = received()
			}
		}
		// The counting connections themselves were opened in between.
		if extra := received() - afterFirst - len(e.nodes)*(rounds-1); extra > 0 {
			t.Errorf("%d node connections opened after the first round of %d blocked clients (%d rounds)", extra, n, rounds)
		}
	})
}
