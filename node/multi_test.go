package node_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// txClock is a settable clock for nodes under test.
type txClock struct{ ms atomic.Int64 }

func (f *txClock) Now() time.Time          { return time.UnixMilli(f.ms.Load()) }
func (f *txClock) Advance(d time.Duration) { f.ms.Add(d.Milliseconds()) }

// startTxNode serves a fresh node on a free port and returns its address.
// now may be nil for the real clock.
func startTxNode(t *testing.T, now func() time.Time) string {
	t.Helper()
	_, addr, _ := nodetest.Start(t, node.Options{Now: now}, nil)
	return addr
}

func dialTx(t testing.TB, addr string, proto int) *difftest.Conn {
	t.Helper()
	c, err := difftest.DialProto(addr, proto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// txDo sends a command and returns the reply rendered by difftest.
func txDo(t testing.TB, c *difftest.Conn, args ...string) difftest.Value {
	t.Helper()
	v, err := c.DoStrings(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// txStep is one command of a scripted session and the reply it must get,
// as difftest renders it. conn picks the connection (0 or 1); advance
// moves the fake clock before the command.
type txStep struct {
	conn    int
	advance time.Duration
	args    []string
	want    difftest.Value
}

func txS(conn int, want difftest.Value, args ...string) txStep {
	return txStep{conn: conn, args: args, want: want}
}

// TestTransactionScripts checks the transaction rules on one node, with
// replies as Redis 7.0.15 gives them in cluster mode (diff_multi_test.go
// checks the same sequences against a real server).
func TestTransactionScripts(t *testing.T) {
	ok, queued := difftest.Simple("OK"), difftest.Simple("QUEUED")
	nullArray, nullBulk, null3 := difftest.Value{Kind: difftest.NullArray}, difftest.Value{Kind: difftest.NullBulk}, difftest.Value{Kind: difftest.Null}
	execAbort := difftest.Err("EXECABORT Transaction discarded because of previous errors.")
	crossSlot := difftest.Err("CROSSSLOT Keys in request don't hash to the same slot")
	tests := []struct {
		name  string
		proto int
		steps []txStep
	}{
		{"nested multi does not abort", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, difftest.Err("ERR MULTI calls can not be nested"), "MULTI"),
			txS(0, queued, "SET", "a", "1"),
			txS(0, difftest.ArrayOf(ok), "EXEC"),
		}},
		{"watch is no access", 2, []txStep{
			txS(0, ok, "SET", "w", "v"),
			{advance: 2 * time.Second, args: []string{"WATCH", "w"}, want: ok},
			txS(0, ok, "UNWATCH"),
			txS(0, difftest.Int(2), "OBJECT", "IDLETIME", "w"),
		}},
		{"exec and discard without multi", 2, []txStep{
			txS(0, difftest.Err("ERR EXEC without MULTI"), "EXEC"),
			txS(0, difftest.Err("ERR DISCARD without MULTI"), "DISCARD"),
		}},
		{"queue error aborts", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "a", "1"),
			txS(0, difftest.Err("ERR wrong number of arguments for 'get' command"), "GET"),
			txS(0, queued, "SET", "b", "1"),
			txS(0, execAbort, "EXEC"),
			txS(0, nullBulk, "GET", "a"),
			txS(0, difftest.Err("ERR EXEC without MULTI"), "EXEC"),
		}},
		{"exec arity error discards", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "a", "1"),
			txS(0, difftest.Err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"), "EXEC", "x"),
			txS(0, difftest.Err("ERR EXEC without MULTI"), "EXEC"),
		}},
		{"discard arity error flags", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, difftest.Err("ERR wrong number of arguments for 'discard' command"), "DISCARD", "x"),
			txS(0, execAbort, "EXEC"),
		}},
		{"cross slot command at queue time", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, crossSlot, "MSET", "{x}a", "1", "{y}b", "2"),
			txS(0, execAbort, "EXEC"),
		}},
		{"commands in two slots fail at exec", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "{x}a", "1"),
			txS(0, queued, "SET", "{y}b", "2"),
			txS(0, difftest.Err("ERR wrong number of arguments for 'get' command"), "GET"),
			txS(0, crossSlot, "EXEC"),
			txS(0, difftest.Err("ERR EXEC without MULTI"), "EXEC"),
			txS(0, nullBulk, "GET", "{x}a"),
		}},
		{"commands after an error are not stored", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "{x}a", "1"),
			txS(0, difftest.Err("ERR wrong number of arguments for 'get' command"), "GET"),
			txS(0, queued, "SET", "{y}b", "2"),
			txS(0, execAbort, "EXEC"),
		}},
		{"runtime errors inside exec", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "k", "v"),
			txS(0, queued, "INCR", "k"),
			txS(0, queued, "GET", "k"),
			txS(0, difftest.ArrayOf(ok, difftest.Err("ERR value is not an integer or out of range"), difftest.BulkOf("v")), "EXEC"),
		}},
		{"node commands inside exec", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, queued, "PING"),
			txS(0, queued, "UNWATCH"),
			txS(0, difftest.ArrayOf(difftest.Simple("PONG"), ok), "EXEC"),
		}},
		{"exec arity error outside multi unwatches", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, difftest.Err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"), "EXEC", "x"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
		}},
		{"watch inside multi", 2, []txStep{
			txS(0, ok, "MULTI"),
			txS(0, difftest.Err("ERR WATCH inside MULTI is not allowed"), "WATCH", "a"),
			txS(0, difftest.ArrayOf(), "EXEC"),
		}},
		{"watch cross slot", 2, []txStep{
			txS(0, crossSlot, "WATCH", "{x}a", "{y}b"),
			txS(0, ok, "WATCH", "{x}a"),
			txS(0, ok, "WATCH", "{y}b"),
			txS(1, ok, "SET", "{y}b", "1"),
			txS(0, ok, "MULTI"),
			txS(0, nullArray, "EXEC"),
		}},
		{"watch change by another client", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "k", "2"),
			txS(0, nullArray, "EXEC"),
			txS(0, difftest.BulkOf("1"), "GET", "k"),
		}},
		{"watch change by the same client", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, nullArray, "EXEC"),
		}},
		{"watch change while queueing skips commands", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "{x}a", "1"),
			txS(0, queued, "SET", "{y}b", "2"),
			txS(0, nullArray, "EXEC"),
		}},
		{"watch change after queueing keeps cross slot", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "{x}a", "1"),
			txS(0, queued, "SET", "{y}b", "2"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, crossSlot, "EXEC"),
		}},
		{"watch delete", 2, []txStep{
			txS(0, ok, "SET", "k", "1"),
			txS(0, ok, "WATCH", "k"),
			txS(1, difftest.Int(1), "DEL", "k"),
			txS(0, ok, "MULTI"),
			txS(0, nullArray, "EXEC"),
		}},
		{"unwatched change does not fail", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, ok, "UNWATCH"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
		}},
		{"exec without multi keeps watches", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, difftest.Err("ERR EXEC without MULTI"), "EXEC"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, nullArray, "EXEC"),
		}},
		{"exec unwatches", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
		}},
		{"discard unwatches", 2, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(0, ok, "MULTI"),
			txS(0, ok, "DISCARD"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
		}},
		{"flushall touches existing watched keys only", 2, []txStep{
			txS(0, ok, "WATCH", "missing"),
			txS(1, ok, "FLUSHALL"),
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
			txS(0, ok, "SET", "k", "1"),
			txS(0, ok, "WATCH", "k"),
			txS(1, ok, "FLUSHALL"),
			txS(0, ok, "MULTI"),
			txS(0, nullArray, "EXEC"),
		}},
		{"watched key expires before exec", 2, []txStep{
			txS(0, ok, "SET", "k", "1", "PX", "100"),
			txS(0, ok, "WATCH", "k"),
			{advance: 200 * time.Millisecond, args: []string{"MULTI"}, want: ok},
			txS(0, nullArray, "EXEC"),
		}},
		{"key already expired at watch", 2, []txStep{
			txS(0, ok, "SET", "k", "1", "PX", "100"),
			{advance: 200 * time.Millisecond, args: []string{"WATCH", "k"}, want: ok},
			txS(0, ok, "MULTI"),
			txS(0, difftest.ArrayOf(), "EXEC"),
		}},
		{"key already expired at watch then set", 2, []txStep{
			txS(0, ok, "SET", "k", "1", "PX", "100"),
			{advance: 200 * time.Millisecond, args: []string{"WATCH", "k"}, want: ok},
			txS(1, ok, "SET", "k", "2"),
			txS(0, ok, "MULTI"),
			txS(0, nullArray, "EXEC"),
		}},
		{"null reply in RESP3", 3, []txStep{
			txS(0, ok, "WATCH", "k"),
			txS(1, ok, "SET", "k", "1"),
			txS(0, ok, "MULTI"),
			txS(0, null3, "EXEC"),
		}},
		{"keyless data command inside exec", 2, []txStep{
			txS(0, ok, "WATCH", "{x}w"),
			txS(0, ok, "MULTI"),
			txS(0, queued, "SET", "{x}a", "1"),
			txS(0, queued, "FLUSHALL"),
			txS(0, queued, "SET", "{x}b", "1"),
			txS(0, difftest.ArrayOf(ok, ok, ok), "EXEC"),
			txS(0, nullBulk, "GET", "{x}a"),
			txS(0, difftest.BulkOf("1"), "GET", "{x}b"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &txClock{}
			clock.ms.Store(time.Now().UnixMilli())
			addr := startTxNode(t, clock.Now)
			conns := []*difftest.Conn{dialTx(t, addr, tt.proto), dialTx(t, addr, tt.proto)}
			for i, st := range tt.steps {
				clock.Advance(st.advance)
				got := txDo(t, conns[st.conn], st.args...)
				if !difftest.Equal(got, st.want) {
					t.Fatalf("step %d %v on conn %d:\n got  %s\n want %s", i, st.args, st.conn, got, st.want)
				}
			}
		})
	}
}

