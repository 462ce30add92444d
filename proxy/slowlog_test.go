package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestSlowlog: SLOWLOG through the proxy is the nodes' slow logs merged:
// CONFIG SET of its parameters reaches every node, GET returns the
// commands of every node newest first, cut to the count asked, LEN sums
// and RESET empties them all, logged once; the argument errors are
// Redis's.
func TestSlowlog(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	topo := cl.Proxy.Topology()
	keys := []string{keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")}

	if v := do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100"); v.Text() != "OK" {
		t.Fatalf("CONFIG SET slowlog-*: %v", v)
	}
	for i, addr := range cl.NodeAddrs {
		n := dial(t, addr, 2)
		if v := do(t, n, "CONFIG", "GET", "slowlog-log-slower-than"); len(v.Elems) != 2 || v.Elems[1].Text() != "0" {
			t.Errorf("node %d: slowlog-log-slower-than %v after CONFIG SET through the proxy", i, v)
		}
	}
	if v := do(t, c, "CONFIG", "SET", "slowlog-max-len", "-1"); v.Text() != fmt.Sprintf(resp.ErrConfigSetFailed, "slowlog-max-len", fmt.Sprintf(resp.ConfigReasonRange, 0, int64(1<<63-1))) {
		t.Errorf("CONFIG SET slowlog-max-len -1: %v", v)
	}
	do(t, c, "SLOWLOG", "RESET")
	// The SETs run on nodes 2, 1 and 0 in turn, within a second: GET
	// must give them newest first across nodes, then the one RESET (a
	// Redis logs its own RESET, once; the proxy's connections send the
	// nodes nothing else meanwhile).
	for i := len(keys) - 1; i >= 0; i-- {
		do(t, c, "SET", keys[i], "v")
	}
	// LEN, as every command the proxy sends every node, is logged once.
	if v := do(t, c, "SLOWLOG", "LEN"); v.Int != 4 {
		t.Errorf("SLOWLOG LEN = %v, want 4 (the RESET and three SETs)", v)
	}
	v := do(t, c, "SLOWLOG", "GET", "-1")
	var got []string
	for _, e := range v.Elems {
		if len(e.Elems) != 6 || len(e.Elems[3].Elems) == 0 {
			t.Fatalf("SLOWLOG GET entry %v", e)
		}
		var words []string
		for _, a := range e.Elems[3].Elems {
			words = append(words, a.Text())
		}
		got = append(got, strings.Join(words, " "))
	}
	want := []string{"SLOWLOG LEN", "SET " + keys[0] + " v", "SET " + keys[1] + " v", "SET " + keys[2] + " v", "SLOWLOG RESET"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("SLOWLOG GET -1 = %q, want %q (newest first across nodes)", got, want)
	}
	for i := 1; i < len(v.Elems); i++ {
		if v.Elems[i].Elems[1].Int > v.Elems[i-1].Elems[1].Int {
			t.Errorf("SLOWLOG GET not newest first: %v", v)
		}
	}
	if v := do(t, c, "SLOWLOG", "GET", "2"); len(v.Elems) != 2 {
		t.Errorf("SLOWLOG GET 2: %d entries", len(v.Elems))
	}
	for _, tc := range []struct{ args []string }{{[]string{"SLOWLOG", "GET", "-2"}}, {[]string{"SLOWLOG", "GET", "x"}}} {
		if v := do(t, c, tc.args...); v.Text() != resp.ErrSlowlogCount {
			t.Errorf("%v: %v", tc.args, v)
		}
	}
	if v := do(t, c, "SLOWLOG", "GET", "1", "2"); v.Text() != fmt.Sprintf(resp.ErrSubcommandSyntax, "GET", "SLOWLOG") {
		t.Errorf("SLOWLOG GET 1 2: %v", v)
	}
	if v := do(t, c, "SLOWLOG", "RESET"); v.Text() != "OK" {
		t.Errorf("SLOWLOG RESET: %v", v)
	}
	// The RESET itself is logged, once, and then the LEN; as Redis 7.0
	// gives them.
	if v := do(t, c, "SLOWLOG", "LEN"); v.Int != 1 {
		t.Errorf("SLOWLOG LEN after RESET = %v, want 1 (the RESET)", v)
	}
	v = do(t, c, "SLOWLOG", "GET")
	got = got[:0]
	for _, e := range v.Elems {
		got = append(got, e.Elems[3].String())
	}
	if len(got) != 2 || got[0] != `array[bulk:"SLOWLOG", bulk:"LEN"]` || got[1] != `array[bulk:"SLOWLOG", bulk:"RESET"]` {
		t.Errorf("SLOWLOG GET after RESET and LEN: %v", v)
	}
}

