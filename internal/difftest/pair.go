package difftest

import (
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// Pair is a real redis-server (the oracle) and a fresh in-process
// shardgate node, each behind RESP connections, so that a test can send
// the same command to both and demand the same reply.
//
// The embedded ConnPair is the default pair of RESP2 connections: p.Do,
// p.Both and p.DoUnordered go through it.
type Pair struct {
	*ConnPair

	Oracle   *Redis
	Server   *node.Server
	NodeAddr string

	byProto map[int]*ConnPair // DoProto's lazily opened connections
	target  Target            // starts the server under test (shrinking replays on fresh ones)
}

// Target starts a fresh, empty server to compare with the oracle and
// returns its address and a function that stops it. The default is an
// in-process node; the proxy's tests pass one that starts a proxy in front
// of nodes.
type Target func(t testing.TB) (addr string, stop func())

// Start gives the test a Pair: the shared redis-server, flushed, and a new
// node on a free port. Cleanup closes the connections and the node. Pairs
// take turns on the shared server, so a test must not hold two at once.
func Start(t testing.TB) *Pair {
	t.Helper()
	var srv *node.Server
	p := StartTarget(t, func(t testing.TB) (string, func()) {
		s, addr, stop := startNode(t)
		if srv == nil {
			srv = s // the Pair's own node, not a shrinking replay's
		}
		return addr, stop
	})
	p.Server = srv
	return p
}

// StartTarget is Start with another server under test in place of the
// node: target starts it (fresh and empty) and is called again for every
// replay while a random run's divergence is shrunk. Server is nil.
func StartTarget(t testing.TB, target Target) *Pair {
	t.Helper()
	r := sharedRedis(t)
	oracle.lock.Lock()
	t.Cleanup(oracle.lock.Unlock) // registered first, so it runs last

	addr, stop := target(t)
	t.Cleanup(stop)

	p := &Pair{Oracle: r, NodeAddr: addr, byProto: map[int]*ConnPair{}, target: target}
	p.ConnPair = p.NewConnProto(t, 2)
	p.byProto[2] = p.ConnPair
	// The node is new and empty; only the shared oracle needs emptying.
	if v, err := p.Redis.DoStrings("FLUSHALL"); err != nil || v.Kind != SimpleString {
		t.Fatalf("difftest: FLUSHALL on redis-server: %s %v", v, err)
	}
	return p
}

// startNode serves a new node on a free port; stop shuts it down and
// reports a Serve error.
func startNode(t testing.TB) (srv *node.Server, addr string, stop func()) {
	t.Helper()
	return nodetest.Start(t, node.Options{}, nil)
}

// NewConn opens another pair of RESP2 connections (one to each server),
// e.g. to WATCH on one and write on the other. Cleanup closes them.
func (p *Pair) NewConn(t testing.TB) *ConnPair {
	t.Helper()
	return p.NewConnProto(t, 2)
}

// NewConnProto opens a pair of connections speaking proto (2 or 3; for 3,
// HELLO 3 is sent on both first).
func (p *Pair) NewConnProto(t testing.TB, proto int) *ConnPair {
	t.Helper()
	rc, err := DialProto(p.Oracle.Addr, proto)
	if err != nil {
		t.Fatalf("difftest: connect to redis-server: %v", err)
	}
	nc, err := DialProto(p.NodeAddr, proto)
	if err != nil {
		rc.Close()
		t.Fatalf("difftest: connect to node: %v", err)
	}
	c := &ConnPair{Redis: rc, Node: nc, Proto: proto}
	t.Cleanup(func() {
		rc.Close()
		nc.Close()
	})
	return c
}

// DoProto is Do on a connection pair speaking proto, opened on first use
// and kept for the Pair's life.
func (p *Pair) DoProto(t testing.TB, proto int, args ...string) Value {
	t.Helper()
	c := p.byProto[proto]
	if c == nil {
		c = p.NewConnProto(t, proto)
		p.byProto[proto] = c
	}
	return c.Do(t, args...)
}

// Flush empties both servers with FLUSHALL.
func (p *Pair) Flush(t testing.TB) {
	t.Helper()
	a, b := p.Both(t, "FLUSHALL")
	if a.Kind != SimpleString || !Equal(a, b) {
		t.Fatalf("difftest: FLUSHALL: redis %s, node %s", a, b)
	}
}

// ConnPair is one connection to the oracle and one to the node, speaking
// the same protocol version.
type ConnPair struct {
	Redis, Node *Conn
	Proto       int
}

// Both sends args to both servers and returns their replies (redis first).
// A network error fails the test at once: nothing useful can follow it.
func (c *ConnPair) Both(t testing.TB, args ...string) (redis, node Value) {
	t.Helper()
	b := toBytes(args)
	redis, err := c.Redis.Do(b...)
	if err != nil {
		t.Fatalf("difftest: redis-server: %s: %v", FormatCommand(args), err)
	}
	node, err = c.Node.Do(b...)
	if err != nil {
		t.Fatalf("difftest: node: %s: %v\n  redis replied: %s", FormatCommand(args), err, redis)
	}
	return redis, node
}

// Do sends args to both servers and reports an error unless the replies
// are identical (kind, value, error text). It returns redis's reply.
func (c *ConnPair) Do(t testing.TB, args ...string) Value {
	t.Helper()
	a, b := c.Both(t, args...)
	c.Compare(t, args, a, b)
	return a
}

// DoUnordered is Do for replies whose element order Redis leaves
// unspecified (KEYS, set members): the top-level collection is compared
// as a multiset.
func (c *ConnPair) DoUnordered(t testing.TB, args ...string) Value {
	t.Helper()
	a, b := c.Both(t, args...)
	c.Compare(t, args, Sorted(a), Sorted(b))
	return a
}

// Compare reports a mismatch between redis's reply a and the node's b to
// args, and returns whether they were equal.
func (c *ConnPair) Compare(t testing.TB, args []string, a, b Value) bool {
	t.Helper()
	if Equal(a, b) {
		return true
	}
	t.Errorf("%s", Mismatch(args, c.Proto, a, b))
	return false
}

// Mismatch renders a difference between redis's reply a and the node's b.
func Mismatch(args []string, proto int, a, b Value) string {
	return "reply differs (RESP" + strconv.Itoa(proto) + ")\n  command: " + FormatCommand(args) +
		"\n  redis:   " + a.String() + "\n  node:    " + b.String()
}
