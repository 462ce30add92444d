package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// bstep is one step of a blocking script, run on a real redis-server and
// on the node: conn picks the connection pair.
type bstep struct {
	kind  byte // 'd' do, 's' send, 'r' receive, 'b' wait blocked, 'u' unblock, 'c' close, 'z' sleep
	conn  int
	args  []string
	n     int           // 'b': blocked clients to wait for
	sleep time.Duration // 'z'
}

func bDo(conn int, args ...string) bstep   { return bstep{kind: 'd', conn: conn, args: args} }
func bSend(conn int, args ...string) bstep { return bstep{kind: 's', conn: conn, args: args} }
func bRecv(conn int) bstep                 { return bstep{kind: 'r', conn: conn} }
func bBlocked(n int) bstep                 { return bstep{kind: 'b', n: n} }
func bClose(conn int) bstep                { return bstep{kind: 'c', conn: conn} }
func bSleep(d time.Duration) bstep         { return bstep{kind: 'z', sleep: d} }

// bKill runs CLIENT KILL ID <id of conn target> on conn.
func bKill(conn, target int) bstep { return bstep{kind: 'k', conn: conn, n: target} }

// bUnblock runs CLIENT UNBLOCK <id of conn target> [mode...] on conn.
func bUnblock(conn, target int, mode ...string) bstep {
	return bstep{kind: 'u', conn: conn, n: target, args: mode}
}

// waitBlocked polls both servers until each reports n blocked clients,
// so that a push is sent only once the waiters are registered.
func waitBlocked(t *testing.T, ctl *difftest.ConnPair, n int) {
	t.Helper()
	difftest.WaitBlocked(t, ctl, n)
}

