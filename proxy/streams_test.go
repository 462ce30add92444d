package proxy_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// Streams through the proxy: every stream command goes to its one key's
// node; XREAD and XREADGROUP over several streams are served within one
// slot and refused with CROSSSLOT otherwise, exactly as a Redis Cluster
// node answers (also in --cross-slot split mode, which does not split
// them); XREAD/XREADGROUP BLOCK wait on a dedicated connection and are
// woken by an XADD from another client, time out with Redis's null, leave
// no waiter on the node when their client goes, and fail promptly when the
// node dies.

// forStreamBackends is forBackends for stream tests: over plain
// redis-servers, then over shardgate nodes.
func forStreamBackends(t *testing.T, f func(t *testing.T, e *blockEnv)) {
	forStreamBackendsTimeout(t, blockNodeTimeout, f)
}

// forStreamBackendsTimeout is forStreamBackends with the proxy's
// NodeTimeout given.
func forStreamBackendsTimeout(t *testing.T, nodeTimeout time.Duration, f func(t *testing.T, e *blockEnv)) {
	for _, name := range []string{"xadd", "xread", "xreadgroup", "xgroup", "xpending"} {
		if slots.Lookup([]byte(name)) == nil {
			t.Skipf("the command table has no %s yet", name)
		}
	}
	forBackendsTimeout(t, nodeTimeout, f)
}

// xentry is one stream entry as XRANGE and XREAD give it: [id, [field,
// value, ...]].
func xentry(id string, fields ...string) difftest.Value {
	return difftest.ArrayOf(difftest.BulkOf(id), arr(fields...))
}

// xread is XREAD's (and XREADGROUP's) reply for one stream: in RESP2 an
// array of [key, entries] pairs, in RESP3 a map from key to entries.
func xread(proto int, key string, entries ...difftest.Value) difftest.Value {
	if proto == 3 {
		return difftest.Value{Kind: difftest.Map, Elems: []difftest.Value{difftest.BulkOf(key), difftest.ArrayOf(entries...)}}
	}
	return difftest.ArrayOf(difftest.ArrayOf(difftest.BulkOf(key), difftest.ArrayOf(entries...)))
}

// nullReply is a blocking command's timeout: *-1 in RESP2, _ in RESP3.
func nullReply(proto int) difftest.Value {
	if proto == 3 {
		return difftest.Value{Kind: difftest.Null}
	}
	return difftest.Value{Kind: difftest.NullArray}
}

// pendingSummary is XPENDING key group's reply with the given count of
// pending entries, smallest and greatest id and per-consumer counts
// (name, count, ...).
func pendingSummary(n int64, lo, hi string, consumers ...string) difftest.Value {
	if n == 0 {
		return difftest.ArrayOf(difftest.Int(0), difftest.Value{Kind: difftest.NullBulk},
			difftest.Value{Kind: difftest.NullBulk}, difftest.Value{Kind: difftest.NullArray})
	}
	var cs []difftest.Value
	for i := 0; i+1 < len(consumers); i += 2 {
		cs = append(cs, arr(consumers[i], consumers[i+1]))
	}
	return difftest.ArrayOf(difftest.Int(n), difftest.BulkOf(lo), difftest.BulkOf(hi), difftest.ArrayOf(cs...))
}

