package proxy_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// The proxy's cross-slot behaviour compared with real Redis: a real
// 3-master Redis Cluster for single commands (each sent to the master that
// owns its first key's slot, so that the node judges it instead of
// answering MOVED), the shared one-node cluster that owns every slot for
// MULTI/EXEC/WATCH (a transaction on a Redis Cluster node can only ever
// involve that node's slots), and a plain redis-server for what the split
// mode must answer.

// shared3 is one 3-master Redis Cluster for the package's tests: creating
// one takes about two seconds.
var shared3 struct {
	once sync.Once
	c    *difftest.RedisCluster
	err  error
}

func sharedCluster(t *testing.T) *difftest.RedisCluster {
	t.Helper()
	for _, bin := range []string{difftest.RedisBinary, difftest.RedisCLIBinary} {
		if !onPath(bin) {
			skipOrFail(t, bin+" not on PATH: the cross-slot differential tests need Redis 7.0 (apt-get install redis-server redis-tools)")
		}
	}
	shared3.once.Do(func() { shared3.c, shared3.err = difftest.LaunchRedisCluster(3) })
	if shared3.err != nil {
		t.Fatal(shared3.err)
	}
	shared3.c.FlushAll(t)
	return shared3.c
}

func stopSharedCluster() {
	if shared3.c != nil {
		shared3.c.Stop()
	}
}

// clusterSide sends each command to the master that owns its first key's
// slot (keyless ones to the first master), on connections opened once per
// master and protocol.
type clusterSide struct {
	t     *testing.T
	c     *difftest.RedisCluster
	proto int
	conns map[string]*difftest.Conn
}

