package node_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// readSetup fills stream s with 1-1..5-1 (two field layouts), a group g
// at 0, a string key str and an empty stream e with a group g.
var readSetup = [][]string{
	sc("XADD", "s", "1-1", "f", "v1"), sc("XADD", "s", "2-1", "f", "v2"), sc("XADD", "s", "3-1", "a", "x", "b", "y"),
	sc("XADD", "s", "4-1", "f", "v4"), sc("XADD", "s", "5-1", "f", "v5"),
	sc("XGROUP", "CREATE", "s", "g", "0"), sc("SET", "{s}str", "x"), sc("XGROUP", "CREATE", "{s}e", "g", "$", "MKSTREAM"),
}

// readScripts are XREAD and XREADGROUP cases that never block: every
// parse and lookup error in Redis's order of checks, and what is served.
var readScripts = []strScript{
	{"parse errors", [][]string{
		sc("XREAD", "STREAMS", "s", "a", "b"), sc("XREAD", "COUNT", "1", "STREAMS", "s", "a", "b"),
		sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "a", "b"), sc("XREADGROUP", "STREAMS", "s", "a", "b", "c", "d"),
		sc("XREAD", "COUNT", "x", "STREAMS", "s", "0"), sc("XREAD", "COUNT", "1.5", "STREAMS", "s", "0"),
		sc("XREAD", "COUNT", "", "STREAMS", "s", "0"), sc("XREAD", "COUNT", "1\x00", "STREAMS", "s", "0"),
		sc("XREAD", "COUNT", "99999999999999999999", "STREAMS", "s", "0"),
		sc("XREAD", "BLOCK", "-1", "STREAMS", "s", "0"), sc("XREAD", "BLOCK", "x", "STREAMS", "s", "0"),
		sc("XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"), sc("XREAD", "BLOCK", "99999999999999999999", "STREAMS", "s", "0"),
		sc("XREAD", "BLOCK", "-9223372036854775808", "STREAMS", "s", "0"), sc("XREAD", "BLOCK", " 1", "STREAMS", "s", "0"),
		sc("XREAD", "BLOCK", "STREAMS", "s", "0"), sc("XREAD", "COUNT", "STREAMS", "s", "0"),
		sc("XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"), sc("XREAD", "NOACK", "STREAMS", "s", "0"),
		sc("XREAD", "FOO", "STREAMS", "s", "0"), sc("XREAD", "COUNT", "1", "BLOCK", "1"), sc("XREAD", "COUNT", "1", "STREAMS"),
		sc("XREAD", "BLOCK", "-1", "GROUP", "g", "c", "STREAMS", "s", "a", "b"),
		sc("XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", "0"), sc("XREADGROUP", "GROUP", "g", "STREAMS", "s", "0"),
		sc("XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", "0"), sc("XREADGROUP", "GROUP", "g", "c", "BLOCK", "-5", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"),
		sc("XREAD", "STREAMS", "s"), sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"), sc("XREAD"),
	}},
	{"lookup errors", [][]string{
		sc("XREAD", "STREAMS", "{s}str", "0"), sc("XREAD", "STREAMS", "{s}str", "s", "0", "x"),
		sc("XREAD", "STREAMS", "s", "{s}str", "x", "0"), sc("XREAD", "STREAMS", "s", "-"), sc("XREAD", "STREAMS", "s", "+"),
		sc("XREAD", "STREAMS", "s", "1-x"), sc("XREAD", "STREAMS", "s", "(1"), sc("XREAD", "STREAMS", "s", ""),
		sc("XREAD", "STREAMS", "s", ">"), sc("XREAD", "BLOCK", "0", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"), sc("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "$\x00x"),
		sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{s}none", ">"), sc("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "nog", "c", "BLOCK", "0", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{s}str", ">"), sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "{s}str", "x", ">"),
		sc("XREADGROUP", "GROUP", "n\x00g", "c", "STREAMS", "s", ">"), sc("XREADGROUP", "GROUP", "g\r\nx", "c", "STREAMS", "{s}k\x00ey", ">"),
		sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "{s}e", "x", ">"), sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "{s}e", ">", "-"),
	}},
	{"xread", [][]string{
		sc("XREAD", "STREAMS", "s", "0"), sc("XREAD", "STREAMS", "s", "2-1"), sc("XREAD", "COUNT", "2", "STREAMS", "s", "2"),
		sc("XREAD", "COUNT", "0", "STREAMS", "s", "3"), sc("XREAD", "COUNT", "-3", "STREAMS", "s", "3"),
		sc("XREAD", "STREAMS", "s", "5-1"), sc("XREAD", "STREAMS", "s", "$"), sc("XREAD", "STREAMS", "s", "$\x00junk"),
		sc("XREAD", "STREAMS", "{s}none", "0"), sc("XREAD", "STREAMS", "{s}none", "$"), sc("XREAD", "STREAMS", "{s}e", "0"),
		sc("XREAD", "STREAMS", "s", "{s}none", "s", "4-1", "0", "4"), sc("XREAD", "COUNT", "1", "STREAMS", "s", "{s}e", "s", "0", "0", "1"),
		sc("XREAD", "STREAMS", "s", "18446744073709551615-18446744073709551615"), sc("XREAD", "STREAMS", "s", "18446744073709551615"),
		sc("XREAD", "BLOCK", "0", "STREAMS", "s", "0"), sc("XREAD", "BLOCK", "10", "COUNT", "1", "STREAMS", "{s}none", "s", "$", "4"),
		sc("xread", "count", "1", "streams", "s", "0"), sc("XREAD", "STREAMS\x00x", "s", "0"), sc("XREAD", "COUNT\x00", "1", "STREAMS", "s", "0"),
		sc("XDEL", "s", "5-1"), sc("XREAD", "STREAMS", "s", "4-1"), sc("XREAD", "STREAMS", "s", "4-2"),
		sc("XDEL", "s", "1-1"), sc("XREAD", "STREAMS", "s", "0"), sc("XREAD", "STREAMS", "s", "-0"),
		sc("XREAD", "STREAMS", "s", " 1"), sc("XREAD", "STREAMS", "s", "+1"), sc("XREAD", "STREAMS", "s", "2-18446744073709551615"),
	}},
	{"xreadgroup new entries", [][]string{
		sc("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "carol", "NOACK", "COUNT", "1", "STREAMS", "s", ">"),
		sc("XPENDING", "s", "g"), sc("XPENDING", "s", "g", "-", "+", "10"), sc("XINFO", "GROUPS", "s"), sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"), sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "18446744073709551615-18446744073709551615"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "18446744073709551615"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">\x00x"),
		sc("XPENDING", "s", "g"), sc("XINFO", "GROUPS", "s"), sc("XINFO", "CONSUMERS", "s", "g"),
		// Same key twice: the second '>' reads past what the first read.
		sc("XADD", "s", "6-1", "f", "v6"), sc("XADD", "s", "7-1", "f", "v7"),
		sc("XREADGROUP", "GROUP", "g", "dave", "COUNT", "1", "STREAMS", "s", "s", ">", ">"),
		sc("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "{s}e", "s", ">", ">"), sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XREADGROUP", "GROUP", "g", "erin", "STREAMS", "{s}e", ">"), sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XINFO", "CONSUMERS", "{s}e", "g"),
	}},
	{"xreadgroup history", [][]string{
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"), // a new consumer's empty history
		sc("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"), sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1"),
		sc("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", "0"),
		sc("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", "3-1"), // an empty history answers at once
		sc("XDEL", "s", "2-1"), sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"),
		sc("XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "s", "0"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XACK", "s", "g", "1-1"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"), sc("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XINFO", "GROUPS", "s"),
		// SETID back: pending entries are delivered anew to whoever reads.
		sc("XGROUP", "SETID", "s", "g", "0"), sc("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XINFO", "GROUPS", "s"), sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XINFO", "STREAM", "s"), // (FULL shows absolute delivery times)
	}},
	{"multi", [][]string{
		sc("MULTI"), sc("XREAD", "BLOCK", "0", "STREAMS", "{s}none", "$"), sc("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), sc("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{s}e", ">"),
		sc("XREAD", "BLOCK", "-1", "STREAMS", "s", "0"), sc("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"), sc("EXEC"),
		sc("XPENDING", "s", "g"),
	}},
}

// TestDiffStreamRead runs readScripts after readSetup on redis-server and
// the node, RESP2 and RESP3 (idle times within groupTimeTolerance).
func TestDiffStreamRead(t *testing.T) {
	p := difftest.Start(t)
	for _, proto := range []int{2, 3} {
		for _, sc := range readScripts {
			t.Run(fmt.Sprintf("%s/resp%d", sc.name, proto), func(t *testing.T) {
				p.Flush(t)
				c := p.NewConnProto(t, proto)
				for _, args := range readSetup {
					groupDo(t, c, args...)
				}
				for _, args := range sc.steps {
					groupDo(t, c, args...)
				}
			})
		}
	}
}

// TestDiffStreamReadCounters checks keyspace_hits/misses (each key is
// looked up twice, up to the first error) and rdb_changes_since_last_save
// (one per consumer created, one per stream XREADGROUP answers at once;
// a blocked one served by XADD counts its consumer only) and that no
// read disturbs a WATCH.
func TestDiffStreamReadCounters(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConn(t)
	for _, args := range readSetup {
		groupDo(t, c, args...)
	}
	counters := func() [3][2]string {
		var out [3][2]string
		for i, f := range []string{"keyspace_hits", "keyspace_misses", "rdb_changes_since_last_save"} {
			sec := "stats"
			if i == 2 {
				sec = "persistence"
			}
			out[i][0], out[i][1] = infoBoth(t, p, sec, f)
		}
		return out
	}
	check := func(what []string, before, after [3][2]string) {
		t.Helper()
		for i, name := range []string{"keyspace_hits", "keyspace_misses", "rdb_changes_since_last_save"} {
			if r, n := delta(after[i][0], before[i][0]), delta(after[i][1], before[i][1]); r != n {
				t.Errorf("after %q: %s moved by %s in redis, %s in the node", what, name, r, n)
			}
		}
	}
	w := p.NewConn(t)
	for _, args := range [][]string{
		sc("XREAD", "STREAMS", "{s}none", "0"), sc("XREAD", "STREAMS", "s", "0"), sc("XREAD", "STREAMS", "s", "s", "0", "9"),
		sc("XREAD", "STREAMS", "s", "{s}none", "0", "x"), sc("XREAD", "STREAMS", "{s}str", "s", "0", "0"),
		sc("XREAD", "COUNT", "x", "STREAMS", "s", "0"),
		sc("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"), sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), sc("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"),
		sc("XREADGROUP", "GROUP", "g", "d", "NOACK", "STREAMS", "s", "0"), sc("XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", "s", "0", "0"),
		sc("XREADGROUP", "GROUP", "nog", "d", "STREAMS", "s", ">"), sc("XREADGROUP", "GROUP", "g", "e", "STREAMS", "{s}e", ">"),
	} {
		groupDo(t, w, "WATCH", "s")
		before := counters()
		groupDo(t, c, args...)
		after := counters()
		check(args, before, after)
		groupDo(t, w, "MULTI")
		groupDo(t, w, "PING")
		groupDo(t, w, "EXEC")
	}

	// Served while blocked: XADD's own change, plus a consumer created.
	b := p.NewConn(t)
	groupDo(t, c, "XGROUP", "CREATECONSUMER", "{s}e", "g", "old")
	for i, consumer := range []string{"old", "new"} {
		send := sc("XREADGROUP", "GROUP", "g", consumer, "BLOCK", "0", "STREAMS", "{s}e", ">")
		if err := b.Redis.Send(toArgs(send)...); err != nil {
			t.Fatal(err)
		}
		if err := b.Node.Send(toArgs(send)...); err != nil {
			t.Fatal(err)
		}
		waitBlocked(t, c, 1)
		before := counters()
		groupDo(t, c, "XADD", "{s}e", strconv.Itoa(i+1)+"-1", "f", "v")
		ra, err := b.Redis.Receive()
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Node.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if ra.Kind != rb.Kind || len(ra.Elems) != len(rb.Elems) {
			t.Fatalf("blocked XREADGROUP: redis %s, node %s", ra, rb)
		}
		after := counters()
		check(append(send, "served"), before, after)
	}
}

// TestDiffStreamBlocking runs blocking XREAD/XREADGROUP scenarios with
// several connections on redis-server and the node, RESP2 and RESP3,
// every reply compared (see runBlockingScript).
func TestDiffStreamBlocking(t *testing.T) {
	group := func(conn int, key, g, id string) bstep { return bDo(conn, "XGROUP", "CREATE", key, g, id, "MKSTREAM") }
	many := make([]bstep, 0, 1010)
	many = append(many, bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "m", "$"), bBlocked(1), bDo(1, "MULTI"))
	for i := 1; i <= 1005; i++ {
		many = append(many, bDo(1, "XADD", "m", "1-"+strconv.Itoa(i), "f", "v"))
	}
	many = append(many, bDo(1, "EXEC"), bRecv(0), bDo(1, "XLEN", "m"))

	tests := []struct {
		name  string
		conns int
		steps []bstep
	}{
		{"served at once", 1, []bstep{
			bDo(0, "XADD", "s", "1-1", "f", "v"), bDo(0, "XGROUP", "CREATE", "s", "g", "0"),
			bDo(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "0"), bDo(0, "XREAD", "BLOCK", "100", "STREAMS", "{s}x", "s", "$", "0"),
			bDo(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bDo(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0"),
			bDo(0, "XREADGROUP", "GROUP", "g", "d", "BLOCK", "0", "STREAMS", "s", "0"),
			bDo(0, "XREAD", "BLOCK", "-1", "STREAMS", "s", "0"), bDo(0, "XREADGROUP", "GROUP", "nog", "c", "BLOCK", "0", "STREAMS", "s", ">"),
		}},
		{"xread woken by xadd", 4, []bstep{
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(1),
			bDo(3, "XADD", "s", "1-1", "f", "v"), bRecv(0), bBlocked(0),
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(1),
			bDo(3, "XADD", "s", "2-1", "f", "v", "g", "w"), bRecv(0),
			// A missing key's '$' is 0-0: the first entry, however small.
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "{s}new", "$"), bBlocked(1),
			bDo(3, "XADD", "{s}new", "0-1", "f", "v"), bRecv(0),
			// An explicit id ahead of the stream: only a greater entry wakes.
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "5-0"), bBlocked(1),
			bDo(3, "XADD", "s", "3-1", "f", "v"), bDo(3, "XADD", "s", "5-0", "f", "v"), bBlocked(1),
			bDo(3, "XADD", "s", "5-1", "f", "v"), bRecv(0),
		}},
		{"several xread waiters all served", 4, []bstep{
			bDo(3, "XADD", "s", "1-1", "a", "b"),
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bSend(1, "XREAD", "BLOCK", "0", "COUNT", "1", "STREAMS", "s", "1-1"),
			bSend(2, "XREAD", "BLOCK", "0", "STREAMS", "{s}x", "s", "$", "$"), bBlocked(3),
			bDo(3, "MULTI"), bDo(3, "XADD", "s", "2-1", "c", "d"), bDo(3, "XADD", "s", "3-1", "e", "f"), bDo(3, "EXEC"),
			bRecv(0), bRecv(1), bRecv(2), bBlocked(0),
		}},
		{"xreadgroup waiters served in turn", 4, []bstep{
			group(3, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bSend(1, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(2),
			bSend(2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(3),
			bDo(3, "XINFO", "GROUPS", "s"), // no consumer made yet
			bDo(3, "XADD", "s", "1-1", "f", "v"), bRecv(0), bRecv(2), bBlocked(1),
			bDo(3, "XPENDING", "s", "g"), bDo(3, "XINFO", "GROUPS", "s"),
			bDo(3, "MULTI"), bDo(3, "XADD", "s", "2-1", "f", "v"), bDo(3, "XADD", "s", "3-1", "f", "v"), bDo(3, "EXEC"),
			bRecv(1), bBlocked(0), bDo(3, "XPENDING", "s", "g"), bDo(3, "XINFO", "GROUPS", "s"),
			// COUNT splits a batch between waiters.
			bSend(0, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bSend(1, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(2),
			bDo(3, "MULTI"), bDo(3, "XADD", "s", "4-1", "f", "v"), bDo(3, "XADD", "s", "5-1", "f", "v"), bDo(3, "EXEC"),
			bRecv(0), bRecv(1), bBlocked(0), bDo(3, "XPENDING", "s", "g"),
		}},
		{"two groups", 3, []bstep{
			group(2, "s", "g1", "$"), group(2, "s", "g2", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g1", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(1, "XREADGROUP", "GROUP", "g2", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(2),
			bDo(2, "XADD", "s", "1-1", "f", "v"), bRecv(0), bRecv(1), bDo(2, "XINFO", "GROUPS", "s"),
		}},
		{"multi key", 4, []bstep{
			group(3, "{k}a", "g", "$"), group(3, "{k}b", "g", "$"),
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "{k}a", "{k}b", "$", "$"), bBlocked(1),
			bSend(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{k}a", "{k}b", ">", ">"), bBlocked(2),
			bDo(3, "XADD", "{k}b", "1-1", "f", "v"), bRecv(0), bRecv(1), bBlocked(0),
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "{k}a", "{k}b", "$", "$"), bBlocked(1),
			bSend(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{k}a", "{k}b", ">", ">"), bBlocked(2),
			bDo(3, "MULTI"), bDo(3, "XADD", "{k}b", "2-1", "f", "v"), bDo(3, "XADD", "{k}a", "2-1", "f", "v"), bDo(3, "EXEC"),
			bRecv(0), bRecv(1), bDo(3, "XPENDING", "{k}a", "g"), bDo(3, "XPENDING", "{k}b", "g"),
			// The same key twice: the first id counts.
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "{k}a", "{k}a", "$", "9-0"), bBlocked(1),
			bDo(3, "XADD", "{k}a", "3-1", "f", "v"), bRecv(0),
		}},
		{"group destroyed", 3, []bstep{
			group(2, "s", "g", "$"), group(2, "s", "h", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(1, "XREADGROUP", "GROUP", "h", "c", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(2),
			bDo(2, "XGROUP", "DESTROY", "s", "g"), bRecv(0), bBlocked(1),
			bDo(2, "XADD", "s", "1-1", "f", "v"), bRecv(1),
			// Destroyed and made again in one transaction: the new group serves.
			bSend(0, "XREADGROUP", "GROUP", "h", "c", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bDo(2, "MULTI"), bDo(2, "XGROUP", "DESTROY", "s", "h"), bDo(2, "XADD", "s", "2-1", "f", "v"),
			bDo(2, "XGROUP", "CREATE", "s", "h", "0"), bDo(2, "EXEC"), bRecv(0), bDo(2, "XPENDING", "s", "h"),
		}},
		{"key deleted or replaced", 4, []bstep{
			group(3, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(2),
			bDo(3, "DEL", "s"), bRecv(0), bBlocked(1),
			bDo(3, "XADD", "s", "1-1", "f", "v"), bRecv(1),
			group(3, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(2),
			bDo(3, "SET", "s", "x"), bRecv(0), bBlocked(1),
			bDo(3, "DEL", "s"), bDo(3, "RPUSH", "s", "x"), bDo(3, "DEL", "s"), bBlocked(1),
			bDo(3, "XADD", "s", "0-1", "f", "v"), bBlocked(1), bDo(3, "XADD", "s", "9-1", "f", "v"), bRecv(1),
			// RENAME away fails the group reader; RENAME in serves XREAD.
			group(3, "{s}2", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{s}2", ">"),
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "{s}3", "$"), bBlocked(2),
			bDo(3, "XADD", "{s}2", "5-1", "f", "v"), bRecv(0),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{s}2", ">"), bBlocked(2),
			bDo(3, "RENAME", "{s}2", "{s}3"), bRecv(0), bRecv(1), bBlocked(0),
			// RENAME over a waited-on stream: the reader's group is the new one's.
			group(3, "{s}4", "g", "$"), group(3, "{s}5", "g", "0"), bDo(3, "XADD", "{s}5", "1-1", "f", "v"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{s}4", ">"), bBlocked(1),
			bDo(3, "RENAME", "{s}5", "{s}4"), bRecv(0), bDo(3, "XPENDING", "{s}4", "g"),
			// COPY onto a waited-on key.
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "{s}6", "$"), bBlocked(1),
			bDo(3, "COPY", "{s}4", "{s}6"), bRecv(1),
		}},
		{"flushall", 3, []bstep{
			group(2, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(2),
			bDo(2, "FLUSHALL"), bRecv(0), bBlocked(1), bDo(2, "XADD", "s", "1-1", "f", "v"), bRecv(1),
		}},
		{"expiry", 3, []bstep{
			group(2, "s", "g", "$"), group(2, "{s}b", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bDo(2, "PEXPIRE", "s", "30"), bRecv(0), // the active expiry cycle removes it
			bSend(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{s}b", ">"), bBlocked(1),
			bDo(2, "PEXPIRE", "{s}b", "1"), bSleep(5 * time.Millisecond), bDo(2, "EXISTS", "{s}b"), bRecv(1),
		}},
		{"timeouts", 3, []bstep{
			bDo(0, "XREAD", "BLOCK", "50", "STREAMS", "s", "$"), bDo(0, "XREAD", "BLOCK", "1", "STREAMS", "s", "{s}x", "$", "0"),
			group(2, "s", "g", "$"), bDo(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "30", "STREAMS", "s", ">"),
			bDo(0, "XINFO", "GROUPS", "s"),
			// A reader that timed out leaves the entries to the next one.
			bSend(0, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "50", "STREAMS", "s", ">"), bBlocked(1),
			bSend(1, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(2),
			bRecv(0), bBlocked(1), bDo(2, "XADD", "s", "1-1", "f", "v"), bRecv(1), bDo(2, "XPENDING", "s", "g"),
			bSend(0, "XREAD", "BLOCK", "50", "STREAMS", "s", "$"), bSend(0, "PING"), bRecv(0), bRecv(0),
		}},
		{"multi does not block", 2, []bstep{
			bDo(0, "MULTI"), bDo(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bDo(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "0"),
			bDo(0, "XADD", "s", "1-1", "f", "v"), bDo(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "0"),
			bDo(0, "XGROUP", "CREATE", "s", "g", "$"), bDo(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bDo(0, "XADD", "s", "2-1", "f", "v"), bDo(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bDo(0, "EXEC"),
			// A transaction that adds, then deletes: the waiter gets an empty read.
			bSend(1, "XREADGROUP", "GROUP", "g", "d", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(2),
		}},
		{"xadd and xdel in a transaction", 3, []bstep{
			group(2, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(2),
			bDo(2, "MULTI"), bDo(2, "XADD", "s", "1-1", "f", "v"), bDo(2, "XDEL", "s", "1-1"), bDo(2, "EXEC"),
			bRecv(0), bRecv(1), bDo(2, "XINFO", "GROUPS", "s"), bDo(2, "XPENDING", "s", "g"),
		}},
		{"setid while blocked", 2, []bstep{
			bDo(1, "XADD", "s", "1-1", "f", "v"), bDo(1, "XGROUP", "CREATE", "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bDo(1, "XGROUP", "SETID", "s", "g", "0"), bBlocked(1), bDo(1, "XADD", "s", "2-1", "f", "v"), bRecv(0),
			bDo(1, "XINFO", "GROUPS", "s"),
		}},
		{"noack", 2, []bstep{
			group(1, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bDo(1, "XADD", "s", "1-1", "f", "v"), bRecv(0), bDo(1, "XPENDING", "s", "g"), bDo(1, "XINFO", "GROUPS", "s"),
		}},
		{"blocked default count", 2, many},
		{"client unblock", 3, []bstep{
			group(2, "s", "g", "$"),
			bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(1), bUnblock(2, 0), bRecv(0), bBlocked(0), bUnblock(2, 0),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1), bUnblock(2, 0, "TIMEOUT"), bRecv(0),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "10000", "STREAMS", "s", ">"), bBlocked(1), bUnblock(2, 0, "ERROR"), bRecv(0),
			bSend(0, "XREAD", "BLOCK", "10000", "STREAMS", "s", "$"), bBlocked(1), bUnblock(2, 0, "error"), bRecv(0),
			bDo(2, "XADD", "s", "1-1", "f", "v"), bDo(2, "XPENDING", "s", "g"), bDo(2, "XINFO", "GROUPS", "s"),
		}},
		{"disconnect while blocked", 3, []bstep{
			group(2, "s", "g", "$"),
			bSend(0, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), bBlocked(1),
			bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bBlocked(2),
			bClose(0), bBlocked(1), bClose(1), bBlocked(0),
			bDo(2, "XADD", "s", "1-1", "f", "v"), bDo(2, "XPENDING", "s", "g"), bDo(2, "XINFO", "GROUPS", "s"),
		}},
		{"pipeline waits behind a blocked read", 2, []bstep{
			bDo(0, "SET", "k", "v"),
			bSend(0, "GET", "k"), bSend(0, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"), bSend(0, "SET", "k", "w"), bRecv(0), bBlocked(1),
			bDo(1, "GET", "k"), bDo(1, "XADD", "s", "1-1", "f", "v"), bRecv(0), bRecv(0), bDo(1, "GET", "k"),
		}},
		{"list and stream waiters on one key", 3, []bstep{
			bSend(0, "BLPOP", "k", "0"), bSend(1, "XREAD", "BLOCK", "0", "STREAMS", "k", "$"), bBlocked(2),
			bDo(2, "RPUSH", "k", "a"), bRecv(0), bBlocked(1), bDo(2, "DEL", "k"),
			bDo(2, "XADD", "k", "1-1", "f", "v"), bRecv(1),
		}},
	}
	p := difftest.Start(t)
	for _, proto := range []int{2, 3} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/resp%d", tc.name, proto), func(t *testing.T) {
				runBlockingScript(t, p, proto, tc.conns, tc.steps)
			})
		}
	}
}