// TestSlowlogConfigSetMixed: CONFIG SET of the slow log's parameters with
// the proxy's own in one command checks all of them in Redis's order and
// sets the slowlog's on every node; with a node down it changes nothing.
func TestSlowlogConfigSetMixed(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	if v := do(t, c, "CONFIG", "SET", "slowlog-max-len", "5", "maxclients", "100", "slowlog-log-slower-than", "0"); v.Text() != "OK" {
		t.Fatalf("CONFIG SET slowlog-max-len 5 maxclients 100 slowlog-log-slower-than 0: %v", v)
	}
	for i, addr := range cl.NodeAddrs {
		if v := do(t, dial(t, addr, 2), "CONFIG", "GET", "slowlog-max-len"); len(v.Elems) != 2 || v.Elems[1].Text() != "5" {
			t.Errorf("node %d: slowlog-max-len %v", i, v)
		}
	}
	if v := do(t, c, "CONFIG", "GET", "slowlog-max-len", "maxclients"); !strings.Contains(v.String(), `"slowlog-max-len", bulk:"5"`) || !strings.Contains(v.String(), `"maxclients", bulk:"100"`) {
		t.Errorf("CONFIG GET through the proxy: %v", v)
	}
	// A value error anywhere: nothing changes.
	if v := do(t, c, "CONFIG", "SET", "slowlog-max-len", "7", "maxclients", "x"); v.Text() != fmt.Sprintf(resp.ErrConfigSetFailed, "maxclients", resp.ConfigReasonNotInteger) {
		t.Errorf("CONFIG SET slowlog-max-len 7 maxclients x: %v", v)
	}
	if v := do(t, c, "CONFIG", "SET", "maxclients", "50", "slowlog-max-len", "-5"); v.Text() != fmt.Sprintf(resp.ErrConfigSetFailed, "slowlog-max-len", fmt.Sprintf(resp.ConfigReasonRange, 0, int64(1<<63-1))) {
		t.Errorf("CONFIG SET maxclients 50 slowlog-max-len -5: %v", v)
	}
	if v := do(t, c, "CONFIG", "GET", "slowlog-max-len", "maxclients"); !strings.Contains(v.String(), `"slowlog-max-len", bulk:"5"`) || !strings.Contains(v.String(), `"maxclients", bulk:"100"`) {
		t.Errorf("after refused CONFIG SETs: %v", v)
	}
	// A node down: refused, nothing set on the others.
	cl.StopNode[2]()
	down := fmt.Sprintf(resp.ErrClusterDownNode, cl.NodeAddrs[2])
	// Once the proxy knows (a node lost between the check and the
	// command itself still leaves it run on the others).
	waitFor(t, "the proxy to see node 2 down", promptly, func() bool { return do(t, c, "DBSIZE").Text() == down })
	for _, args := range [][]string{
		{"CONFIG", "SET", "slowlog-max-len", "9"},
		{"CONFIG", "SET", "slowlog-max-len", "9", "maxclients", "90"},
		{"SLOWLOG", "RESET"},
		{"CONFIG", "RESETSTAT"},
	} {
		if v := do(t, c, args...); v.Text() != down {
			t.Errorf("%v with a node down: %v, want %q", args, v, down)
		}
	}
	n0 := dial(t, cl.NodeAddrs[0], 2)
	if v := do(t, n0, "CONFIG", "GET", "slowlog-max-len"); len(v.Elems) != 2 || v.Elems[1].Text() != "5" {
		t.Errorf("node 0 after refused CONFIG SETs: slowlog-max-len %v", v)
	}
	if v := do(t, n0, "SLOWLOG", "LEN"); v.Int == 0 {
		t.Errorf("node 0's slow log was reset by a refused SLOWLOG RESET")
	}
}