func (cs *clusterSide) do(args []string) (difftest.Value, error) {
	node := &cs.c.Nodes[0]
	if cmd := slots.Lookup([]byte(args[0])); cmd != nil {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
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

// crossSlotCases are command sequences run on a fresh keyspace. Keys
// without a hash tag ("a", "b", "c") are in three different slots; those
// with one ({t}...) share a slot. Commands of types the nodes do not
// implement yet (lists, sets, sorted sets, streams) appear only across
// slots, where the CROSSSLOT check comes before the command runs; until
// the command table has them they are skipped.
var crossSlotCases = []struct {
	name string
	cmds [][]string
}{
	{"mset mget", [][]string{
		{"MSET", "a", "1", "b", "2"},
		{"MSET", "{t}a", "1", "{t}b", "2"},
		{"MGET", "{t}a", "{t}b", "{t}c"},
		{"MGET", "a", "b"},
		{"MGET", "{t}a", "a"},
		{"MGET", "a", "a"},
		{"MSET", "a", "1", "b"},
		{"MSET", "{t}a", "1", "{t}b"},
	}},
	{"msetnx", [][]string{
		{"MSETNX", "a", "1", "b", "2"},
		{"MSETNX", "{t}a", "1", "{t}b", "2"},
		{"MSETNX", "{t}a", "1", "{t}c", "2"},
		{"MGET", "{t}a", "{t}b", "{t}c"},
	}},
	{"del unlink exists touch", [][]string{
		{"MSET", "{t}a", "1", "{t}b", "2"},
		{"SET", "a", "1"},
		{"EXISTS", "a", "b"},
		{"EXISTS", "{t}a", "{t}a", "{t}b", "{t}c"},
		{"TOUCH", "a", "b", "c"},
		{"TOUCH", "{t}a", "{t}c"},
		{"DEL", "a", "b"},
		{"UNLINK", "a", "{t}a"},
		{"DEL", "{t}a", "{t}c"},
		{"UNLINK", "{t}b", "{t}b"},
		{"EXISTS", "a"},
	}},
	{"bitop", [][]string{
		{"SET", "{t}a", "abc"},
		{"SET", "{t}b", "xyz"},
		{"BITOP", "AND", "dest", "a", "b"},
		{"BITOP", "OR", "{t}d", "{t}a", "b"},
		{"BITOP", "XOR", "{t}d", "{t}a", "{t}b"},
		{"BITOP", "NOT", "a", "b"},
		{"GET", "{t}d"},
	}},
	{"hyperloglog", [][]string{
		{"PFADD", "{h}1", "x", "y"},
		{"PFADD", "{h}2", "y", "z"},
		{"PFADD", "h1", "x"},
		{"PFCOUNT", "{h}1", "{h}2"},
		{"PFCOUNT", "h1", "{h}1"},
		{"PFMERGE", "{h}3", "{h}1", "{h}2"},
		{"PFCOUNT", "{h}3"},
		{"PFMERGE", "d", "h1", "{h}1"},
		{"PFMERGE", "d", "h1"},
	}},
	{"rename copy", [][]string{
		{"SET", "a", "1"},
		{"SET", "{t}a", "1"},
		{"RENAME", "a", "b"},
		{"RENAMENX", "a", "b"},
		{"COPY", "a", "b"},
		{"COPY", "a", "b", "REPLACE"},
		{"RENAME", "{t}a", "{t}z"},
		{"COPY", "{t}z", "{t}w"},
		{"RENAMENX", "{t}w", "{t}z"},
		{"MGET", "{t}a", "{t}z", "{t}w"},
	}},
	{"other types across slots", [][]string{
		{"LMOVE", "a", "b", "LEFT", "RIGHT"},
		{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"},
		{"RPOPLPUSH", "a", "b"},
		{"BRPOPLPUSH", "a", "b", "0"},
		{"SMOVE", "a", "b", "m"},
		{"SUNIONSTORE", "d", "a", "b"},
		{"SINTERSTORE", "d", "a", "b"},
		{"SDIFFSTORE", "d", "a", "b"},
		{"SINTER", "a", "b"},
		{"ZUNIONSTORE", "d", "2", "a", "b"},
		{"ZINTERCARD", "2", "a", "b"},
		{"XREAD", "STREAMS", "a", "b", "0", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"},
		{"LCS", "a", "b"},
		{"BLPOP", "a", "b", "0"},
		{"SORT", "a", "STORE", "b"},
		{"WATCH", "a", "b"},
	}},
}

// TestDiffCrossSlotCluster runs crossSlotCases through the strict proxy
// over three nodes and through a real 3-master Redis Cluster, in RESP2 and
// RESP3, and requires identical replies.
func TestDiffCrossSlotCluster(t *testing.T) {
	rc := sharedCluster(t)
	px := proxytest.Start(t, 3, proxy.Options{})
	for _, proto := range []int{2, 3} {
		for _, tc := range crossSlotCases {
			t.Run(fmt.Sprintf("resp%d/%s", proto, tc.name), func(t *testing.T) {
				rc.FlushAll(t)
				pc := dial(t, px.Addr, proto)
				do(t, pc, "FLUSHALL")
				cs := &clusterSide{t: t, c: rc, proto: proto, conns: map[string]*difftest.Conn{}}
				for _, args := range tc.cmds {
					if slots.Lookup([]byte(args[0])) == nil && slots.LookupUnserved([]byte(args[0])) == nil {
						continue // not a Redis 7.0 command with keys
					}
					want, err := cs.do(args)
					if err != nil {
						t.Fatalf("cluster: %s: %v", difftest.FormatCommand(args), err)
					}
					got := do(t, pc, args...)
					if !difftest.Equal(want, got) {
						t.Errorf("%s", difftest.Mismatch(args, proto, want, got))
					}
				}
			})
		}
	}
}

// txCase is a transaction scenario on two clients; conn 1 plays another
// client that changes watched keys.
type txStep struct {
	conn int
	args []string
}

func tx(args ...string) txStep    { return txStep{0, args} }
func other(args ...string) txStep { return txStep{1, args} }

// TestDiffTransactionsCluster runs MULTI/EXEC/WATCH scenarios through the
// proxy over three nodes and through a real Redis Cluster node that owns
// every slot, in RESP2 and RESP3, and requires identical replies:
// a queued cross-slot command is refused and EXEC answers EXECABORT;
// commands fine one by one but in different slots make EXEC answer
// CROSSSLOT and discard; CROSSSLOT wins over EXECABORT unless the refusal
// came first; a broken WATCH answers nil.
func TestDiffTransactionsCluster(t *testing.T) {
	// Keys on different proxy nodes (and slots): x0 on node 0, x1 on node 1.
	topo, err := proxy.NewStaticTopology([]string{"n0:1", "n1:1", "n2:1"})
	if err != nil {
		t.Fatal(err)
	}
	x0, x1 := keyOnNode(t, topo, 0, "x0-"), keyOnNode(t, topo, 1, "x1-")
	cases := []struct {
		name  string
		steps []txStep
	}{
		{"one slot", []txStep{tx("MULTI"), tx("SET", "{t}a", "1"), tx("INCR", "{t}a"), tx("GET", "{t}a"), tx("PING"), tx("ECHO", "e"), tx("EXEC")}},
		{"empty", []txStep{tx("MULTI"), tx("EXEC")}},
		{"keyless only", []txStep{tx("MULTI"), tx("PING"), tx("CLUSTER", "KEYSLOT", "{t}a"), tx("SELECT", "0"), tx("EXEC")}},
		{"queued cross-slot command", []txStep{tx("MULTI"), tx("MSET", "a", "1", "b", "2"), tx("SET", "{t}a", "1"), tx("EXEC"), tx("EXEC"), tx("GET", "{t}a")}},
		{"commands in different slots", []txStep{tx("MULTI"), tx("SET", "a", "1"), tx("SET", "b", "1"), tx("EXEC"), tx("EXEC"), tx("EXISTS", "a")}},
		{"cross then refused", []txStep{tx("MULTI"), tx("SET", "a", "1"), tx("SET", "b", "1"), tx("GET"), tx("EXEC")}},
		{"refused then cross", []txStep{tx("MULTI"), tx("SET", "a", "1"), tx("GET"), tx("SET", "b", "1"), tx("EXEC")}},
		{"unknown then cross", []txStep{tx("MULTI"), tx("NOSUCH"), tx("SET", "a", "1"), tx("SET", "b", "1"), tx("EXEC")}},
		{"discard", []txStep{tx("MULTI"), tx("SET", "{t}a", "1"), tx("DISCARD"), tx("EXEC"), tx("GET", "{t}a")}},
		{"nested multi", []txStep{tx("MULTI"), tx("MULTI"), tx("SET", "{t}a", "1"), tx("EXEC")}},
		{"watch inside multi", []txStep{tx("MULTI"), tx("SET", "{t}a", "1"), tx("WATCH", "{t}a"), tx("EXEC")}},
		{"watch across slots", []txStep{tx("WATCH", "a", "b"), tx("MULTI"), tx("SET", "a", "1"), tx("EXEC")}},
		{"watch broken", []txStep{tx("WATCH", "{t}a"), other("SET", "{t}a", "x"), tx("MULTI"), tx("SET", "{t}a", "mine"), tx("EXEC"), tx("GET", "{t}a")}},
		{"watch kept", []txStep{tx("SET", "{t}a", "0"), tx("WATCH", "{t}a"), tx("MULTI"), tx("INCR", "{t}a"), tx("EXEC"), tx("GET", "{t}a")}},
		{"watch by self", []txStep{tx("WATCH", "{t}a"), tx("SET", "{t}a", "1"), tx("MULTI"), tx("GET", "{t}a"), tx("EXEC")}},
		{"unwatch", []txStep{tx("WATCH", "{t}a"), tx("UNWATCH"), other("SET", "{t}a", "x"), tx("MULTI"), tx("GET", "{t}a"), tx("EXEC")}},
		{"watch other node kept", []txStep{tx("WATCH", x0), tx("MULTI"), tx("SET", x1, "v"), tx("EXEC"), tx("GET", x1)}},
		{"watch other node broken", []txStep{tx("WATCH", x0), other("SET", x0, "changed"), tx("MULTI"), tx("SET", x1, "v"), tx("EXEC"), tx("EXISTS", x1)}},
		{"watch broken then cross", []txStep{tx("WATCH", "{t}a"), other("SET", "{t}a", "x"), tx("MULTI"), tx("SET", "a", "1"), tx("SET", "b", "1"), tx("EXEC")}},
		{"watch broken then cross then refused", []txStep{tx("WATCH", "{t}a"), other("SET", "{t}a", "x"), tx("MULTI"), tx("SET", "a", "1"), tx("SET", "b", "1"), tx("GET"), tx("EXEC")}},
		{"cross then watch broken", []txStep{tx("WATCH", "{t}a"), tx("MULTI"), tx("SET", "a", "1"), tx("SET", "b", "1"), other("SET", "{t}a", "x"), tx("EXEC")}},
		{"watch broken then hello 3", []txStep{tx("WATCH", "{t}a"), tx("HELLO", "3"), other("SET", "{t}a", "x"), tx("MULTI"), tx("SET", "{t}a", "1"), tx("EXEC")}},
		{"exec with arguments", []txStep{tx("EXEC", "x"), tx("MULTI"), tx("SET", "{t}a", "1"), tx("EXEC", "x"), tx("EXEC"), tx("GET", "{t}a")}},
		{"exec with arguments drops watch", []txStep{tx("WATCH", "{t}a"), tx("MULTI"), tx("EXEC", "x"), other("SET", "{t}a", "x"), tx("MULTI"), tx("SET", "{t}a", "1"), tx("EXEC")}},
		{"exec after reset", []txStep{tx("MULTI"), tx("SET", "{t}a", "1"), tx("RESET"), tx("EXEC")}},
	}
	for _, proto := range []int{2, 3} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("resp%d/%s", proto, tc.name), func(t *testing.T) {
				p := difftest.StartTarget(t, proxyTarget(proxy.Options{}))
				conns := [2]*difftest.ConnPair{p.NewConnProto(t, proto), p.NewConnProto(t, proto)}
				for _, st := range tc.steps {
					c := conns[st.conn]
					a, b := c.Both(t, st.args...)
					if strings.EqualFold(st.args[0], "HELLO") {
						// The connection id differs by nature.
						continue
					}
					c.Compare(t, st.args, a, b)
				}
			})
		}
	}
}

// TestDiffSplitPlainRedis: in --cross-slot split mode, MGET, MSET, DEL,
// UNLINK, EXISTS and TOUCH over keys in many slots answer exactly what one
// plain (non-cluster) redis-server answers, in RESP2 and RESP3.
func TestDiffSplitPlainRedis(t *testing.T) {
	redisAddr := startPlainOracle(t, "split-mode")
	px := proxytest.Start(t, 3, proxy.Options{CrossSlot: proxy.CrossSlotSplit})

	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprint("key:", i)
	}
	with := func(cmd string, ks ...string) []string { return append([]string{cmd}, ks...) }
	pairs := func(ks []string) []string {
		var out []string
		for i, k := range ks {
			out = append(out, k, fmt.Sprint("v", i))
		}
		return out
	}
	dup := append(append([]string{}, keys[:10]...), keys[3], keys[3], "missing", keys[0])
	cmds := [][]string{
		with("MGET", keys...),
		with("MSET", pairs(keys[:20])...),
		with("MGET", keys...),
		with("MGET", dup...),
		with("EXISTS", dup...),
		with("TOUCH", dup...),
		with("MSET", pairs(append([]string{keys[5], keys[30]}, keys[5], keys[31]))...), // a key set twice: the last value wins
		with("MGET", keys[5], keys[30], keys[31]),
		with("DEL", keys[:5]...),
		with("UNLINK", dup...),
		with("MGET", keys...),
		with("EXISTS", keys...),
		with("DEL", keys...),
		with("MSET", "a", "1", "b"),
		with("MGET", "a", "b", "{t}1", "{t}2"),
		with("MSET", "{t}1", "x", "a", "y", "{t}2", "z"),
		with("MGET", "{t}1", "a", "{t}2", "b"),
		with("DEL", "{t}1", "{t}2", "a"),
	}
	for _, proto := range []int{2, 3} {
		rconn := dial(t, redisAddr, proto)
		pconn := dial(t, px.Addr, proto)
		diffSeq(t, rconn, pconn, proto, append([][]string{{"FLUSHALL"}}, cmds...))
		// What split mode still refuses: what cannot be split safely.
		for _, args := range [][]string{
			{"MSETNX", "a", "1", "b", "2"},
			{"RENAME", "a", "b"},
			{"BITOP", "OR", "d", "a", "b"},
			{"PFCOUNT", "a", "b"},
			{"LMOVE", "a", "b", "LEFT", "RIGHT"},
			// Commands shardgate does not serve are refused as a
			// Redis Cluster node refuses them.
			{"SMOVE", "a", "b", "m"},
			{"SUNIONSTORE", "d", "a", "b"},
			{"ZUNIONSTORE", "d", "2", "a", "b"},
		} {
			if v := do(t, pconn, args...); v.Text() != "CROSSSLOT Keys in request don't hash to the same slot" {
				t.Errorf("split mode %s: %s, want CROSSSLOT", difftest.FormatCommand(args), v)
			}
		}
	}
}