func TestStreamBlockingServedByXAdd(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		for _, proto := range []int{2, 3} {
			a := dial(t, e.addr, proto)
			b := dial(t, e.addr, 2)
			node := e.nodeOf("s").Addr
			want(t, "XADD", do(t, b, "XADD", "s", "1-1", "f", "v0"), difftest.BulkOf("1-1"))
			want(t, "XGROUP CREATE", do(t, b, "XGROUP", "CREATE", "s", "g", "$"), difftest.Simple("OK"))

			// XREAD BLOCK 0 on '$': only what is added after it blocked.
			send(t, a, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
			got := receiveAsync(a)
			waitBlocked(t, node, 1)
			if n := blockedOn(t, e.addr); n != 1 {
				t.Errorf("proxy blocked_clients = %d, want 1", n)
			}
			// Longer than NodeTimeout: the watchdog leaves it alone.
			time.Sleep(3 * blockNodeTimeout)
			want(t, "XADD", do(t, b, "XADD", "s", "2-1", "f", "v1"), difftest.BulkOf("2-1"))
			want(t, "XREAD served", recvWithin(t, "XREAD", got, promptly), xread(proto, "s", xentry("2-1", "f", "v1")))

			// XREADGROUP BLOCK with an entry the group has not seen: at
			// once; then it blocks until the next XADD.
			want(t, "XREADGROUP at once", do(t, a, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">"),
				xread(proto, "s", xentry("2-1", "f", "v1")))
			send(t, a, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "BLOCK", "0", "STREAMS", "s", ">")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			do(t, b, "XADD", "s", "3-1", "f", "v2")
			want(t, "XREADGROUP served", recvWithin(t, "XREADGROUP", got, promptly), xread(proto, "s", xentry("3-1", "f", "v2")))
			want(t, "XPENDING", do(t, b, "XPENDING", "s", "g"), pendingSummary(2, "2-1", "3-1", "c1", "2"))

			// Several streams of one slot (hash tag): woken by the one
			// that gets an entry.
			send(t, a, "XREAD", "BLOCK", "0", "STREAMS", "{s}a", "{s}b", "$", "$")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			do(t, b, "XADD", "{s}b", "5-5", "x", "y")
			want(t, "XREAD of two streams", recvWithin(t, "XREAD", got, promptly), xread(proto, "{s}b", xentry("5-5", "x", "y")))

			// NOACK: served, nothing pending.
			do(t, b, "XGROUP", "CREATE", "{s}b", "g", "$")
			send(t, a, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "NOACK", "STREAMS", "{s}b", ">")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			do(t, b, "XADD", "{s}b", "6-0", "x", "z")
			want(t, "XREADGROUP NOACK", recvWithin(t, "XREADGROUP", got, promptly), xread(proto, "{s}b", xentry("6-0", "x", "z")))
			want(t, "XPENDING after NOACK", do(t, b, "XPENDING", "{s}b", "g"), pendingSummary(0, "", ""))

			waitBlocked(t, node, 0)
			do(t, b, "DEL", "s", "{s}a", "{s}b")
		}
	})
}

// TestStreamBlockingDollarIsLastGeneratedID: '$' stands for the stream's
// last generated id, which may be above its last entry (XDEL, XTRIM):
// an entry let in below it later (XSETID on the emptied stream, DEL and
// re-create) does not serve the read, on Redis as through the proxy.
func TestStreamBlockingDollarIsLastGeneratedID(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		for _, tc := range []struct {
			name          string
			before, after [][]string
		}{
			{"xsetid below", [][]string{{"XADD", "s", "MAXLEN", "0", "5-0", "f", "1"}},
				[][]string{{"XSETID", "s", "1-0"}, {"XADD", "s", "2-0", "f", "2"}}},
			{"re-created", [][]string{{"XADD", "s", "1-0", "f", "1"}, {"XADD", "s", "5-0", "f", "1"}, {"XDEL", "s", "5-0"}},
				[][]string{{"DEL", "s"}, {"XADD", "s", "3-1", "f", "2"}}},
			{"missing", nil, nil},
		} {
			a := dial(t, e.addr, 2)
			b := dial(t, e.addr, 2)
			for _, cmd := range tc.before {
				if v := do(t, b, cmd...); v.IsError() {
					t.Fatalf("%s: %q: %v", tc.name, cmd, v)
				}
			}
			send(t, a, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
			got := receiveAsync(a)
			waitBlocked(t, e.nodeOf("s").Addr, 1)
			for _, cmd := range tc.after {
				if v := do(t, b, cmd...); v.IsError() {
					t.Fatalf("%s: %q: %v", tc.name, cmd, v)
				}
			}
			do(t, b, "XADD", "s", "9-0", "f", "9")
			want(t, tc.name, recvWithin(t, "XREAD", got, promptly), xread(2, "s", xentry("9-0", "f", "9")))
			do(t, b, "DEL", "s")
			a.Close()
			b.Close()
		}
	})
}