// TestWatchRetryCounter runs optimistic increments from several clients:
// WATCH, GET, MULTI, SET, EXEC, retried on a null reply. Every increment
// must land exactly once.
func TestWatchRetryCounter(t *testing.T) {
	addr := startTxNode(t, nil)
	const clients, incs = 4, 150
	var wg sync.WaitGroup
	var retries atomic.Int64
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- incrementLoop(c, "counter", incs, &retries)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := dialTx(t, addr, 2)
	if got := txDo(t, c, "GET", "counter"); !difftest.Equal(got, difftest.BulkOf(strconv.Itoa(clients*incs))) {
		t.Fatalf("counter = %s, want %d (retries %d)", got, clients*incs, retries.Load())
	}
	t.Logf("%d retries", retries.Load())
}

func incrementLoop(c *difftest.Conn, key string, n int, retries *atomic.Int64) error {
	for done := 0; done < n; {
		if v, err := c.DoStrings("WATCH", key); err != nil || v.Kind != difftest.SimpleString {
			return fmt.Errorf("WATCH: %s %v", v, err)
		}
		v, err := c.DoStrings("GET", key)
		if err != nil {
			return err
		}
		cur := 0
		if v.Kind == difftest.Bulk {
			if cur, err = strconv.Atoi(string(v.Str)); err != nil {
				return err
			}
		}
		for _, args := range [][]string{{"MULTI"}, {"SET", key, strconv.Itoa(cur + 1)}} {
			if _, err := c.DoStrings(args...); err != nil {
				return err
			}
		}
		v, err = c.DoStrings("EXEC")
		switch {
		case err != nil:
			return err
		case v.Kind == difftest.NullArray:
			retries.Add(1)
		case v.Kind == difftest.Array && len(v.Elems) == 1:
			done++
		default:
			return fmt.Errorf("EXEC: %s", v)
		}
	}
	return nil
}

