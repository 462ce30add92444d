package node_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
)

// clientFields parses CLIENT LIST/INFO text into one field map per line.
func clientFields(t *testing.T, v difftest.Value) []map[string]string {
	t.Helper()
	text := string(v.Str)
	if v.Kind == difftest.Verbatim {
		text = strings.TrimPrefix(text, "txt:")
	} else if v.Kind != difftest.Bulk {
		t.Fatalf("client list reply: %s", v)
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		t.Errorf("client list text does not end in a newline: %q", text)
	}
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		m := map[string]string{}
		for _, f := range strings.Split(line, " ") {
			k, val, _ := strings.Cut(f, "=")
			m[k] = val
		}
		out = append(out, m)
	}
	return out
}

func clientID(t *testing.T, c *difftest.Conn) string {
	t.Helper()
	return strconv.FormatInt(connDo(t, c, "CLIENT", "ID").Int, 10)
}

// TestClientListFields checks the fields whose values the node knows:
// ids in connection order, addresses, name, age and idle on the node's
// clock, the last command, the protocol and Redis's field order.
func TestClientListFields(t *testing.T) {
	clock := newFakeClock(time.Unix(1700000000, 0))
	n := startNode(t, node.Options{Now: clock.Now}, nil)
	a := connDial(t, n.addr, 2)
	aID := clientID(t, a)
	clock.Advance(3 * time.Second)
	b := connDial(t, n.addr, 3)
	bID := clientID(t, b)
	connDo(t, b, "CLIENT", "SETNAME", "worker-b")
	connDo(t, b, "GET", "k")
	clock.Advance(2 * time.Second)

	v := connDo(t, a, "CLIENT", "LIST")
	lines := clientFields(t, v)
	if len(lines) != 2 || lines[0]["id"] != aID || lines[1]["id"] != bID {
		t.Fatalf("CLIENT LIST ids: %s", v)
	}
	order := "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp"
	var keys []string
	for _, f := range strings.Split(strings.TrimSuffix(string(v.Str), "\n"), "\n")[0:1] {
		for _, kv := range strings.Split(f, " ") {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k)
		}
	}
	if got := strings.Join(keys, " "); got != order {
		t.Errorf("field order:\n got %s\nwant %s", got, order)
	}
	wantB := map[string]string{"name": "worker-b", "age": "2", "idle": "2", "flags": "N", "cmd": "get",
		"resp": "3", "user": "default", "multi": "-1", "db": "0", "laddr": n.addr}
	for k, want := range wantB {
		if got := lines[1][k]; got != want {
			t.Errorf("client b %s=%q, want %q", k, got, want)
		}
	}
	if lines[0]["age"] != "5" || lines[0]["cmd"] != "client|list" || lines[0]["idle"] != "0" || lines[0]["resp"] != "2" {
		t.Errorf("client a line: %v", lines[0])
	}
	if fd, err := strconv.Atoi(lines[0]["fd"]); err != nil || fd <= 0 {
		t.Errorf("fd=%q", lines[0]["fd"])
	}
	if addr := lines[1]["addr"]; addr != b.NetConn().LocalAddr().String() {
		t.Errorf("client b addr=%s, want %s", addr, b.NetConn().LocalAddr())
	}

	// Filters.
	if got := clientFields(t, connDo(t, a, "CLIENT", "LIST", "ID", bID, "999", aID)); len(got) != 2 ||
		got[0]["id"] != bID || got[1]["id"] != aID {
		t.Errorf("CLIENT LIST ID b 999 a: %v", got)
	}
	if got := clientFields(t, connDo(t, a, "CLIENT", "LIST", "TYPE", "NORMAL")); len(got) != 2 {
		t.Errorf("CLIENT LIST TYPE normal: %v", got)
	}
	// CLIENT INFO is the caller's line.
	info := clientFields(t, connDo(t, b, "CLIENT", "INFO"))
	if len(info) != 1 || info[0]["id"] != bID || info[0]["name"] != "worker-b" || info[0]["cmd"] != "client|info" {
		t.Errorf("CLIENT INFO: %v", info)
	}
}

