package proxy_test

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

func isNull(v difftest.Value) bool {
	return v.Kind == difftest.NullBulk || v.Kind == difftest.NullArray || v.Kind == difftest.Null
}

func dial(t *testing.T, addr string, proto int) *difftest.Conn {
	t.Helper()
	c, err := difftest.DialProto(addr, proto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t *testing.T, c *difftest.Conn, args ...string) difftest.Value {
	t.Helper()
	v, err := c.DoStrings(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// keyOnNode returns a key whose slot node n of a 3-node static topology
// owns.
func keyOnNode(t *testing.T, topo proxy.Topology, n int, prefix string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if topo.Owner(slots.SlotString(k)) == n {
			return k
		}
	}
}

// TestRoutingSpreadsKeys checks that keys land on the node owning their
// slot and that fan-out commands see all of them.
func TestRoutingSpreadsKeys(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	const n = 300
	for i := range n {
		if v := do(t, c, "SET", fmt.Sprint("key:", i), fmt.Sprint(i)); v.Text() != "OK" {
			t.Fatalf("SET: %v", v)
		}
	}
	for i, addr := range cl.NodeAddrs {
		got := do(t, dial(t, addr, 2), "DBSIZE").Int
		if got == 0 || got == n {
			t.Errorf("node %d holds %d of %d keys; want a share", i, got, n)
		}
	}
	if v := do(t, c, "DBSIZE"); v.Int != n {
		t.Errorf("DBSIZE = %v, want %d", v, n)
	}
	for i := range n {
		if v := do(t, c, "GET", fmt.Sprint("key:", i)); v.Text() != fmt.Sprint(i) {
			t.Fatalf("GET key:%d = %v", i, v)
		}
	}
	if v := do(t, c, "KEYS", "key:*"); len(v.Elems) != n {
		t.Errorf("KEYS returned %d keys, want %d", len(v.Elems), n)
	}
	// SCAN across nodes returns every key exactly once, also from the
	// other spellings of cursor 0 that Redis's strtoul accepts (they
	// scanned one node only).
	checkFullScan(t, c, n, "COUNT", "7")
	for _, zero := range []string{"", "+0", "-0"} {
		checkFullScanFrom(t, c, zero, n, "COUNT", "7")
	}
	if v := do(t, c, "FLUSHALL"); v.Text() != "OK" {
		t.Fatalf("FLUSHALL: %v", v)
	}
	if v := do(t, c, "DBSIZE"); v.Int != 0 {
		t.Errorf("DBSIZE after FLUSHALL = %v", v)
	}
}

func TestCrossSlotStrictAndSplit(t *testing.T) {
	strict := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, strict.Addr, 2)
	if v := do(t, c, "MSET", "a", "1", "b", "2"); v.Text() != "CROSSSLOT Keys in request don't hash to the same slot" {
		t.Errorf("strict MSET a b: %v", v)
	}
	if v := do(t, c, "MSET", "{u}a", "1", "{u}b", "2"); v.Text() != "OK" {
		t.Errorf("strict MSET with a hash tag: %v", v)
	}

	split := proxytest.Start(t, 3, proxy.Options{CrossSlot: proxy.CrossSlotSplit})
	s := dial(t, split.Addr, 2)
	var args []string
	for i := range 20 {
		args = append(args, fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	if v := do(t, s, append([]string{"MSET"}, args...)...); v.Text() != "OK" {
		t.Fatalf("split MSET: %v", v)
	}
	get := []string{"MGET"}
	for i := range 20 {
		get = append(get, fmt.Sprint("k", i), "missing")
	}
	v := do(t, s, get...)
	if len(v.Elems) != 40 {
		t.Fatalf("split MGET: %v", v)
	}
	for i := range 20 {
		if v.Elems[2*i].Text() != fmt.Sprint("v", i) || !isNull(v.Elems[2*i+1]) {
			t.Fatalf("split MGET element %d: %v %v", i, v.Elems[2*i], v.Elems[2*i+1])
		}
	}
	if v := do(t, s, "EXISTS", "k1", "k1", "k2", "nope"); v.Int != 3 {
		t.Errorf("split EXISTS = %v, want 3", v)
	}
	if v := do(t, s, "DEL", "k1", "k2", "k3", "nope"); v.Int != 3 {
		t.Errorf("split DEL = %v, want 3", v)
	}
	// Not splittable: still CROSSSLOT.
	if v := do(t, s, "MSETNX", "a", "1", "b", "2"); v.Text() != "CROSSSLOT Keys in request don't hash to the same slot" {
		t.Errorf("split MSETNX: %v", v)
	}
}

// TestPipelineOrder sends one pipeline mixing nodes and proxy-answered
// commands and checks every reply comes back in order.
func TestPipelineOrder(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	const n = 5000
	for i := range n {
		var err error
		switch i % 3 {
		case 0:
			err = c.Send([]byte("SET"), []byte(fmt.Sprint("p", i)), []byte(fmt.Sprint(i)))
		case 1:
			err = c.Send([]byte("GET"), []byte(fmt.Sprint("p", i-1)))
		case 2:
			err = c.Send([]byte("ECHO"), []byte(fmt.Sprint(i)))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		want := "OK"
		switch i % 3 {
		case 1:
			want = fmt.Sprint(i - 1)
		case 2:
			want = fmt.Sprint(i)
		}
		if v.Text() != want {
			t.Fatalf("reply %d = %v, want %s", i, v, want)
		}
	}
}

func TestTransactions(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	do(t, c, "MULTI")
	if v := do(t, c, "SET", "{t}a", "1"); v.Text() != "QUEUED" {
		t.Fatalf("queued: %v", v)
	}
	do(t, c, "INCR", "{t}b")
	v := do(t, c, "EXEC")
	if len(v.Elems) != 2 || v.Elems[0].Text() != "OK" || v.Elems[1].Int != 1 {
		t.Fatalf("EXEC: %v", v)
	}
	// Queued commands in different slots: EXEC answers CROSSSLOT and the
	// transaction is gone.
	do(t, c, "MULTI")
	do(t, c, "SET", "a", "1")
	do(t, c, "SET", "b", "1")
	if v := do(t, c, "EXEC"); v.Text() != "CROSSSLOT Keys in request don't hash to the same slot" {
		t.Errorf("cross-slot EXEC: %v", v)
	}
	if v := do(t, c, "EXEC"); v.Text() != "ERR EXEC without MULTI" {
		t.Errorf("second EXEC: %v", v)
	}
	// A queued cross-slot command: EXECABORT.
	do(t, c, "MULTI")
	if v := do(t, c, "MSET", "a", "1", "b", "2"); v.Text() != "CROSSSLOT Keys in request don't hash to the same slot" {
		t.Errorf("queued MSET: %v", v)
	}
	if v := do(t, c, "EXEC"); v.Text() != "EXECABORT Transaction discarded because of previous errors." {
		t.Errorf("EXEC after a refused command: %v", v)
	}
	// WATCH: a change by another client makes EXEC answer nil.
	other := dial(t, cl.Addr, 2)
	do(t, c, "WATCH", "{w}k")
	do(t, other, "SET", "{w}k", "x")
	do(t, c, "MULTI")
	do(t, c, "SET", "{w}k", "mine")
	if v := do(t, c, "EXEC"); !isNull(v) {
		t.Errorf("EXEC after a watched change: %v, want nil", v)
	}
	if v := do(t, c, "GET", "{w}k"); v.Text() != "x" {
		t.Errorf("GET after aborted EXEC: %v", v)
	}
	// Unchanged WATCH on another node than the transaction's keys.
	topo := cl.Proxy.Topology()
	k0, k1 := keyOnNode(t, topo, 0, "w0-"), keyOnNode(t, topo, 1, "w1-")
	do(t, c, "WATCH", k0)
	do(t, c, "MULTI")
	do(t, c, "SET", k1, "v")
	if v := do(t, c, "EXEC"); len(v.Elems) != 1 || v.Elems[0].Text() != "OK" {
		t.Errorf("EXEC with a WATCH on another node: %v", v)
	}
	do(t, c, "WATCH", k0)
	do(t, other, "SET", k0, "changed")
	do(t, c, "MULTI")
	do(t, c, "SET", k1, "v2")
	if v := do(t, c, "EXEC"); !isNull(v) {
		t.Errorf("EXEC with a broken WATCH on another node: %v", v)
	}
	if v := do(t, c, "GET", k1); v.Text() != "v" {
		t.Errorf("GET after aborted EXEC: %v", v)
	}
}

func TestDeadNodeFailsFastAndRecovers(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	topo := cl.Proxy.Topology()
	k0, k1 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b")
	do(t, c, "SET", k0, "1")
	cl.StopNode[1]()
	if v := do(t, c, "GET", k1); !v.IsError() {
		t.Errorf("GET on a dead node's slot: %v, want an error", v)
	}
	if v := do(t, c, "GET", k1); v.Text() != "CLUSTERDOWN Hash slot not served" {
		t.Errorf("GET on a dead node's slot: %v", v)
	}
	if v := do(t, c, "GET", k0); v.Text() != "1" {
		t.Errorf("GET on a live node's slot: %v", v)
	}
}

// TestProxyCommandsInMulti: the proxy's own commands (CLUSTER views,
// CLIENT SETNAME/GETNAME/ID/INFO, READONLY ...) queued in a transaction
// run when EXEC does, their replies in their places among the node's, as
// one Redis would give them; after a WATCH failure nothing runs. The
// fan-outs (DBSIZE ...) are still refused: they would see one node.
func TestProxyCommandsInMulti(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	for _, proto := range []int{2, 3} {
		c := dial(t, cl.Addr, proto)
		id := do(t, c, "CLIENT", "ID").Int
		myid := do(t, c, "CLUSTER", "MYID").Text()
		for _, step := range [][]string{
			{"MULTI"}, {"SET", "{k}a", "1"}, {"CLIENT", "SETNAME", "tx"}, {"GET", "{k}a"}, {"CLUSTER", "MYID"},
			{"CLIENT", "GETNAME"}, {"READONLY"}, {"CLIENT", "ID"}, {"INCR", "{k}a"},
		} {
			want := "QUEUED"
			if step[0] == "MULTI" {
				want = "OK"
			}
			if v := do(t, c, step...); v.Text() != want {
				t.Fatalf("RESP%d %v: %v", proto, step, v)
			}
		}
		v := do(t, c, "EXEC")
		want := []string{"OK", "OK", "1", myid, "tx", "OK", strconv.FormatInt(id, 10), "2"}
		if len(v.Elems) != len(want) {
			t.Fatalf("RESP%d EXEC: %v, want %q", proto, v, want)
		}
		for i, w := range want {
			if got := v.Elems[i]; got.Text() != w && strconv.FormatInt(got.Int, 10) != w {
				t.Errorf("RESP%d EXEC element %d: %v, want %s", proto, i, got, w)
			}
		}
		// Pipelined in one write, the commands after EXEC see what the
		// transaction's local commands did.
		steps := [][]string{{"MULTI"}, {"CLIENT", "SETNAME", "p1"}, {"SET", "{k}p", "1"}, {"EXEC"}, {"CLIENT", "GETNAME"}}
		if err := c.WriteRaw(pipeline(len(steps), func(i int) []string { return steps[i] })); err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			v, err := c.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if i == len(steps)-1 && v.Text() != "p1" {
				t.Errorf("RESP%d CLIENT GETNAME pipelined after EXEC: %v, want p1", proto, v)
			}
		}
		// With replies off, the local commands still run.
		steps = [][]string{{"CLIENT", "REPLY", "OFF"}, {"MULTI"}, {"CLIENT", "SETNAME", "off"}, {"EXEC"}, {"CLIENT", "REPLY", "ON"}, {"CLIENT", "GETNAME"}}
		if err := c.WriteRaw(pipeline(len(steps), func(i int) []string { return steps[i] })); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"OK", "off"} {
			if v, err := c.Receive(); err != nil || v.Text() != want {
				t.Errorf("RESP%d after a transaction with replies off: %v %v, want %s", proto, v, err, want)
			}
		}
		do(t, c, "CLIENT", "SETNAME", "tx")
		// Only the proxy's own commands.
		do(t, c, "MULTI")
		do(t, c, "CLIENT", "GETNAME")
		if v := do(t, c, "EXEC"); len(v.Elems) != 1 || v.Elems[0].Text() != "tx" {
			t.Errorf("RESP%d EXEC of CLIENT GETNAME alone: %v", proto, v)
		}
		// CLIENT INFO run by EXEC shows the transaction, as Redis's does.
		do(t, c, "MULTI")
		do(t, c, "SET", "{k}i", "1")
		do(t, c, "CLIENT", "INFO")
		v = do(t, c, "EXEC")
		if len(v.Elems) != 2 {
			t.Fatalf("RESP%d EXEC with CLIENT INFO: %v", proto, v)
		}
		info := v.Elems[1].Text()
		if f := clientLineField(info, "flags"); !strings.Contains(f, "x") || clientLineField(info, "multi") != "2" || clientLineField(info, "cmd") != "exec" {
			t.Errorf("RESP%d CLIENT INFO inside EXEC, want flags with x, multi=2, cmd=exec: %s", proto, info)
		}
		info = do(t, c, "CLIENT", "INFO").Text()
		if f := clientLineField(info, "flags"); strings.Contains(f, "x") || clientLineField(info, "multi") != "-1" {
			t.Errorf("RESP%d CLIENT INFO after EXEC, want no x flag, multi=-1: %s", proto, info)
		}
		// A WATCH that fails: EXEC is nil and the name stays.
		other := dial(t, cl.Addr, 2)
		do(t, c, "WATCH", "{k}a")
		do(t, other, "SET", "{k}a", "changed")
		do(t, c, "MULTI")
		do(t, c, "CLIENT", "SETNAME", "lost")
		do(t, c, "GET", "{k}a")
		if v := do(t, c, "EXEC"); !isNull(v) {
			t.Errorf("RESP%d EXEC after the watched key changed: %v, want nil", proto, v)
		}
		if v := do(t, c, "CLIENT", "GETNAME"); v.Text() != "tx" {
			t.Errorf("RESP%d the name after a failed EXEC: %v, want tx", proto, v)
		}
		// Fan-outs stay refused, and doom the transaction.
		do(t, c, "MULTI")
		if v := do(t, c, "DBSIZE"); v.Text() != fmt.Sprintf(resp.ErrProxyNotInMulti, "dbsize") {
			t.Errorf("RESP%d DBSIZE inside MULTI: %v", proto, v)
		}
		if v := do(t, c, "EXEC"); v.Text() != "EXECABORT Transaction discarded because of previous errors." {
			t.Errorf("RESP%d EXEC after DBSIZE: %v", proto, v)
		}
		// A wrong arity is reported as Redis reports it while queueing.
		do(t, c, "MULTI")
		if v := do(t, c, "CLUSTER", "INFO", "extra"); v.Text() != "ERR wrong number of arguments for 'cluster|info' command" {
			t.Errorf("RESP%d CLUSTER INFO extra inside MULTI: %v", proto, v)
		}
		do(t, c, "DISCARD")
	}
}

// clientLineField is the value of name= in a CLIENT LIST/INFO line.
func clientLineField(line, name string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestHTTPRequestDropped: like Redis, the proxy closes a connection that
// sends an HTTP request line, without any reply (not even for the
// commands before it in the same batch).
func TestHTTPRequestDropped(t *testing.T) {
	cl := proxytest.Start(t, 1, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	if err := c.WriteRaw([]byte("PING\r\nPOST / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	nc := c.NetConn()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(nc)
	if len(b) != 0 || err != nil {
		t.Errorf("got %q, %v; want the connection closed without a reply", b, err)
	}
}

// TestClientListShowsBlocked: a client waiting in BLPOP through the proxy
// has Redis's 'b' flag in the proxy's CLIENT LIST until it is served.
func TestClientListShowsBlocked(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	waiter := dial(t, cl.Addr, 2)
	id := do(t, waiter, "CLIENT", "ID").Int
	if err := waiter.Send([]byte("BLPOP"), []byte("q"), []byte("0")); err != nil {
		t.Fatal(err)
	}
	ctl := dial(t, cl.Addr, 2)
	line := func() string {
		v := do(t, ctl, "CLIENT", "LIST", "ID", fmt.Sprint(id))
		return v.Text()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(line(), " flags=b ") {
		if time.Now().After(deadline) {
			t.Fatalf("the blocked client is not flagged b: %q", line())
		}
		time.Sleep(5 * time.Millisecond)
	}
	do(t, ctl, "LPUSH", "q", "x")
	if v, err := waiter.Receive(); err != nil || len(v.Elems) != 2 || v.Elems[1].Text() != "x" {
		t.Fatalf("BLPOP: %v %v", v, err)
	}
	if l := line(); !strings.Contains(l, " flags=N ") {
		t.Errorf("served client still flagged: %q", l)
	}
}

// TestKeysInSlotRoutedBySlot: CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT
// go to the node that owns the slot they name.
func TestKeysInSlotRoutedBySlot(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	topo := cl.Proxy.Topology()
	for n := range 3 {
		k := keyOnNode(t, topo, n, "slotkey")
		do(t, c, "SET", k, "v")
		slot := fmt.Sprint(slots.SlotString(k))
		if v := do(t, c, "CLUSTER", "COUNTKEYSINSLOT", slot); v.Int != 1 {
			t.Errorf("COUNTKEYSINSLOT %s (node %d) = %v, want 1", slot, n, v)
		}
		if v := do(t, c, "CLUSTER", "GETKEYSINSLOT", slot, "10"); len(v.Elems) != 1 || v.Elems[0].Text() != k {
			t.Errorf("GETKEYSINSLOT %s = %v, want [%s]", slot, v, k)
		}
	}
	if v := do(t, c, "CLUSTER", "COUNTKEYSINSLOT", "16384"); v.Text() != "ERR Invalid slot" {
		t.Errorf("COUNTKEYSINSLOT 16384 = %v", v)
	}
}

// TestScanBoundedWork: a SCAN call through the proxy asks one node for
// one page when the scan is filtered, so a pattern that matches nothing
// gives empty pages with a cursor that goes on, as Redis's does, instead of
// one call that walks the whole keyspace; the whole iteration still finds
// every matching key once.
func TestScanBoundedWork(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	const n = 600
	for i := range n {
		do(t, c, "SET", fmt.Sprint("key:", i), "v")
	}
	v := do(t, c, "SCAN", "0", "MATCH", "nomatch", "COUNT", "5")
	if v.Elems[0].Text() == "0" || len(v.Elems[1].Elems) != 0 {
		t.Errorf("SCAN 0 MATCH nomatch COUNT 5 = %v; want an empty page and a cursor that goes on", v)
	}
	for _, opts := range [][]string{{"MATCH", "key:1*"}, {"TYPE", "string"}, {"match", "key:1*", "COUNT", "3"}} {
		want := 0
		for i := range n {
			if opts[0] != "TYPE" && !strings.HasPrefix(fmt.Sprint("key:", i), "key:1") {
				continue
			}
			want++
		}
		if calls := checkFullScan(t, c, want, opts...); calls < 3 {
			t.Errorf("SCAN %v took %d calls; a filtered scan should take one node page per call", opts, calls)
		}
	}
}

// TestScanCursorsFitFloat64: the proxy's SCAN cursors stay below 2^53,
// whatever the slot, so clients that keep a cursor in a float64
// (JavaScript's node-redis) do not lose its low bits and repeat keys; a
// cursor past the last slot ends the scan.
func TestScanCursorsFitFloat64(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	const n = 400
	for i := range n {
		do(t, c, "SET", fmt.Sprint("{crowd}:", i), "v") // one crowded slot
		do(t, c, "SET", fmt.Sprint("key:", i), "v")
	}
	seen := map[string]bool{}
	cursor := "0"
	for {
		v := do(t, c, "SCAN", cursor, "COUNT", "7")
		cursor = v.Elems[0].Text()
		var u uint64
		if _, err := fmt.Sscan(cursor, &u); err != nil || u >= 1<<53 {
			t.Fatalf("SCAN cursor %q is not an integer below 2^53", cursor)
		}
		for _, k := range v.Elems[1].Elems {
			if seen[k.Text()] {
				t.Fatalf("SCAN returned %s twice", k.Text())
			}
			seen[k.Text()] = true
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != 2*n {
		t.Errorf("SCAN saw %d keys, want %d", len(seen), 2*n)
	}
	if v := do(t, c, "SCAN", "18446744073709551615"); v.Elems[0].Text() != "0" || len(v.Elems[1].Elems) != 0 {
		t.Errorf("SCAN 18446744073709551615 = %v, want the end of the scan", v)
	}
}

// checkFullScan iterates SCAN with opts from cursor 0 to 0, checks that it
// returns want distinct keys, each once, and returns the number of calls.
func checkFullScan(t *testing.T, c *difftest.Conn, want int, opts ...string) int {
	t.Helper()
	return checkFullScanFrom(t, c, "0", want, opts...)
}

// checkFullScanFrom is checkFullScan starting from the given spelling of
// cursor 0.
func checkFullScanFrom(t *testing.T, c *difftest.Conn, start string, want int, opts ...string) int {
	t.Helper()
	seen := map[string]int{}
	cursor, calls := start, 0
	for {
		calls++
		v := do(t, c, append([]string{"SCAN", cursor}, opts...)...)
		cursor = v.Elems[0].Text()
		for _, k := range v.Elems[1].Elems {
			seen[k.Text()]++
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != want {
		t.Errorf("SCAN %v saw %d keys, want %d", opts, len(seen), want)
	}
	for k, cnt := range seen {
		if cnt != 1 {
			t.Errorf("SCAN %v returned %s %d times", opts, k, cnt)
		}
	}
	return calls
}

// interleaved is a topology of two nodes whose slots alternate in
// blocks of 2048, as a rebalanced gossip cluster leaves them.
type interleaved []proxy.NodeInfo

func (t interleaved) Nodes() []proxy.NodeInfo { return t }
func (t interleaved) Owner(slot uint16) int   { return int(slot/2048) % 2 }

// TestScanRangesApart: a node's SCAN page that runs on from one of its
// slot ranges into the next does not make the proxy return those keys
// twice (once now, once when the scan reaches that range).
func TestScanRangesApart(t *testing.T) {
	topo := interleaved{}
	for n := range 2 {
		_, addr, _ := nodetest.Start(t, node.Options{}, nil)
		info := proxy.NodeInfo{Addr: addr}
		for first := n * 2048; first < slots.Count; first += 4096 {
			info.Ranges = append(info.Ranges, proxy.SlotRange{First: uint16(first), Last: uint16(first + 2047)})
		}
		topo = append(topo, info)
	}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo})
	c := dial(t, addr, 2)
	const n = 3000
	for i := range n {
		do(t, c, "SET", fmt.Sprint("key:", i), "v")
	}
	for _, count := range []string{"10", "1000", "100000"} {
		checkFullScan(t, c, n, "COUNT", count)
	}
}