// TestExecAtomicToObservers has a writer set two keys of one slot in each
// transaction while observers read both with MGET: no observer may see
// one key updated without the other. Variants cover the one-shard lock and
// the exclusive keyspace lock (a keyless command in the transaction, or a
// watched key in another slot).
func TestExecAtomicToObservers(t *testing.T) {
	variants := []struct {
		name  string
		extra [][]string // queued between the two SETs
		watch string
	}{
		{"one slot", nil, ""},
		{"keyless command", [][]string{{"DBSIZE"}}, ""},
		{"watch in another slot", nil, "{other}w"},
		{"node command", [][]string{{"PING"}}, "{t}w"},
	}
	for _, vt := range variants {
		t.Run(vt.name, func(t *testing.T) {
			addr := startTxNode(t, nil)
			w := dialTx(t, addr, 2)
			const rounds = 300
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var bad atomic.Value
			for i := 0; i < 2; i++ {
				o := dialTx(t, addr, 2)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						v, err := o.DoStrings("MGET", "{t}a", "{t}b")
						if err != nil {
							bad.Store(err.Error())
							return
						}
						if len(v.Elems) != 2 || !difftest.Equal(v.Elems[0], v.Elems[1]) {
							bad.Store(v.String())
							return
						}
					}
				}()
			}
			for i := 0; i < rounds; i++ {
				val := strconv.Itoa(i)
				if vt.watch != "" {
					txDo(t, w, "WATCH", vt.watch)
				}
				txDo(t, w, "MULTI")
				txDo(t, w, "SET", "{t}a", val)
				for _, e := range vt.extra {
					txDo(t, w, e...)
				}
				txDo(t, w, "SET", "{t}b", val)
				if v := txDo(t, w, "EXEC"); v.Kind != difftest.Array || len(v.Elems) != 2+len(vt.extra) {
					t.Fatalf("EXEC: %s", v)
				}
			}
			close(stop)
			wg.Wait()
			if b := bad.Load(); b != nil {
				t.Fatalf("observer saw a half-applied transaction: %v", b)
			}
		})
	}
}