// TestSlowlogLocalCommands: the commands the proxy answers itself are in
// SLOWLOG as one Redis logs them, among the nodes' entries in the order
// they ran, with the client's address and name (the name as the command
// left it, secrets redacted); LEN and GET stop at slowlog-max-len as one
// Redis's log does, and RESET empties the proxy's entries too.
func TestSlowlogLocalCommands(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	peer := c.NetConn().LocalAddr().String()
	key := keyOnNode(t, cl.Proxy.Topology(), 1, "k")

	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100")
	do(t, c, "SLOWLOG", "RESET")
	do(t, c, "CLIENT", "SETNAME", "app")
	do(t, c, "PING")
	do(t, c, "ECHO", "hi")
	do(t, c, "SET", key, "v")
	do(t, c, "AUTH", "secret")
	do(t, c, "CLUSTER", "KEYSLOT", "x")
	v := do(t, c, "SLOWLOG", "GET", "-1")
	type entry struct{ args, peer, name string }
	var got []entry
	for _, e := range v.Elems {
		if len(e.Elems) != 6 {
			t.Fatalf("SLOWLOG GET entry %v", e)
		}
		got = append(got, entry{difftest.SlowlogEntryCommand(e), e.Elems[4].Text(), e.Elems[5].Text()})
	}
	want := []entry{
		{"CLUSTER KEYSLOT x", peer, "app"},
		{"AUTH (redacted)", peer, "app"},
		{"SET " + key + " v", "", ""}, // a node's: the proxy's connection, no name
		{"ECHO hi", peer, "app"},
		{"PING", peer, "app"},
		{"CLIENT SETNAME app", peer, "app"},
		{"SLOWLOG RESET", "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("SLOWLOG GET -1 = %q, want %q", got, want)
	}
	for i := range want {
		if want[i].peer == "" { // a node's entry
			if got[i].args != want[i].args || got[i].peer == peer || got[i].name != "" {
				t.Errorf("entry %d = %q, want %q from a node", i, got[i], want[i].args)
			}
			continue
		}
		if got[i] != want[i] {
			t.Errorf("entry %d = %q, want %q", i, got[i], want[i])
		}
	}
	if v := do(t, c, "SLOWLOG", "LEN"); v.Int != int64(len(want)+1) {
		t.Errorf("SLOWLOG LEN = %v, want %d (with the GET)", v, len(want)+1)
	}

	// As in Redis's "max entries is correctly handled": the log holds
	// slowlog-max-len entries, the newest.
	do(t, c, "CONFIG", "SET", "slowlog-max-len", "10")
	for range 30 {
		do(t, c, "PING")
	}
	if v := do(t, c, "SLOWLOG", "LEN"); v.Int != 10 {
		t.Errorf("SLOWLOG LEN after 30 PINGs with slowlog-max-len 10 = %v, want 10", v)
	}
	if v := do(t, c, "SLOWLOG", "GET", "5"); len(v.Elems) != 5 || v.Elems[0].Elems[3].Elems[0].Text() != "SLOWLOG" || v.Elems[1].Elems[3].Elems[0].Text() != "PING" {
		t.Errorf("SLOWLOG GET 5 = %v, want the LEN and four PINGs", v)
	}
	if v := do(t, c, "SLOWLOG", "GET", "-1"); len(v.Elems) != 10 {
		t.Errorf("SLOWLOG GET -1 with slowlog-max-len 10: %d entries", len(v.Elems))
	}

	// Over the threshold nothing local is logged; RESET empties the
	// proxy's entries with the nodes'.
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "1000000")
	do(t, c, "SLOWLOG", "RESET")
	do(t, c, "PING")
	if v := do(t, c, "SLOWLOG", "LEN"); v.Int != 0 {
		t.Errorf("SLOWLOG LEN after RESET and a fast PING = %v, want 0", v)
	}
}