// runBlockingScript runs steps on fresh connection pairs (conns of them)
// in protocol proto and demands the same reply from both servers at
// every step.
func runBlockingScript(t *testing.T, p *difftest.Pair, proto, conns int, steps []bstep) {
	t.Helper()
	p.Flush(t)
	ctl := p.NewConn(t)
	cs := make([]*difftest.ConnPair, conns)
	ids := make([][2]string, conns)
	for i := range cs {
		cs[i] = p.NewConnProto(t, proto)
		r, n := cs[i].Both(t, "CLIENT", "ID")
		ids[i] = [2]string{fmt.Sprint(r.Int), fmt.Sprint(n.Int)}
	}
	for i, st := range steps {
		c := cs[st.conn]
		where := fmt.Sprintf("step %d (conn %d)", i, st.conn)
		switch st.kind {
		case 'd':
			c.Do(t, st.args...)
		case 's':
			b := make([][]byte, len(st.args))
			for j, a := range st.args {
				b[j] = []byte(a)
			}
			if err := c.Redis.Send(b...); err != nil {
				t.Fatalf("%s: redis send: %v", where, err)
			}
			if err := c.Node.Send(b...); err != nil {
				t.Fatalf("%s: node send: %v", where, err)
			}
		case 'r':
			a, err := c.Redis.Receive()
			if err != nil {
				t.Fatalf("%s: redis receive: %v", where, err)
			}
			b, err := c.Node.Receive()
			if err != nil {
				t.Fatalf("%s: node receive: %v (redis replied %s)", where, err, a)
			}
			c.Compare(t, []string{where, "<pending reply>"}, a, b)
		case 'b':
			waitBlocked(t, ctl, st.n)
		case 'u', 'k':
			args := append([]string{"CLIENT", "UNBLOCK", ids[st.n][0]}, st.args...)
			if st.kind == 'k' {
				args = []string{"CLIENT", "KILL", "ID", ids[st.n][0]}
			}
			a, err := c.Redis.DoStrings(args...)
			if err != nil {
				t.Fatalf("%s: redis: %v", where, err)
			}
			args[len(args)-1-len(st.args)] = ids[st.n][1]
			b, err := c.Node.DoStrings(args...)
			if err != nil {
				t.Fatalf("%s: node: %v", where, err)
			}
			c.Compare(t, args, a, b)
		case 'c':
			c.Redis.Close()
			c.Node.Close()
		case 'z':
			time.Sleep(st.sleep)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestDiffBlocking runs blocking scenarios with several connections on a
// real cluster-mode redis-server and on the node, in RESP2 and RESP3.
// Timing is made deterministic by waiting until both servers report the
// clients blocked before the pushes.
func TestDiffBlocking(t *testing.T) {
	tests := []struct {
		name  string
		conns int
		steps []bstep
	}{
		{"immediate", 1, []bstep{
			bDo(0, "RPUSH", "a", "1", "2", "3"),
			bDo(0, "BLPOP", "a", "0"), bDo(0, "BRPOP", "a", "0"),
			bDo(0, "BLPOP", "{a}x", "a", "0"), bDo(0, "EXISTS", "a"),
			bDo(0, "RPUSH", "{a}y", "1", "2"), bDo(0, "BLPOP", "{a}x", "{a}y", "a", "0"),
			bDo(0, "RPUSH", "a", "1", "2", "3", "4"),
			bDo(0, "BLMPOP", "0", "2", "{a}x", "a", "RIGHT", "COUNT", "3"),
			bDo(0, "BLMPOP", "0", "1", "a", "LEFT", "COUNT", "10"),
			bDo(0, "RPUSH", "a", "1", "2", "3"),
			bDo(0, "BLMOVE", "a", "{a}d", "LEFT", "RIGHT", "0"),
			bDo(0, "BRPOPLPUSH", "a", "{a}d", "0"),
			bDo(0, "BLMOVE", "a", "a", "LEFT", "RIGHT", "0"), bDo(0, "LRANGE", "a", "0", "-1"),
			bDo(0, "LRANGE", "{a}d", "0", "-1"),
		}},
		{"errors", 1, []bstep{
			bDo(0, "BLPOP", "a", "-1"), bDo(0, "BLPOP", "a", "abc"), bDo(0, "BLPOP", "a", "1e400"),
			bDo(0, "BLPOP", "a", "inf"), bDo(0, "BLPOP", "a", "nan"), bDo(0, "BLPOP", "a", ""),
			bDo(0, "BLPOP", "a", " 1"), bDo(0, "BLPOP", "a", "1e5000"), bDo(0, "BLPOP", "a", "9223372036854775.808"),
			bDo(0, "BLPOP", "a", "9223372036854775.8075"), bDo(0, "BLPOP", "a", "-1.5"), bDo(0, "BLPOP", "a", "0x"),
			bDo(0, "BLPOP", "a", "b", "1"), bDo(0, "BLPOP", "a"),
			bDo(0, "BLMOVE", "a", "{a}b", "LEFT", "x", "-1"), bDo(0, "BLMOVE", "a", "{a}b", "x", "LEFT", "x"),
			bDo(0, "BLMOVE", "a", "{a}b", "LEFT", "LEFT", "x"), bDo(0, "BLMOVE", "a", "b", "LEFT", "LEFT", "1"),
			bDo(0, "BRPOPLPUSH", "a", "{a}b", "-5"), bDo(0, "BRPOPLPUSH", "a", "{a}b"),
			bDo(0, "BLMPOP", "-1", "1", "a", "LEFT"), bDo(0, "BLMPOP", "0", "0", "a", "LEFT"),
			bDo(0, "BLMPOP", "0", "x", "a", "LEFT"), bDo(0, "BLMPOP", "0", "3", "a", "LEFT"),
			bDo(0, "BLMPOP", "0", "1", "a", "MIDDLE"), bDo(0, "BLMPOP", "0", "1", "a", "LEFT", "COUNT", "0"),
			bDo(0, "BLMPOP", "x", "1", "a", "LEFT", "COUNT", "1", "COUNT", "2"),
			bDo(0, "BLMPOP", "x", "1", "a", "LEFT", "FOO"), bDo(0, "BLMPOP", "x", "1", "a", "LEFT"),
			bDo(0, "BLMPOP", "0", "2", "a", "b", "LEFT"),
			bDo(0, "SET", "s", "v"), bDo(0, "BLPOP", "{s}e", "s", "0"), bDo(0, "BLMOVE", "s", "{s}d", "LEFT", "LEFT", "0"),
			bDo(0, "RPUSH", "l", "1"), bDo(0, "SET", "{l}s", "v"),
			bDo(0, "BLMOVE", "l", "{l}s", "LEFT", "LEFT", "0"), bDo(0, "LLEN", "l"),
			bDo(0, "BLMPOP", "0", "2", "{s}e", "s", "LEFT"),
			bDo(0, "CLIENT", "UNBLOCK"), bDo(0, "CLIENT", "UNBLOCK", "x"), bDo(0, "CLIENT", "UNBLOCK", "x", "foo"),
			bDo(0, "CLIENT", "UNBLOCK", "1", "foo"), bDo(0, "CLIENT", "UNBLOCK", "1", "error", "x"),
			bDo(0, "CLIENT", "UNBLOCK", "999999"), bDo(0, "CLIENT", "UNBLOCK", "999999", "ERROR"),
		}},
		{"wake one", 2, []bstep{
			bSend(0, "BLPOP", "a", "0"), bBlocked(1),
			bDo(1, "RPUSH", "a", "x", "y"), bRecv(0), bBlocked(0), bDo(1, "LRANGE", "a", "0", "-1"),
			bSend(0, "BRPOP", "a", "0"), bRecv(0), bDo(1, "EXISTS", "a"),
		}},
		{"fifo three waiters", 4, []bstep{
			bSend(0, "BLPOP", "q", "0"), bBlocked(1),
			bSend(1, "BRPOP", "q", "0"), bBlocked(2),
			bSend(2, "BLMPOP", "0", "1", "q", "LEFT", "COUNT", "2"), bBlocked(3),
			bDo(3, "RPUSH", "q", "a"), bRecv(0), bBlocked(2),
			bDo(3, "RPUSH", "q", "b", "c", "d", "e"), bRecv(1), bRecv(2), bBlocked(0),
			bDo(3, "LRANGE", "q", "0", "-1"),
		}},
		{"push wakes as many as it can serve", 4, []bstep{
			bSend(0, "BLPOP", "q", "0"), bBlocked(1),
			bSend(1, "BLPOP", "q", "0"), bBlocked(2),
			bSend(2, "BLPOP", "q", "0"), bBlocked(3),
			bDo(3, "LPUSH", "q", "a", "b"), bRecv(0), bRecv(1), bBlocked(1), bDo(3, "EXISTS", "q"),
			bDo(3, "LPUSH", "q", "c"), bRecv(2), bBlocked(0),
		}},
		{"multi key", 3, []bstep{
			bSend(0, "BLPOP", "{k}a", "{k}b", "{k}c", "0"), bBlocked(1),
			bSend(1, "BRPOP", "{k}c", "{k}a", "0"), bBlocked(2),
			bDo(2, "RPUSH", "{k}c", "1", "2"), bRecv(0), bRecv(1), bBlocked(0),
			bSend(0, "BLPOP", "{k}a", "{k}b", "0"), bBlocked(1),
			bDo(2, "MULTI"), bDo(2, "RPUSH", "{k}b", "x"), bDo(2, "RPUSH", "{k}a", "y"), bDo(2, "EXEC"),
			bRecv(0), bDo(2, "LRANGE", "{k}a", "0", "-1"), bDo(2, "LRANGE", "{k}b", "0", "-1"), bDo(2, "DEL", "{k}a"),
			bSend(0, "BLPOP", "{k}a", "{k}a", "0"), bBlocked(1), bDo(2, "LPUSH", "{k}a", "z"), bRecv(0),
		}},
		{"blmove chain and rotate", 4, []bstep{
			bSend(0, "BLMOVE", "{q}src", "{q}mid", "RIGHT", "LEFT", "0"), bBlocked(1),
			bSend(1, "BRPOPLPUSH", "{q}mid", "{q}dst", "0"), bBlocked(2),
			bSend(2, "BLPOP", "{q}dst", "0"), bBlocked(3),
			bDo(3, "LPUSH", "{q}src", "job1", "job2"), bRecv(0), bRecv(1), bRecv(2), bBlocked(0),
			bDo(3, "LRANGE", "{q}src", "0", "-1"), bDo(3, "EXISTS", "{q}mid", "{q}dst"),
			bSend(0, "BLMOVE", "r", "r", "LEFT", "RIGHT", "0"), bBlocked(1),
			bSend(1, "BLMOVE", "r", "r", "RIGHT", "LEFT", "0"), bBlocked(2),
			bDo(3, "RPUSH", "r", "1", "2"), bRecv(0), bRecv(1), bDo(3, "LRANGE", "r", "0", "-1"),
		}},
		{"sort store wakes", 3, []bstep{
			bSend(0, "BLPOP", "{s}d", "0"), bBlocked(1),
			bDo(2, "RPUSH", "{s}src", "3", "1", "2"), bDo(2, "SORT", "{s}src", "STORE", "{s}d"),
			bRecv(0), bBlocked(0), bDo(2, "LRANGE", "{s}d", "0", "-1"),
			bSend(1, "BRPOP", "{s}e", "0"), bBlocked(1),
			bDo(2, "SORT", "{s}nokey", "STORE", "{s}e"), bBlocked(1),
			bDo(2, "SORT", "{s}src", "DESC", "LIMIT", "0", "1", "STORE", "{s}e"), bRecv(1), bBlocked(0),
		}},
		{"blmove wrong type destination", 3, []bstep{
			bSend(0, "BLMOVE", "src", "{src}d", "LEFT", "LEFT", "0"), bBlocked(1),
			bSend(1, "BLPOP", "src", "0"), bBlocked(2),
			bDo(2, "SET", "{src}d", "x"), bDo(2, "RPUSH", "src", "v"), bRecv(0), bRecv(1), bBlocked(0),
		}},
		{"rename and lmove wake", 3, []bstep{
			bSend(0, "BLPOP", "{t}a", "0"), bBlocked(1),
			bDo(2, "RPUSH", "{t}tmp", "1", "2"), bDo(2, "RENAME", "{t}tmp", "{t}a"), bRecv(0),
			bSend(0, "BRPOP", "{t}b", "0"), bBlocked(1),
			bDo(2, "LMOVE", "{t}a", "{t}b", "LEFT", "LEFT"), bRecv(0), bBlocked(0),
			bSend(1, "BLPOP", "{t}c", "0"), bBlocked(1),
			bDo(2, "SET", "{t}c", "str"), bDo(2, "DEL", "{t}c"), bDo(2, "RPUSH", "{t}c", "v"), bRecv(1),
		}},
		{"timeouts", 3, []bstep{
			bDo(0, "BLPOP", "a", "0.1"), bDo(0, "BRPOP", "a", "{a}b", "0.05"),
			bDo(0, "BLMOVE", "a", "{a}b", "LEFT", "LEFT", "0.1"), bDo(0, "BRPOPLPUSH", "a", "{a}b", "0.05"),
			bDo(0, "BLMPOP", "0.05", "1", "a", "LEFT"), bDo(0, "BLPOP", "a", "0.0004"), bDo(0, "BLPOP", "a", "0x1p-4"),
			bSend(0, "BLPOP", "a", "0.1"), bSend(0, "PING"), bRecv(0), bRecv(0),
			// a waiter that timed out leaves the element to the next one
			bSend(0, "BLPOP", "t", "0.05"), bBlocked(1), bSend(1, "BLPOP", "t", "0"), bBlocked(2),
			bRecv(0), bBlocked(1), bDo(2, "RPUSH", "t", "x"), bRecv(1), bDo(2, "EXISTS", "t"),
		}},
		{"multi does not block", 1, []bstep{
			bDo(0, "MULTI"), bDo(0, "BLPOP", "a", "0"), bDo(0, "BRPOP", "a", "{a}b", "0"),
			bDo(0, "BLMOVE", "a", "{a}b", "LEFT", "LEFT", "0"), bDo(0, "BRPOPLPUSH", "a", "{a}b", "0"),
			bDo(0, "BLMPOP", "0", "1", "a", "LEFT"), bDo(0, "BLPOP", "a", "-1"),
			bDo(0, "RPUSH", "a", "1", "2", "3"), bDo(0, "BLPOP", "a", "0"),
			bDo(0, "BLMOVE", "a", "a", "LEFT", "RIGHT", "0"), bDo(0, "BLMPOP", "0", "1", "a", "RIGHT", "COUNT", "5"),
			bDo(0, "EXEC"),
			bDo(0, "MULTI"), bDo(0, "BLPOP", "a", "b", "0"), bDo(0, "EXEC"),
		}},
		{"pipeline waits behind a blocked command", 2, []bstep{
			bDo(0, "SET", "k", "v"),
			bSend(0, "GET", "k"), bSend(0, "BLPOP", "q", "0"), bSend(0, "SET", "k", "w"), bRecv(0), bBlocked(1),
			bDo(1, "GET", "k"), bDo(1, "RPUSH", "q", "x"), bRecv(0), bRecv(0), bDo(1, "GET", "k"),
		}},
		{"client unblock", 3, []bstep{
			bSend(0, "BLPOP", "a", "0"), bBlocked(1), bUnblock(2, 0), bRecv(0), bBlocked(0), bUnblock(2, 0),
			bSend(0, "BLMOVE", "a", "{a}b", "LEFT", "LEFT", "0"), bBlocked(1), bUnblock(2, 0, "TIMEOUT"), bRecv(0),
			bSend(0, "BLMPOP", "10", "1", "a", "LEFT"), bBlocked(1), bUnblock(2, 0, "error"), bRecv(0),
			bSend(0, "BRPOPLPUSH", "a", "{a}b", "0"), bBlocked(1), bUnblock(2, 0, "ERROR"), bRecv(0),
			bSend(0, "BLPOP", "a", "0"), bSend(1, "BLPOP", "a", "0"), bBlocked(2), bUnblock(2, 0, "ERROR"), bRecv(0),
			bDo(2, "RPUSH", "a", "v"), bRecv(1), bDo(2, "EXISTS", "a"), bUnblock(2, 1), bUnblock(2, 2),
			bDo(2, "MULTI"), bDo(2, "CLIENT", "UNBLOCK", "99999"), bDo(2, "EXEC"),
		}},
		{"wait without replicas", 3, []bstep{
			bDo(0, "WAIT", "0", "0"), bDo(0, "WAIT", "-1", "0"), bDo(0, "WAIT", "1", "20"),
			bDo(0, "WAIT", "2147483648", "0"), bDo(0, "WAIT", "4294967296", "0"), bDo(0, "WAIT", "9223372036854775807", "0"),
			bDo(0, "WAIT", "-9223372036854775808", "0"), bDo(0, "WAIT", "4294967297", "20"), bDo(0, "WAIT", "2147483647", "20"),
			bDo(0, "WAIT", "x", "0"), bDo(0, "WAIT", "1", "x"), bDo(0, "WAIT", "1", "-1"), bDo(0, "WAIT", "0", "-1"),
			bDo(0, "WAIT", "1", "1.5"), bDo(0, "WAIT", "x", "-1"), bDo(0, "WAIT", "1"), bDo(0, "WAIT", "1", "2", "3"),
			bSend(0, "WAIT", "1", "0"), bSend(0, "PING", "after"), bBlocked(1), bUnblock(2, 0), bRecv(0), bRecv(0), bBlocked(0),
			bSend(0, "WAIT", "5", "0"), bBlocked(1), bUnblock(2, 0, "ERROR"), bRecv(0),
			bSend(1, "WAIT", "1", "0"), bBlocked(1), bClose(1), bBlocked(0),
			bDo(0, "MULTI"), bDo(0, "WAIT", "1", "0"), bDo(0, "WAIT", "x", "0"), bDo(0, "EXEC"),
		}},
		{"client kill while blocked", 3, []bstep{
			bSend(0, "BLPOP", "a", "0"), bBlocked(1), bKill(2, 0), bBlocked(0),
			bDo(2, "RPUSH", "a", "x"), bDo(2, "LRANGE", "a", "0", "-1"),
			bSend(1, "BLPOP", "a", "{a}b", "0"), bSend(1, "PING"), bRecv(1), bRecv(1),
		}},
		{"client reply while blocked", 2, []bstep{
			bSend(0, "CLIENT", "REPLY", "SKIP"), bSend(0, "BLPOP", "a", "0"), bSend(0, "PING", "after"), bBlocked(1),
			bDo(1, "RPUSH", "a", "x"), bRecv(0),
			bSend(0, "PING", "before"), bSend(0, "CLIENT", "REPLY", "SKIP"), bSend(0, "BLPOP", "a", "0.05"),
			bSend(0, "PING", "after"), bRecv(0), bRecv(0),
		}},
		{"disconnect while blocked", 3, []bstep{
			bSend(0, "BLPOP", "a", "0"), bBlocked(1), bSend(1, "BLMOVE", "a", "{a}b", "LEFT", "LEFT", "0"), bBlocked(2),
			bClose(0), bBlocked(1), bClose(1), bBlocked(0),
			bDo(2, "RPUSH", "a", "x"), bDo(2, "LRANGE", "a", "0", "-1"), bDo(2, "EXISTS", "{a}b"),
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