// TestTransactionStateEndsWithConnection checks that a closed connection's
// WATCHes are dropped: a write afterwards must not find a stale watcher
// (the test would race or panic under -race if it did).
func TestTransactionStateEndsWithConnection(t *testing.T) {
	addr := startTxNode(t, nil)
	for i := 0; i < 20; i++ {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		txDo(t, c, "WATCH", "k", "{k}x")
		txDo(t, c, "MULTI")
		txDo(t, c, "SET", "k", "v")
		c.Close()
	}
	c := dialTx(t, addr, 2)
	txDo(t, c, "WATCH", "k")
	txDo(t, c, "MULTI")
	txDo(t, c, "SET", "k", "1")
	if got := txDo(t, c, "EXEC"); !difftest.Equal(got, difftest.ArrayOf(difftest.Simple("OK"))) {
		t.Fatalf("EXEC: %s", got)
	}
}

// TestExecNodeCommandReadingKeyspace runs INFO keyspace inside EXEC, with
// the transaction's keys and watched key in one slot: INFO must reuse the
// transaction's locks (client.txCtx) rather than lock the keyspace again,
// and must see the transaction's own write.
func TestExecNodeCommandReadingKeyspace(t *testing.T) {
	addr := startTxNode(t, nil)
	c := dialTx(t, addr, 2)
	txDo(t, c, "WATCH", "{s}w")
	txDo(t, c, "MULTI")
	txDo(t, c, "SET", "{s}a", "1")
	txDo(t, c, "INFO", "keyspace")
	v := txDo(t, c, "EXEC")
	if v.Kind != difftest.Array || len(v.Elems) != 2 || v.Elems[1].Kind != difftest.Bulk {
		t.Fatalf("EXEC: %s", v)
	}
	if info := string(v.Elems[1].Str); !strings.Contains(info, "db0:keys=1,") {
		t.Fatalf("INFO keyspace inside EXEC: %q", info)
	}
}

// TestTransactionTTLReadsLiveClock: inside EXEC, expiry is judged at
// EXEC's start and relative expire times count from it, but TTL and PTTL
// subtract the clock at their own turn, as in Redis 7.0 (a slow
// transaction sees its keys' TTLs go down). The node's clock here moves
// 50 ms at every reading.
func TestTransactionTTLReadsLiveClock(t *testing.T) {
	var clock txClock
	clock.ms.Store(1_700_000_000_000)
	addr := startTxNode(t, func() time.Time { clock.Advance(50 * time.Millisecond); return clock.Now() })
	c := dialTx(t, addr, 2)
	txDo(t, c, "MULTI")
	txDo(t, c, "SET", "k", "v", "PX", "10000")
	txDo(t, c, "PTTL", "k")
	txDo(t, c, "PEXPIRE", "{k}short", "10")
	txDo(t, c, "SET", "{k}short", "v", "PX", "60")
	txDo(t, c, "PTTL", "{k}short")
	txDo(t, c, "GET", "{k}short")
	v := txDo(t, c, "EXEC")
	if len(v.Elems) != 6 {
		t.Fatalf("EXEC = %s", v)
	}
	if p := v.Elems[1].Int; p >= 10000 || p < 9000 {
		t.Errorf("PTTL inside EXEC = %d; want below 10000 (the clock moved since EXEC began)", p)
	}
	// The clock passed the key's expire time (EXEC's start + 60 ms), but
	// expiry is judged at EXEC's start: PTTL floors at 0 and GET finds it.
	if p := v.Elems[4].Int; p != 0 {
		t.Errorf("PTTL of a key past its expire time inside EXEC = %d, want 0", p)
	}
	if g := v.Elems[5].Text(); g != "v" {
		t.Errorf("GET of a key past its expire time inside EXEC = %s, want v", v.Elems[5])
	}
}

// TestExecWithKeyspaceWalks: MEMORY STATS and INFO keyspace walk every
// slot; queued after a keyed command (whose slot EXEC holds), they run
// under the exclusive lock instead of waiting for that slot forever, and
// the node goes on serving.
func TestExecWithKeyspaceWalks(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c := dialDiff(t, addr)
	c.NetConn().SetDeadline(time.Now().Add(20 * time.Second)) // a stuck EXEC fails the test
	expect := replyChecker(t, c)
	for _, walk := range [][]string{{"MEMORY", "STATS"}, {"INFO", "keyspace"}} {
		expect(`simple:"OK"`, "MULTI")
		expect(`simple:"QUEUED"`, "SET", "k", "1")
		expect(`simple:"QUEUED"`, walk...)
		v, err := c.DoStrings("EXEC")
		if err != nil {
			t.Fatalf("EXEC with %q: %v", walk, err)
		}
		if len(v.Elems) != 2 || v.Elems[0].String() != `simple:"OK"` {
			t.Fatalf("EXEC with %q: %v", walk, v)
		}
		expect(`bulk:"1"`, "GET", "k")
		expect(`int:1`, "DBSIZE")
	}
}