// TestSlowlogOpsCommands: the commands the proxy answers with the help of
// commands of its own to the nodes (INFO, MEMORY STATS, CONFIG SET,
// UNWATCH, CLIENT UNBLOCK, a BLPOP served without blocking) or alone
// (WAIT 0) are logged once, as the client sent them; the nodes log none
// of the proxy's own commands (the INFO sections it asks for, the CONFIG
// GET behind a CONFIG SET, the CLIENT UNBLOCK of a node-side id, the LMPOP
// that tries a BLPOP without blocking, a dedicated connection's CLIENT
// ID).
func TestSlowlogOpsCommands(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	blocked := dial(t, cl.Addr, 2)
	key := keyOnNode(t, cl.Proxy.Topology(), 2, "w")
	maxclients := do(t, c, "CONFIG", "GET", "maxclients").Elems[1].Text()
	maxmemory := do(t, c, "CONFIG", "GET", "maxmemory").Elems[1].Text()
	blockedID := fmt.Sprint(do(t, blocked, "CLIENT", "ID").Int)

	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100")
	do(t, c, "SLOWLOG", "RESET")
	do(t, c, "INFO", "server")
	do(t, c, "INFO")
	do(t, c, "WAIT", "0", "0")
	do(t, c, "CONFIG", "SET", "maxclients", maxclients)
	do(t, c, "CONFIG", "SET", "maxmemory", maxmemory)
	do(t, c, "CONFIG", "SET", "slowlog-max-len", "100", "maxclients", maxclients)
	do(t, c, "WATCH", key)
	do(t, c, "UNWATCH")
	do(t, c, "CLIENT", "UNBLOCK", "99999")
	do(t, c, "MEMORY", "STATS")
	do(t, c, "DBSIZE")
	do(t, c, "RPUSH", key, "x")
	do(t, c, "BLPOP", key, "0") // served at once
	if err := blocked.Send([]byte("BLPOP"), []byte(key), []byte("0")); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, cl.Proxy.Topology().Nodes()[2].Addr, 1)
	do(t, c, "CLIENT", "UNBLOCK", blockedID)
	if _, err := blocked.Receive(); err != nil {
		t.Fatal(err)
	}
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "1000000")

	v := do(t, c, "SLOWLOG", "GET", "-1")
	var got []string
	for _, e := range v.Elems {
		if args := difftest.SlowlogEntryCommand(e); args != "INFO clients" { // waitBlocked's, on the node
			got = append(got, args)
		}
	}
	want := []string{
		"CLIENT UNBLOCK " + blockedID,
		"", // the BLPOP it unblocked: Redis 7.0 logs it without its arguments
		"BLPOP " + key + " 0",
		"RPUSH " + key + " x",
		"DBSIZE",
		"MEMORY STATS",
		"CLIENT UNBLOCK 99999",
		"UNWATCH",
		"WATCH " + key,
		"CONFIG SET slowlog-max-len 100 maxclients " + maxclients,
		"CONFIG SET maxmemory " + maxmemory,
		"CONFIG SET maxclients " + maxclients,
		"WAIT 0 0",
		"INFO",
		"INFO server",
		"SLOWLOG RESET",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("SLOWLOG GET -1:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
