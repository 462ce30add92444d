package node_test

import (
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// txDiffStep is one command of a differential transaction script: conn
// picks the connection pair (0 or 1), sleep waits first (for expiry).
type txDiffStep struct {
	conn  int
	sleep time.Duration
	args  []string
}

func txOn(conn int, args ...string) txDiffStep { return txDiffStep{conn: conn, args: args} }

func txAfter(d time.Duration, conn int, args ...string) txDiffStep {
	return txDiffStep{conn: conn, sleep: d, args: args}
}

// TestDiffTransactions runs transaction scripts on a real cluster-mode
// redis-server and on the node, over RESP2 and RESP3, and demands the same
// reply to every command.
func TestDiffTransactions(t *testing.T) {
	tests := []struct {
		name  string
		steps []txDiffStep
	}{
		{"basic", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "SET", "a", "1"), txOn(0, "GET", "a"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"nested multi", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "MULTI"), txOn(0, "SET", "a", "1"), txOn(0, "EXEC"),
		}},
		{"without multi", []txDiffStep{
			txOn(0, "EXEC"), txOn(0, "DISCARD"), txOn(0, "UNWATCH"),
		}},
		{"discard", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "SET", "a", "1"), txOn(0, "DISCARD"), txOn(0, "GET", "a"), txOn(0, "EXEC"),
		}},
		{"arity errors", []txDiffStep{
			txOn(0, "MULTI", "x"), txOn(0, "EXEC", "x"), txOn(0, "DISCARD", "x"), txOn(0, "WATCH"),
			txOn(0, "MULTI"), txOn(0, "GET"), txOn(0, "SET", "a", "1"), txOn(0, "EXEC"), txOn(0, "GET", "a"),
			txOn(0, "MULTI"), txOn(0, "SET", "a", "1"), txOn(0, "EXEC", "x"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "DISCARD", "x"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "MULTI", "x"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "WATCH"), txOn(0, "EXEC"),
		}},
		{"unknown command", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "NOSUCHCMD", "x"), txOn(0, "SET", "a", "1"), txOn(0, "EXEC"), txOn(0, "GET", "a"),
		}},
		{"cross slot", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "MSET", "{x}a", "1", "{y}b", "2"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "SET", "{y}b", "2"), txOn(0, "EXEC"), txOn(0, "EXEC"),
			txOn(0, "GET", "{x}a"),
			txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "SET", "{y}b", "2"), txOn(0, "GET"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "GET"), txOn(0, "SET", "{y}b", "2"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "PING"), txOn(0, "SET", "{x}b", "2"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "GET", "{x}a"), txOn(0, "WATCH", "{x}a", "{y}b"), txOn(0, "EXEC"),
		}},
		{"runtime errors", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "SET", "k", "v"), txOn(0, "INCR", "k"), txOn(0, "SET", "k", "v", "EX", "0"),
			txOn(0, "GET", "k"), txOn(0, "EXEC"),
		}},
		{"node commands inside", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "PING"), txOn(0, "PING", "x"), txOn(0, "UNWATCH"), txOn(0, "EXEC"),
		}},
		{"watch inside multi", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "WATCH", "a"), txOn(0, "SET", "a", "1"), txOn(0, "EXEC"),
		}},
		{"watch change", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "SET", "k", "2"), txOn(0, "EXEC"),
			txOn(0, "GET", "k"),
			// The EXEC dropped the WATCH.
			txOn(1, "SET", "k", "3"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"watch change by same client", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "GET", "k"), txOn(0, "EXEC"),
		}},
		{"watch unchanged", []txDiffStep{
			txOn(0, "SET", "k", "1"), txOn(0, "WATCH", "k", "{k}x", "{k}y"), txOn(1, "GET", "k"), txOn(1, "SET", "other", "1"),
			txOn(0, "MULTI"), txOn(0, "INCR", "k"), txOn(0, "EXEC"),
		}},
		{"watch delete", []txDiffStep{
			txOn(0, "SET", "k", "1"), txOn(0, "WATCH", "k"), txOn(1, "DEL", "k"), txOn(0, "MULTI"), txOn(0, "EXEC"),
			txOn(0, "WATCH", "k"), txOn(1, "DEL", "k"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"watch change while queueing", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "MULTI"), txOn(0, "SET", "k", "2"), txOn(1, "SET", "k", "1"), txOn(0, "EXEC"),
			txOn(0, "GET", "k"),
		}},
		{"watch dirty before queueing skips cross slot", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(1, "SET", "k", "1"),
			txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "SET", "{y}b", "2"), txOn(0, "EXEC"),
			txOn(0, "WATCH", "k"), txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "SET", "{y}b", "2"),
			txOn(1, "SET", "k", "1"), txOn(0, "EXEC"),
		}},
		{"watch several calls and slots", []txDiffStep{
			txOn(0, "WATCH", "{x}a", "{y}b"),
			txOn(0, "WATCH", "{x}a"), txOn(0, "WATCH", "{y}b"), txOn(0, "WATCH", "{x}a"),
			txOn(1, "SET", "{y}b", "1"), txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "EXEC"),
			txOn(0, "WATCH", "{x}a"), txOn(0, "WATCH", "{y}b"),
			txOn(1, "SET", "{z}c", "1"), txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "2"), txOn(0, "EXEC"),
		}},
		{"unwatch", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "UNWATCH"), txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"exec without multi keeps watch", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "EXEC"), txOn(0, "DISCARD"), txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"discard unwatches", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "MULTI"), txOn(0, "DISCARD"), txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"execabort unwatches", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "MULTI"), txOn(0, "GET"), txOn(0, "EXEC"),
			txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"cross slot exec unwatches", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "MULTI"), txOn(0, "SET", "{x}a", "1"), txOn(0, "SET", "{y}b", "1"), txOn(0, "EXEC"),
			txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"flushall", []txDiffStep{
			txOn(0, "WATCH", "missing"), txOn(1, "FLUSHALL"), txOn(0, "MULTI"), txOn(0, "EXEC"),
			txOn(0, "SET", "k", "1"), txOn(0, "WATCH", "k"), txOn(1, "FLUSHALL"), txOn(0, "MULTI"), txOn(0, "EXEC"),
			txOn(0, "SET", "k", "1"), txOn(0, "WATCH", "k"), txOn(1, "FLUSHDB"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"flushall inside exec", []txDiffStep{
			txOn(0, "SET", "{x}a", "1"), txOn(0, "MULTI"), txOn(0, "SET", "{x}b", "1"), txOn(0, "FLUSHALL"),
			txOn(0, "SET", "{x}c", "1"), txOn(0, "DBSIZE"), txOn(0, "EXEC"), txOn(0, "GET", "{x}a"), txOn(0, "GET", "{x}c"),
		}},
		{"watched key expires", []txDiffStep{
			txOn(0, "SET", "k", "1", "PX", "100"), txOn(0, "WATCH", "k"),
			txAfter(250*time.Millisecond, 0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"watched key expired before watch", []txDiffStep{
			txOn(0, "SET", "k", "1", "PX", "30"),
			txAfter(120*time.Millisecond, 0, "WATCH", "k"), txOn(0, "MULTI"), txOn(0, "EXEC"),
			txOn(0, "SET", "k", "1", "PX", "30"),
			txAfter(120*time.Millisecond, 0, "WATCH", "k"), txOn(1, "SET", "k", "2"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"exec arity error outside multi unwatches", []txDiffStep{
			txOn(0, "WATCH", "k"), txOn(0, "EXEC", "x"), txOn(1, "SET", "k", "1"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
		{"failed writes do not touch", []txDiffStep{
			txOn(0, "SET", "k", "v"), txOn(0, "WATCH", "k", "missing"),
			txOn(1, "SETNX", "k", "x"), txOn(1, "INCR", "k"), txOn(1, "DEL", "missing"), txOn(1, "SET", "k", "y", "NX"),
			txOn(0, "MULTI"), txOn(0, "GET", "k"), txOn(0, "EXEC"),
		}},
		{"node and connection commands inside", []txDiffStep{
			txOn(0, "MULTI"), txOn(0, "SELECT", "0"), txOn(0, "ECHO", "hi"), txOn(0, "CLIENT", "SETNAME", "tx"),
			txOn(0, "CLIENT", "GETNAME"), txOn(0, "GET", "nokey"), txOn(0, "DBSIZE"), txOn(0, "EXEC"),
		}},
		{"expire set on watched key", []txDiffStep{
			txOn(0, "SET", "k", "1"), txOn(0, "WATCH", "k"), txOn(1, "PEXPIRE", "k", "100000"), txOn(0, "MULTI"), txOn(0, "EXEC"),
		}},
	}
	for _, proto := range []int{2, 3} {
		for _, tt := range tests {
			t.Run(tt.name+"/RESP"+string(rune('0'+proto)), func(t *testing.T) {
				p := difftest.Start(t)
				conns := []*difftest.ConnPair{p.NewConnProto(t, proto), p.NewConnProto(t, proto)}
				for _, st := range tt.steps {
					time.Sleep(st.sleep)
					conns[st.conn].Do(t, st.args...)
				}
			})
		}
	}
}

// TestDiffResetEndsTransaction checks RESET inside MULTI: it discards the
// transaction and drops the WATCHes.
func TestDiffResetEndsTransaction(t *testing.T) {
	p := difftest.Start(t)
	other := p.NewConn(t)
	p.Do(t, "WATCH", "k")
	p.Do(t, "MULTI")
	p.Do(t, "SET", "k", "1")
	p.Do(t, "RESET")
	p.Do(t, "EXEC")
	other.Do(t, "SET", "k", "2")
	p.Do(t, "MULTI")
	p.Do(t, "EXEC")
	p.Do(t, "GET", "k")
}

// TestDiffHelloInsideExec checks that HELLO inside a transaction switches
// the protocol of the replies that follow it in the same EXEC array. The
// HELLO replies carry the client id, which differs between the servers,
// so they are compared by kind only.
func TestDiffHelloInsideExec(t *testing.T) {
	p := difftest.Start(t)
	for _, args := range [][]string{{"MULTI"}, {"GET", "nokey"}, {"HELLO", "3"}, {"GET", "nokey"}, {"HELLO", "2"}, {"GET", "nokey"}} {
		p.Do(t, args...)
	}
	a, b := p.Both(t, "EXEC")
	if a.Kind != difftest.Array || b.Kind != difftest.Array || len(a.Elems) != 5 || len(b.Elems) != 5 {
		t.Fatalf("EXEC: redis %s, node %s", a, b)
	}
	for i := range a.Elems {
		if i%2 == 1 {
			if a.Elems[i].Kind != b.Elems[i].Kind {
				t.Errorf("HELLO reply %d: redis %s, node %s", i, a.Elems[i], b.Elems[i])
			}
			continue
		}
		if !difftest.Equal(a.Elems[i], b.Elems[i]) {
			t.Errorf("element %d: redis %s, node %s", i, a.Elems[i], b.Elems[i])
		}
	}
}