// TestStreamBlockingTimeout: a BLOCK that runs out answers as the node
// does (Redis's null array in RESP2, null in RESP3), in about its time;
// refused timeouts and missing groups answer the node's errors at once.
func TestStreamBlockingTimeout(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		for _, proto := range []int{2, 3} {
			c := dial(t, e.addr, proto)
			direct := dial(t, e.nodeOf("s").Addr, proto)
			do(t, c, "DEL", "s")
			want(t, "XGROUP CREATE", do(t, c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), difftest.Simple("OK"))
			for _, tc := range []struct {
				args    []string
				timeout bool // answers the timeout's null
			}{
				{[]string{"XREAD", "BLOCK", "50", "STREAMS", "s", "$"}, true},
				{[]string{"XREAD", "COUNT", "5", "BLOCK", "60", "STREAMS", "s", "{s}2", "$", "0-0"}, true},
				{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS", "s", ">"}, true},
				{[]string{"xreadgroup", "group", "g", "c", "count", "3", "block", "40", "noack", "streams", "s", ">"}, true},
				{[]string{"XREAD", "BLOCK", "-1", "STREAMS", "s", "$"}, false},
				{[]string{"XREAD", "BLOCK", "abc", "STREAMS", "s", "$"}, false},
				{[]string{"XREAD", "BLOCK", "50", "STREAMS", "s", "+"}, false},
				{[]string{"XREADGROUP", "GROUP", "nosuch", "c", "BLOCK", "50", "STREAMS", "s", ">"}, false},
				{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS", "missing", ">"}, false},
				{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS", "s", "0"}, false},
			} {
				start := time.Now()
				got := do(t, c, tc.args...)
				if d := time.Since(start); d > promptly {
					t.Errorf("%q took %v", tc.args, d)
				}
				what := fmt.Sprintf("RESP%d %q", proto, tc.args)
				if tc.timeout {
					want(t, what, got, nullReply(proto))
				} else if isNull(got) {
					t.Errorf("%s: got %v, want a reply other than the timeout's", what, got)
				}
				want(t, what+" vs the node", got, do(t, direct, tc.args...))
			}
			waitBlocked(t, e.nodeOf("s").Addr, 0)
			if n := blockedOn(t, e.addr); n != 0 {
				t.Errorf("proxy blocked_clients = %d after the timeouts", n)
			}
		}
	})
}

// TestStreamBlockingPipeline: commands pipelined around a blocking read
// are answered in order; one served at once costs no wait.
func TestStreamBlockingPipeline(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		c := dial(t, e.addr, 2)
		b := dial(t, e.addr, 2)
		do(t, b, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		send(t, c, "XADD", "s", "1-0", "n", "1")
		send(t, c, "XREADGROUP", "GROUP", "g", "w", "BLOCK", "0", "STREAMS", "s", ">")
		send(t, c, "XREADGROUP", "GROUP", "g", "w", "BLOCK", "0", "STREAMS", "s", ">")
		send(t, c, "XACK", "s", "g", "1-0", "2-0")
		send(t, c, "XPENDING", "s", "g")
		for _, exp := range []difftest.Value{difftest.BulkOf("1-0"), xread(2, "s", xentry("1-0", "n", "1"))} {
			want(t, "before blocking", recvWithin(t, "pipeline", receiveAsync(c), promptly), exp)
		}
		waitBlocked(t, e.nodeOf("s").Addr, 1)
		do(t, b, "XADD", "s", "2-0", "n", "2")
		for _, exp := range []difftest.Value{
			xread(2, "s", xentry("2-0", "n", "2")),
			difftest.Int(2),
			pendingSummary(0, "", ""),
		} {
			want(t, "after blocking", recvWithin(t, "pipeline", receiveAsync(c), promptly), exp)
		}
	})
}