// TestClientKill checks that killed connections are closed at once (the
// other client) or right after the reply (the caller), in every form.
func TestClientKill(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	a := connDial(t, n.addr, 2)

	b := connDial(t, n.addr, 2)
	connExpect(t, a, difftest.Int(1), "CLIENT", "KILL", "ID", clientID(t, b))
	if err := expectClosed(b.NetConn()); err != nil {
		t.Errorf("killed by ID: %v", err)
	}

	// A round trip on b first: the node registers a connection when its
	// accept loop gets to it, which may be after Dial returns.
	b = connDial(t, n.addr, 2)
	clientID(t, b)
	connExpect(t, a, difftest.Simple("OK"), "CLIENT", "KILL", b.NetConn().LocalAddr().String())
	if err := expectClosed(b.NetConn()); err != nil {
		t.Errorf("killed by address (old form): %v", err)
	}
	connExpect(t, a, difftest.Err("ERR No such client"), "CLIENT", "KILL", b.NetConn().LocalAddr().String())

	b = connDial(t, n.addr, 2)
	clientID(t, b)
	connExpect(t, a, difftest.Int(1), "CLIENT", "KILL", "ADDR", b.NetConn().LocalAddr().String(), "TYPE", "normal")
	if err := expectClosed(b.NetConn()); err != nil {
		t.Errorf("killed by ADDR: %v", err)
	}

	// USER default with SKIPME yes (the default) kills everyone else.
	b, c := connDial(t, n.addr, 2), connDial(t, n.addr, 2)
	clientID(t, b)
	clientID(t, c)
	connExpect(t, a, difftest.Int(2), "CLIENT", "KILL", "USER", "default")
	for _, conn := range []*difftest.Conn{b, c} {
		if err := expectClosed(conn.NetConn()); err != nil {
			t.Errorf("killed by USER: %v", err)
		}
	}
	checkFor(t, 5*time.Second, func() error {
		if got := clientFields(t, connDo(t, a, "CLIENT", "LIST")); len(got) != 1 {
			return fmt.Errorf("after kills CLIENT LIST has %d clients", len(got))
		}
		return nil
	})

	// Killing oneself: the reply arrives, then the connection closes.
	connExpect(t, a, difftest.Int(1), "CLIENT", "KILL", "LADDR", n.addr, "SKIPME", "no")
	if err := expectClosed(a.NetConn()); err != nil {
		t.Errorf("self kill: %v", err)
	}
	a = connDial(t, n.addr, 2)
	connExpect(t, a, difftest.Simple("OK"), "CLIENT", "KILL", a.NetConn().LocalAddr().String())
	if err := expectClosed(a.NetConn()); err != nil {
		t.Errorf("self kill (old form): %v", err)
	}
}

// TestClientKillFreshConnection: a connection the kernel has completed is
// a client at once, even before it sends anything and before the node's
// accept loop has run (Redis's event loop accepts it before it serves a
// later command): CLIENT LIST shows it and CLIENT KILL ADDR finds it,
// every time. (Waiting for the kernel gives the accept loop time too;
// internal/netserve's TestSettleAdmitsCompletedConnections pins the wait
// for it.)
func TestClientKillFreshConnection(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	a := connDial(t, n.addr, 2)
	for i := 0; i < 20; i++ {
		b, err := net.Dial("tcp", n.addr)
		if err != nil {
			t.Fatal(err)
		}
		addr := b.LocalAddr().String()
		// Until the kernel has it, no server can know the connection.
		if err := difftest.WaitServerSide(b); err != nil {
			t.Fatal(err)
		}
		if list := connDo(t, a, "CLIENT", "LIST"); !strings.Contains(string(list.Str), "addr="+addr+" ") {
			b.Close()
			t.Fatalf("round %d: CLIENT LIST lacks the new connection %s:\n%s", i, addr, list.Str)
		}
		connExpect(t, a, difftest.Int(1), "CLIENT", "KILL", "ADDR", addr)
		if err := expectClosed(b); err != nil {
			t.Errorf("round %d: killed by ADDR: %v", i, err)
		}
		b.Close()
	}
}