// TestStreamBlockingClientLeaves: a client that disconnects, is killed or
// QUITs while blocked leaves no waiter on the node; an entry added later
// is not delivered to the group for the client that left.
func TestStreamBlockingClientLeaves(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("s").Addr
		b := dial(t, e.addr, 2)
		do(t, b, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")

		for i, args := range [][]string{
			{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"},
			{"XREADGROUP", "GROUP", "g", "gone", "BLOCK", "0", "STREAMS", "s", ">"},
		} {
			a := dial(t, e.addr, 2+i%2)
			send(t, a, args...)
			waitBlocked(t, node, 1)
			a.Close()
			waitBlocked(t, node, 0)
			waitFor(t, "proxy blocked_clients 0", promptly, func() bool { return blockedOn(t, e.addr) == 0 })
		}
		// The entry waits for the group's next reader: nobody took it
		// for the client that left.
		id := fmt.Sprint(1, "-1")
		do(t, b, "XADD", "s", id, "f", "v")
		want(t, "XPENDING", do(t, b, "XPENDING", "s", "g"), pendingSummary(0, "", ""))
		want(t, "next reader", do(t, b, "XREADGROUP", "GROUP", "g", "alive", "STREAMS", "s", ">"), xread(2, "s", xentry(id, "f", "v")))

		// CLIENT KILL from another client.
		a := dial(t, e.addr, 2)
		cid := do(t, a, "CLIENT", "ID").Int
		send(t, a, "XREADGROUP", "GROUP", "g", "killed", "BLOCK", "0", "STREAMS", "s", ">")
		waitBlocked(t, node, 1)
		want(t, "CLIENT KILL", do(t, b, "CLIENT", "KILL", "ID", fmt.Sprint(cid)), difftest.Int(1))
		waitBlocked(t, node, 0)
		do(t, b, "XADD", "s", "2-1", "f", "v")
		want(t, "XPENDING after kill", do(t, b, "XPENDING", "s", "g"), pendingSummary(1, id, id, "alive", "1"))

		// QUIT while blocked, as in Redis: the client stays blocked until
		// an entry comes (or its timeout), then gets QUIT's OK, then the
		// connection closes. Served by an entry rather than a timeout, so
		// that a slow machine cannot end the wait before it is checked.
		for i, proto := range []int{2, 3} {
			a = dial(t, e.addr, proto)
			send(t, a, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
			waitBlocked(t, node, 1)
			send(t, a, "QUIT")
			got := receiveAsync(a)
			time.Sleep(50 * time.Millisecond)
			waitBlocked(t, node, 1)
			id := fmt.Sprint(3+i, "-1")
			do(t, b, "XADD", "s", id, "f", "v")
			want(t, "XREAD served after QUIT", recvWithin(t, "XREAD", got, promptly), xread(proto, "s", xentry(id, "f", "v")))
			want(t, "QUIT", recvWithin(t, "QUIT", receiveAsync(a), promptly), difftest.Simple("OK"))
			waitBlocked(t, node, 0)
		}
	})
}

// TestStreamBlockingUnblocked: CLIENT UNBLOCK through the proxy, and a
// blocked XREADGROUP whose stream or group goes away gets the node's
// error; the connection then serves on.
func TestStreamBlockingUnblocked(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		node := e.nodeOf("s").Addr
		for _, proto := range []int{2, 3} {
			a := dial(t, e.addr, proto)
			b := dial(t, e.addr, 2)
			id := fmt.Sprint(do(t, a, "CLIENT", "ID").Int)
			do(t, b, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")

			send(t, a, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
			got := receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "CLIENT UNBLOCK", do(t, b, "CLIENT", "UNBLOCK", id), difftest.Int(1))
			want(t, "unblocked XREAD", recvWithin(t, "XREAD", got, promptly), nullReply(proto))

			send(t, a, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "CLIENT UNBLOCK ERROR", do(t, b, "CLIENT", "UNBLOCK", id, "ERROR"), difftest.Int(1))
			want(t, "unblocked XREADGROUP", recvWithin(t, "XREADGROUP", got, promptly), difftest.Err("UNBLOCKED client unblocked via CLIENT UNBLOCK"))

			send(t, a, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "XGROUP DESTROY", do(t, b, "XGROUP", "DESTROY", "s", "g"), difftest.Int(1))
			want(t, "group destroyed", recvWithin(t, "XREADGROUP", got, promptly),
				difftest.Err("NOGROUP the consumer group this client was blocked on no longer exists"))

			do(t, b, "XGROUP", "CREATE", "s", "g", "$")
			send(t, a, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
			got = receiveAsync(a)
			waitBlocked(t, node, 1)
			want(t, "DEL", do(t, b, "DEL", "s"), difftest.Int(1))
			want(t, "stream deleted", recvWithin(t, "XREADGROUP", got, promptly), difftest.Err("UNBLOCKED the stream key no longer exists"))

			waitBlocked(t, node, 0)
			want(t, "served on", do(t, a, "XADD", "s", "1-1", "f", "v"), difftest.BulkOf("1-1"))
			do(t, b, "DEL", "s")
		}
	})
}

func TestStreamBlockingNodeDies(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		r := e.nodeOf("s")
		b := dial(t, e.addr, 2)
		do(t, b, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		var replies []<-chan difftest.Value
		for _, args := range [][]string{
			{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"},
			{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "100000", "STREAMS", "s", ">"},
		} {
			a := dial(t, e.addr, 2)
			send(t, a, args...)
			replies = append(replies, receiveAsync(a))
		}
		waitBlocked(t, r.Addr, 2)
		timed(t, "failing the blocked reads of a dead node", promptly, func() {
			r.Stop()
			for _, got := range replies {
				v := recvWithin(t, "XREAD on a dead node", got, promptly)
				if !v.IsError() || !strings.Contains(v.Text(), "connection to node") {
					t.Errorf("blocked read on a dead node: got %v, want the node-lost error", v)
				}
			}
		})
		waitFor(t, "proxy blocked_clients 0", promptly, func() bool { return blockedOn(t, e.addr) == 0 })
	})
}

// TestStreamCrossSlotProxy: XREAD and XREADGROUP over streams of
// different slots are refused with CROSSSLOT, blocking or not, in both
// cross-slot modes (split mode does not split them); over one hash tag
// they are served.
func TestStreamCrossSlotProxy(t *testing.T) {
	crossslot := difftest.Err("CROSSSLOT Keys in request don't hash to the same slot")
	refused := [][]string{
		{"XREAD", "STREAMS", "a", "b", "0", "0"},
		{"XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "a", "b", "$", "$"},
		{"XREAD", "BLOCK", "10", "STREAMS", "{t}a", "b", "$", "$"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{t}a", "{t}b", "c", ">", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "10", "NOACK", "STREAMS", "a", "b", "0", "0"},
	}
	check := func(t *testing.T, addr string) {
		for _, proto := range []int{2, 3} {
			c := dial(t, addr, proto)
			for _, args := range refused {
				start := time.Now()
				want(t, fmt.Sprintf("%q", args), do(t, c, args...), crossslot)
				if d := time.Since(start); d > promptly {
					t.Errorf("%q took %v", args, d)
				}
			}
			want(t, "one tag", do(t, c, "XREAD", "BLOCK", "10", "STREAMS", "{t}a", "{t}b", "$", "$"), nullReply(proto))
		}
	}
	t.Run("strict", func(t *testing.T) {
		forStreamBackends(t, func(t *testing.T, e *blockEnv) { check(t, e.addr) })
	})
	t.Run("split", func(t *testing.T) {
		px := proxytest.Start(t, 3, proxy.Options{CrossSlot: proxy.CrossSlotSplit})
		check(t, px.Addr)
	})
}

// streamClusterCases run on a fresh keyspace through the proxy and through
// a real 3-master Redis Cluster. "a", "b" and "c" are in three slots,
// {t}... share one. Entry ids are explicit, and nothing that reports times
// (idle, seen-time) is compared.
//
// A Redis 7.0 Cluster node finds XREAD's and XREADGROUP's keys with their
// getkeys procedure (xreadGetKeys), not the key specs COMMAND GETKEYS
// uses: an unknown option before STREAMS, or an odd count of arguments
// after it, means no keys, so the node answers its syntax error (or the
// unbalanced-list error) rather than CROSSSLOT.
var streamClusterCases = []struct {
	name string
	cmds [][]string
}{
	{"single stream commands", [][]string{
		{"XADD", "a", "1-1", "f", "1"},
		{"XADD", "a", "1-2", "f", "2", "g", "3"},
		{"XADD", "b", "NOMKSTREAM", "1-1", "f", "1"},
		{"XADD", "c", "MAXLEN", "1", "5-0", "f", "1"},
		{"XADD", "c", "MAXLEN", "1", "6-0", "f", "2"},
		{"XLEN", "a"},
		{"XLEN", "c"},
		{"XRANGE", "a", "-", "+"},
		{"XREVRANGE", "a", "+", "-", "COUNT", "1"},
		{"XRANGE", "c", "(5-0", "+"},
		{"XDEL", "a", "1-1"},
		{"XTRIM", "a", "MAXLEN", "0"},
		{"XSETID", "a", "9-9"},
		{"XADD", "a", "9-9", "f", "v"},
		{"XGROUP", "CREATE", "a", "g", "0"},
		{"XGROUP", "CREATE", "a", "g", "0"},
		{"XGROUP", "CREATE", "b", "g", "$"},
		{"XGROUP", "CREATE", "b", "g", "$", "MKSTREAM", "ENTRIESREAD", "0"},
		{"XGROUP", "CREATECONSUMER", "b", "g", "c1"},
		{"XGROUP", "SETID", "b", "g", "0"},
		{"XADD", "b", "2-0", "k", "v"},
		{"XADD", "b", "3-0", "k", "w"},
		{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "b", ">"},
		{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "b", ">"},
		{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "b", "0"},
		{"XPENDING", "b", "g"},
		{"XCLAIM", "b", "g", "c3", "0", "2-0", "JUSTID"},
		{"XAUTOCLAIM", "b", "g", "c3", "0", "0-0", "COUNT", "10", "JUSTID"},
		{"XPENDING", "b", "g"},
		{"XACK", "b", "g", "2-0", "3-0", "4-0"},
		{"XPENDING", "b", "g"},
		{"XINFO", "GROUPS", "b"},
		{"XGROUP", "DELCONSUMER", "b", "g", "c1"},
		{"XGROUP", "DESTROY", "b", "g"},
		{"XGROUP", "DESTROY", "b", "g"},
		{"XINFO", "GROUPS", "missing"},
		{"XACK", "missing", "g", "1-0"},
	}},
	{"xread across slots", [][]string{
		{"XADD", "a", "1-1", "f", "a"},
		{"XADD", "b", "1-1", "f", "b"},
		{"XREAD", "STREAMS", "a", "0"},
		{"XREAD", "STREAMS", "a", "b", "0", "0"},
		{"XREAD", "COUNT", "1", "STREAMS", "a", "b", "c", "0", "0", "0"},
		{"XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$"},
		{"XREAD", "BLOCK", "10", "COUNT", "2", "STREAMS", "b", "a", "0", "$"},
		{"XREAD", "STREAMS", "a", "a", "0", "1-0"},
		// Unbalanced, but the keys before the ids are in one slot.
		{"XREAD", "STREAMS", "a", "b", "0"},
		{"XREAD", "STREAMS", "a", "0", "b"},
		// A key named STREAMS; a count that is not a number.
		{"XREAD", "STREAMS", "STREAMS", "a", "0", "0"},
		{"XREAD", "COUNT", "STREAMS", "STREAMS", "a", "0"},
		{"XREAD", "STREAMS", "a"},
		// Malformed across slots: no keys for a cluster node.
		{"XREAD", "FOO", "STREAMS", "a", "b", "0", "0"},
		{"XREAD", "STREAMS", "a", "b", "c", "0", "0"},
		{"XREAD", "BLOCK", "0", "STREAMS", "a", "b", "c", "$", "$"},
		{"XREAD", "COUNT", "1", "NOACK", "STREAMS", "a", "b", "0", "0"},
		{"XREAD", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0"},
	}},
	{"xread one slot", [][]string{
		{"XADD", "{t}a", "1-1", "f", "a"},
		{"XADD", "{t}b", "2-2", "f", "b"},
		{"XREAD", "STREAMS", "{t}a", "{t}b", "0", "0"},
		{"XREAD", "COUNT", "1", "STREAMS", "{t}b", "{t}a", "{t}c", "0", "0", "0"},
		{"XREAD", "BLOCK", "10", "STREAMS", "{t}a", "{t}b", "$", "2-1"},
		{"XREAD", "BLOCK", "10", "STREAMS", "{t}a", "{t}b", "$", "$"},
	}},
	{"xreadgroup across slots", [][]string{
		{"XGROUP", "CREATE", "a", "g", "0", "MKSTREAM"},
		{"XGROUP", "CREATE", "b", "g", "0", "MKSTREAM"},
		{"XADD", "a", "1-1", "f", "a"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "NOACK", "STREAMS", "b", "a", "0", "0"},
		// A group and a consumer named STREAMS.
		{"XREADGROUP", "GROUP", "STREAMS", "STREAMS", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "STREAMS", "STREAMS", "a", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "c", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "FOO", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "COUNT", "1", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "NOACK", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "STREAMS", "a", "b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "x", "STREAMS", "a", "b", ">", ">"},
	}},
	{"xreadgroup one slot", [][]string{
		{"XGROUP", "CREATE", "{t}a", "g", "0", "MKSTREAM"},
		{"XGROUP", "CREATE", "{t}b", "g", "0", "MKSTREAM"},
		{"XADD", "{t}a", "1-1", "f", "a"},
		{"XADD", "{t}b", "1-2", "f", "b"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{t}a", "{t}b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{t}a", "{t}b", "0", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{t}a", "{t}b", ">", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{t}a", "{t}c", ">", ">"},
		{"XPENDING", "{t}a", "g"},
		{"XPENDING", "{t}b", "g"},
	}},
}

// TestDiffStreamsCluster runs streamClusterCases through the proxy over
// three nodes, strict and in --cross-slot split mode, and through a real
// 3-master Redis Cluster (each command sent to the master of its first
// key's slot), in RESP2 and RESP3, and requires identical replies.
func TestDiffStreamsCluster(t *testing.T) {
	if slots.Lookup([]byte("xadd")) == nil {
		t.Skip("the command table has no stream commands yet")
	}
	rc := sharedCluster(t)
	for _, mode := range []struct {
		name string
		mode proxy.CrossSlotMode
	}{{"strict", proxy.CrossSlotStrict}, {"split", proxy.CrossSlotSplit}} {
		px := proxytest.Start(t, 3, proxy.Options{CrossSlot: mode.mode})
		for _, proto := range []int{2, 3} {
			for _, tc := range streamClusterCases {
				t.Run(fmt.Sprintf("%s/resp%d/%s", mode.name, proto, tc.name), func(t *testing.T) {
					rc.FlushAll(t)
					pc := dial(t, px.Addr, proto)
					do(t, pc, "FLUSHALL")
					cs := &clusterSide{t: t, c: rc, proto: proto, conns: map[string]*difftest.Conn{}}
					for _, args := range tc.cmds {
						exp, err := streamClusterDo(cs, args)
						if err != nil {
							t.Fatalf("cluster: %s: %v", difftest.FormatCommand(args), err)
						}
						got := do(t, pc, args...)
						if !difftest.Equal(exp, got) {
							t.Errorf("%s", difftest.Mismatch(args, proto, exp, got))
						}
					}
				})
			}
		}
	}
}

// streamClusterDo is clusterSide.do for commands with subcommands too
// (XGROUP CREATE, XINFO GROUPS): sent to the master of the first key's
// slot.
func streamClusterDo(cs *clusterSide, args []string) (difftest.Value, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	cmd := slots.Lookup(b[0])
	if cmd != nil && len(cmd.Subcommands) > 0 && len(b) > 1 {
		cmd = slots.LookupSub(cmd, b[1])
	}
	node := &cs.c.Nodes[0]
	if cmd != nil {
		if keys := cmd.KeyIndexes(b, nil); len(keys) > 0 {
			node = cs.c.NodeForKey(args[keys[0]])
		}
	}
	conn := cs.conns[node.Addr]
	if conn == nil {
		conn = node.Conn(cs.t, cs.proto)
		cs.conns[node.Addr] = conn
	}
	return conn.DoStrings(args...)
}

// TestStreamBlockingConcurrentGroup: consumers of one group wait in
// XREADGROUP BLOCK (most reads served at once without BLOCK, the others
// on dedicated connections) while producers XADD; every entry is delivered
// to exactly one consumer, all are acknowledged, and no waiter is left.
func TestStreamBlockingConcurrentGroup(t *testing.T) {
	// A NodeTimeout that a loaded machine (the race detector, other
	// packages' tests) cannot reach: a connection cut here would leave
	// its entries pending, and this test is about the grouping, not the
	// watchdog.
	forStreamBackendsTimeout(t, 5*time.Second, func(t *testing.T, e *blockEnv) {
		const consumers, producers, entries = 6, 2, 600
		key := "{q}orders"
		admin := dial(t, e.addr, 2)
		do(t, admin, "DEL", key)
		want(t, "XGROUP CREATE", do(t, admin, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM"), difftest.Simple("OK"))
		var wg sync.WaitGroup
		delivered := make(chan string, 2*entries)
		var stop atomic.Bool
		for w := range consumers {
			c := dial(t, e.addr, 2+w%2)
			wg.Go(func() {
				for {
					v, err := c.DoStrings("XREADGROUP", "GROUP", "g", fmt.Sprint("c", w), "COUNT", "5", "BLOCK", "200", "STREAMS", key, ">")
					if err != nil {
						t.Errorf("consumer %d: %v", w, err)
						return
					}
					if isNull(v) {
						if stop.Load() {
							return
						}
						continue
					}
					// RESP2 [[key, entries]]; RESP3 {key: entries}.
					var list difftest.Value
					switch {
					case v.Kind == difftest.Array && len(v.Elems) == 1 && len(v.Elems[0].Elems) == 2:
						list = v.Elems[0].Elems[1]
					case v.Kind == difftest.Map && len(v.Elems) == 2:
						list = v.Elems[1]
					default:
						t.Errorf("consumer %d: XREADGROUP answered %v", w, v)
						return
					}
					ack := []string{"XACK", key, "g"}
					for _, en := range list.Elems {
						id := en.Elems[0].Text()
						delivered <- id
						ack = append(ack, id)
					}
					if n, err := c.DoStrings(ack...); err != nil || n.Int != int64(len(ack)-3) {
						t.Errorf("consumer %d: %q answered %v (%v)", w, ack, n, err)
						return
					}
				}
			})
		}
		var pw sync.WaitGroup
		for p := range producers {
			c := dial(t, e.addr, 2)
			pw.Go(func() {
				for i := p; i < entries; i += producers {
					if v, err := c.DoStrings("XADD", key, "*", "n", fmt.Sprint(i)); err != nil || v.Kind != difftest.Bulk {
						t.Errorf("producer %d: XADD answered %v (%v)", p, v, err)
						return
					}
				}
			})
		}
		pw.Wait()
		waitFor(t, "every entry read and acknowledged", 10*promptly, func() bool {
			return len(delivered) >= entries && difftest.Equal(do(t, admin, "XPENDING", key, "g"), pendingSummary(0, "", ""))
		})
		stop.Store(true)
		wg.Wait()
		close(delivered)
		seen := map[string]int{}
		for id := range delivered {
			seen[id]++
		}
		if len(seen) != entries {
			t.Errorf("%d distinct entries delivered, want %d", len(seen), entries)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("entry %s delivered %d times", id, n)
			}
		}
		want(t, "XLEN", do(t, admin, "XLEN", key), difftest.Int(entries))
		waitBlocked(t, e.nodeOf(key).Addr, 0)
	})
}

// TestStreamXReadDollarOrder: an XREAD BLOCK from '$' waits for the
// entries added after the proxy took the command, as Redis waits for
// those added after it read it: an XADD sent once the proxy counts the
// reader blocked is the reader's, even when the blocking read reaches the
// node after it (on its own connection, while the XADD takes the shared
// one). Through the node, '$' would then already stand for that entry.
func TestStreamXReadDollarOrder(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		a := dial(t, e.addr, 2)
		b := dial(t, e.addr, 2)
		for i := range 20 {
			key := fmt.Sprintf("{d}s%d", i)
			if i%2 == 1 {
				do(t, b, "XADD", key, "1-1", "f", "old") // an existing stream, as a missing one
			}
			send(t, a, "XREAD", "BLOCK", "5000", "STREAMS", key, "$")
			got := receiveAsync(a)
			waitFor(t, "the proxy to count the XREAD blocked", promptly, func() bool { return blockedOn(t, e.addr) == 1 })
			do(t, b, "XADD", key, "5-5", "f", "new")
			want(t, fmt.Sprintf("XREAD %s $", key), recvWithin(t, "XREAD", got, promptly), xread(2, key, xentry("5-5", "f", "new")))
		}
	})
}

// TestStreamBlockingOptionWordsAsCStrings: Redis reads XREAD's option
// words and the '$' id as C strings, so "BLOCK\x00z" blocks. The proxy
// must see the same, or it sends a blocking read down the connection it
// shares with other clients, whose commands (here the XADD that should
// wake the reader) then queue behind it until it times out.
func TestStreamBlockingOptionWordsAsCStrings(t *testing.T) {
	forStreamBackends(t, func(t *testing.T, e *blockEnv) {
		for _, args := range [][]string{
			{"XREAD", "BLOCK\x00z", "2000", "STREAMS", "s", "$"},
			{"XREAD", "count\x00", "5", "BLOCK", "2000", "STREAMS\x00", "s", "$\x00z"},
			{"XREADGROUP", "GROUP\x00", "g", "c", "BLOCK\x00", "2000", "NOACK\x00", "STREAMS", "s", ">"},
		} {
			a := dial(t, e.addr, 2)
			b := dial(t, e.addr, 2)
			do(t, b, "DEL", "s")
			want(t, "XGROUP CREATE", do(t, b, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), difftest.Simple("OK"))
			send(t, a, args...)
			got := receiveAsync(a)
			waitBlocked(t, e.nodeOf("s").Addr, 1)
			do(t, b, "XADD", "s", "9-0", "f", "9")
			want(t, fmt.Sprintf("%q", args), recvWithin(t, "XREAD", got, promptly), xread(2, "s", xentry("9-0", "f", "9")))
			a.Close()
			b.Close()
		}
	})
}
