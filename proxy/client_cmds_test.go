package proxy_test

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// clientLines parses CLIENT LIST/INFO text into one field map per line,
// and the field names of the first line in order.
func clientLines(t *testing.T, v difftest.Value) (lines []map[string]string, order []string) {
	t.Helper()
	text := string(v.Str)
	switch v.Kind {
	case difftest.Verbatim:
		text = strings.TrimPrefix(text, "txt:")
	case difftest.Bulk:
	default:
		t.Fatalf("client list reply: %s", v)
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		t.Errorf("client list text does not end in a newline: %q", text)
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		m := map[string]string{}
		for _, f := range strings.Split(line, " ") {
			k, val, _ := strings.Cut(f, "=")
			m[k] = val
			if i == 0 {
				order = append(order, k)
			}
		}
		lines = append(lines, m)
	}
	return lines, order
}

// clientNorm keeps the CLIENT INFO/LIST fields both servers must agree on
// (dropping ids, addresses, fds, times and buffer sizes).
func clientNorm(v difftest.Value) difftest.Value {
	if v.Kind != difftest.Bulk && v.Kind != difftest.Verbatim {
		return v
	}
	keep := map[string]bool{"name": true, "flags": true, "db": true, "sub": true, "psub": true,
		"ssub": true, "multi": true, "events": true, "cmd": true, "user": true, "redir": true, "resp": true}
	var lines []string
	for _, line := range strings.Split(string(v.Str), "\n") {
		var fields []string
		for _, f := range strings.Fields(line) {
			if k, _, _ := strings.Cut(f, "="); keep[k] {
				fields = append(fields, f)
			}
		}
		lines = append(lines, strings.Join(fields, " "))
	}
	out := v
	out.Str = []byte(strings.Join(lines, "\n"))
	return out
}

// TestClientCommandsMatchRedis diffs the proxy's CLIENT replies against a
// real redis-server, in RESP2 and RESP3: errors, HELP, and the CLIENT
// INFO/LIST fields that do not depend on the connection.
func TestClientCommandsMatchRedis(t *testing.T) {
	p := difftest.Start(t)
	cl := proxytest.Start(t, 2, proxy.Options{})
	for _, proto := range []int{2, 3} {
		rc, err := difftest.DialProto(p.Oracle.Addr, proto)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		pair := &difftest.ConnPair{Redis: rc, Node: dial(t, cl.Addr, proto), Proto: proto}
		steps := [][]string{
			{"CLIENT", "HELP"}, {"CLIENT", "FOO"}, {"CLIENT", "ID", "x"},
			{"CLIENT", "SETNAME", "a b"}, {"CLIENT", "SETNAME", "conn-1"}, {"CLIENT", "GETNAME"},
			{"CLIENT", "LIST", "TYPE", "foo"}, {"CLIENT", "LIST", "TYPE", "pubsub"},
			{"CLIENT", "LIST", "TYPE", "master"}, {"CLIENT", "LIST", "TYPE", "replica"},
			{"CLIENT", "LIST", "TYPE", "slave"}, {"CLIENT", "LIST", "ID"}, {"CLIENT", "LIST", "ID", "abc"},
			{"CLIENT", "LIST", "ID", "99999", "x"}, {"CLIENT", "LIST", "ID", "99999"},
			{"CLIENT", "LIST", "FOO"}, {"CLIENT", "LIST", "TYPE", "normal", "x"},
			{"CLIENT", "KILL"}, {"CLIENT", "KILL", "1.2.3.4:5"}, {"CLIENT", "KILL", "ID"},
			{"CLIENT", "KILL", "ID", "abc"}, {"CLIENT", "KILL", "ID", "0"}, {"CLIENT", "KILL", "ID", "-5"},
			{"CLIENT", "KILL", "ID", "999999"}, {"CLIENT", "KILL", "FOO", "bar"},
			{"CLIENT", "KILL", "TYPE", "foo"}, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "maybe"},
			{"CLIENT", "KILL", "USER", "nobody"}, {"CLIENT", "KILL", "ADDR", "1.1.1.1:1", "LADDR", "x"},
			{"CLIENT", "KILL", "ID", "1", "ID"}, {"CLIENT", "KILL", "MAXAGE", "10"},
			{"CLIENT", "KILL", "TYPE", "pubsub"}, {"CLIENT", "KILL", "a", "b"},
			{"CLIENT", "NO-EVICT"}, {"CLIENT", "NO-EVICT", "maybe"}, {"CLIENT", "NO-EVICT", "on"},
			{"CLIENT", "INFO"}, {"CLIENT", "NO-EVICT", "off"}, {"CLIENT", "INFO", "x"},
			{"GET", "k"}, {"CLIENT", "INFO"},
		}
		for _, args := range steps {
			a, b := pair.Both(t, args...)
			pair.Compare(t, args, clientNorm(a), clientNorm(b))
		}
		// The field order of a whole line is Redis's.
		a, b := pair.Both(t, "CLIENT", "INFO")
		_, ra := clientLines(t, a)
		_, pa := clientLines(t, b)
		if strings.Join(ra, " ") != strings.Join(pa, " ") {
			t.Errorf("CLIENT INFO field order:\n proxy %v\n redis %v", pa, ra)
		}
	}
}

// TestClientListFields checks the proxy's own clients: ids in connection
// order, addresses as the proxy sees them, names, last commands, protocol,
// the filters, and CLIENT INFO as the caller's line.
func TestClientListFields(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{})
	a := dial(t, cl.Addr, 2)
	b := dial(t, cl.Addr, 3)
	aID := strconv.FormatInt(do(t, a, "CLIENT", "ID").Int, 10)
	bID := strconv.FormatInt(do(t, b, "CLIENT", "ID").Int, 10)
	do(t, b, "CLIENT", "SETNAME", "worker-b")
	do(t, b, "GET", "k")

	lines, _ := clientLines(t, do(t, a, "CLIENT", "LIST"))
	if len(lines) != 2 || lines[0]["id"] != aID || lines[1]["id"] != bID {
		t.Fatalf("CLIENT LIST ids: %v", lines)
	}
	wantB := map[string]string{"name": "worker-b", "flags": "N", "cmd": "get", "resp": "3", "multi": "-1",
		"laddr": cl.Addr, "addr": b.NetConn().LocalAddr().String(), "user": "default"}
	for k, want := range wantB {
		if got := lines[1][k]; got != want {
			t.Errorf("client b %s=%q, want %q", k, got, want)
		}
	}
	if l := lines[0]; l["cmd"] != "client|list" || l["idle"] != "0" || l["resp"] != "2" || l["name"] != "" {
		t.Errorf("client a line: %v", l)
	}
	if fd, err := strconv.Atoi(lines[0]["fd"]); err != nil || fd <= 0 {
		t.Errorf("fd=%q", lines[0]["fd"])
	}
	if got, _ := clientLines(t, do(t, a, "CLIENT", "LIST", "ID", bID, "999", aID)); len(got) != 2 ||
		got[0]["id"] != bID || got[1]["id"] != aID {
		t.Errorf("CLIENT LIST ID b 999 a: %v", got)
	}
	if got, _ := clientLines(t, do(t, a, "CLIENT", "LIST", "TYPE", "normal")); len(got) != 2 {
		t.Errorf("CLIENT LIST TYPE normal: %v", got)
	}
	if got, _ := clientLines(t, do(t, a, "CLIENT", "LIST", "TYPE", "pubsub")); len(got) != 0 {
		t.Errorf("CLIENT LIST TYPE pubsub: %v", got)
	}
	info, _ := clientLines(t, do(t, b, "CLIENT", "INFO"))
	if len(info) != 1 || info[0]["id"] != bID || info[0]["name"] != "worker-b" || info[0]["cmd"] != "client|info" {
		t.Errorf("CLIENT INFO: %v", info)
	}
	// Another client's idle is the whole seconds since its last command
	// ended (the age and ctime of a line, as Redis counts them).
	time.Sleep(1100 * time.Millisecond)
	if got, _ := clientLines(t, do(t, a, "CLIENT", "LIST", "ID", bID)); len(got) != 1 ||
		(got[0]["idle"] != "1" && got[0]["idle"] != "2") {
		t.Errorf("client b idle 1.1 s after its last command: %v, want 1 (or 2 across a second)", got)
	}
	// Inside MULTI the caller's line shows the transaction.
	do(t, a, "MULTI")
	do(t, a, "SET", "x", "1")
	if v := do(t, a, "EXEC"); v.IsError() {
		t.Fatalf("EXEC: %v", v)
	}
	do(t, a, "CLIENT", "NO-EVICT", "on")
	if got, _ := clientLines(t, do(t, a, "CLIENT", "INFO")); got[0]["flags"] != "e" {
		t.Errorf("flags after NO-EVICT on: %v", got[0]["flags"])
	}
	do(t, a, "READONLY")
	if got, _ := clientLines(t, do(t, a, "CLIENT", "INFO")); got[0]["flags"] != "re" {
		t.Errorf("flags after READONLY: %v, want re", got[0]["flags"])
	}
	do(t, a, "READWRITE")
	if got, _ := clientLines(t, do(t, a, "CLIENT", "INFO")); got[0]["flags"] != "e" {
		t.Errorf("flags after READWRITE: %v, want e", got[0]["flags"])
	}
}

// expectClosed waits for the proxy to close nc.
func expectClosed(nc net.Conn) error {
	nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	for {
		n, err := nc.Read(buf)
		if n > 0 {
			return errors.New("unexpected data: " + string(buf[:n]))
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return errors.New("connection still open")
			}
			if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset") {
				return nil
			}
			return err
		}
	}
}

// TestClientKill checks that CLIENT KILL closes the connections it names
// at once (another client) or right after the reply (the caller), in
// every form, and that the proxy forgets them.
func TestClientKill(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{})
	a := dial(t, cl.Addr, 2)
	id := func(c *difftest.Conn) string { return strconv.FormatInt(do(t, c, "CLIENT", "ID").Int, 10) }
	expect := func(want difftest.Value, args ...string) {
		t.Helper()
		if got := do(t, a, args...); !difftest.Equal(got, want) {
			t.Errorf("%v = %s, want %s", args, got, want)
		}
	}

	b := dial(t, cl.Addr, 2)
	expect(difftest.Int(1), "CLIENT", "KILL", "ID", id(b))
	if err := expectClosed(b.NetConn()); err != nil {
		t.Errorf("killed by ID: %v", err)
	}

	b = dial(t, cl.Addr, 2)
	id(b) // registered by now
	expect(difftest.Simple("OK"), "CLIENT", "KILL", b.NetConn().LocalAddr().String())
	if err := expectClosed(b.NetConn()); err != nil {
		t.Errorf("killed by address (old form): %v", err)
	}
	expect(difftest.Err("ERR No such client"), "CLIENT", "KILL", b.NetConn().LocalAddr().String())

	b = dial(t, cl.Addr, 2)
	id(b)
	expect(difftest.Int(1), "CLIENT", "KILL", "ADDR", b.NetConn().LocalAddr().String(), "TYPE", "normal")
	if err := expectClosed(b.NetConn()); err != nil {
		t.Errorf("killed by ADDR: %v", err)
	}

	// A client in the middle of a pipeline to a node, killed by USER with
	// SKIPME yes (the default), along with another.
	b, c := dial(t, cl.Addr, 2), dial(t, cl.Addr, 2)
	id(b)
	id(c)
	do(t, b, "SET", "k", "v")
	expect(difftest.Int(2), "CLIENT", "KILL", "USER", "default")
	for _, conn := range []*difftest.Conn{b, c} {
		if err := expectClosed(conn.NetConn()); err != nil {
			t.Errorf("killed by USER: %v", err)
		}
	}
	pollUntil(t, 5*time.Second, func() error {
		if got, _ := clientLines(t, do(t, a, "CLIENT", "LIST")); len(got) != 1 {
			return errors.New("killed clients still listed")
		}
		if v := do(t, a, "INFO", "clients"); !strings.Contains(v.Text(), "connected_clients:1\r\n") {
			return errors.New("connected_clients is not 1: " + v.Text())
		}
		return nil
	})

	// Killing oneself: the reply arrives, then the connection closes.
	expect(difftest.Int(1), "CLIENT", "KILL", "LADDR", cl.Addr, "SKIPME", "no")
	if err := expectClosed(a.NetConn()); err != nil {
		t.Errorf("self kill: %v", err)
	}
	a = dial(t, cl.Addr, 2)
	expect(difftest.Simple("OK"), "CLIENT", "KILL", a.NetConn().LocalAddr().String())
	if err := expectClosed(a.NetConn()); err != nil {
		t.Errorf("self kill (old form): %v", err)
	}
}

// TestInfoKeyspaceAvgTTL: db0's avg_ttl through the proxy is the nodes'
// estimates weighted by their keys with a TTL. Keys in every node's slots
// expire in 1000 s or 2000 s, so the mean lies between those.
func TestInfoKeyspaceAvgTTL(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	for i := range 60 {
		ttl := "1000"
		if i%2 == 1 {
			ttl = "2000"
		}
		do(t, c, "SET", "k"+strconv.Itoa(i), "v", "EX", ttl)
	}
	for i := range 30 {
		do(t, c, "SET", "p"+strconv.Itoa(i), "v")
	}
	db0 := infoField(t, c, "keyspace", "db0")
	fields := map[string]int64{}
	for _, kv := range strings.Split(db0, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("db0:%s: %v", db0, err)
		}
		fields[k] = n
	}
	if fields["keys"] != 90 || fields["expires"] != 60 {
		t.Fatalf("db0:%s, want keys=90,expires=60", db0)
	}
	if avg := fields["avg_ttl"]; avg < 990_000 || avg > 2_000_000 {
		t.Fatalf("db0:%s: avg_ttl %d ms, want between 1000 s and 2000 s", db0, avg)
	}
}

// TestInfoSections checks the proxy's INFO: Redis's sections and the
// fields clients read, and a line per node with its connections and
// latency.
func TestInfoSections(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	for i := range 20 {
		do(t, c, "SET", "k"+strconv.Itoa(i), "v")
	}
	text := do(t, c, "INFO").Text()
	for _, want := range []string{"# Server\r\n", "# Clients\r\n", "# Stats\r\n", "# Cluster\r\n", "# Nodes\r\n", "# Keyspace\r\n",
		"redis_version:", "connected_clients:1\r\n", "blocked_clients:0\r\n", "maxclients:", "instantaneous_ops_per_sec:",
		"instantaneous_input_kbps:", "total_commands_processed:", "crossslot_rejections:0\r\n", "db0:keys=20,"} {
		if !strings.Contains(text, want) {
			t.Errorf("INFO lacks %q:\n%s", want, text)
		}
	}
	for i, addr := range cl.NodeAddrs {
		var line string
		for _, l := range strings.Split(text, "\r\n") {
			if strings.HasPrefix(l, "node"+strconv.Itoa(i)+":") {
				line = l
			}
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(strings.TrimPrefix(line, "node"+strconv.Itoa(i)+":"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		if fields["addr"] != addr || fields["status"] != "up" || fields["connections"] == "0" {
			t.Errorf("node %d line: %q", i, line)
		}
		avg, err1 := strconv.Atoi(fields["avg_batch_latency_us"])
		p99, err2 := strconv.Atoi(fields["p99_batch_latency_us"])
		if err1 != nil || err2 != nil || avg <= 0 || p99 <= 0 {
			t.Errorf("node %d latency: %q", i, line)
		}
	}
	// Replication and CPU are the proxy's own, after Stats as in Redis:
	// a master with no replicas, and CPU time that has been spent.
	if i, j, k := strings.Index(text, "# Stats\r\n"), strings.Index(text, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"),
		strings.Index(text, "# CPU\r\nused_cpu_sys:"); i < 0 || j < i || k < j {
		t.Errorf("INFO lacks Replication (role:master) and CPU after Stats:\n%s", text)
	}
	if id := infoField(t, c, "replication", "master_replid"); len(id) != 40 {
		t.Errorf("master_replid %q, want 40 hex characters", id)
	}
	sys, err1 := strconv.ParseFloat(infoField(t, c, "cpu", "used_cpu_sys"), 64)
	user, err2 := strconv.ParseFloat(infoField(t, c, "cpu", "used_cpu_user"), 64)
	if err1 != nil || err2 != nil || sys+user <= 0 {
		t.Errorf("INFO cpu: used_cpu_sys %v (%v), used_cpu_user %v (%v)", sys, err1, user, err2)
	}
	if v := do(t, c, "INFO", "clients"); strings.Contains(v.Text(), "# Server") || !strings.Contains(v.Text(), "# Clients") {
		t.Errorf("INFO clients: %s", v.Text())
	}
	// A section name is read up to its first NUL, as Redis's sdsnew does.
	if v := do(t, c, "INFO", "CLIENTS\x00z"); !strings.HasPrefix(v.Text(), "# Clients\r\n") || strings.Contains(v.Text(), "# Server") {
		t.Errorf("INFO CLIENTS\\x00z: %s", v.Text())
	}
	// Memory comes after Clients, as in Redis, and is the nodes': these
	// three run in this test's process and each reports all of it, which
	// the proxy counts once.
	if i, j := strings.Index(text, "# Clients"), strings.Index(text, "# Memory\r\nused_memory:"); j < i || i < 0 {
		t.Errorf("INFO has no Memory section after Clients:\n%s", text)
	}
	// (The heap moves between the readings: the node is read before and
	// after, and counted three times the sum would be about 3x.)
	n0 := dial(t, cl.NodeAddrs[0], 2)
	used := func(c *difftest.Conn) int64 {
		n, err := strconv.ParseInt(infoField(t, c, "memory", "used_memory"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := used(n0)
	proxyUsed := used(c)
	nodeUsed := max(before, used(n0))
	if proxyUsed <= 0 || proxyUsed > 2*nodeUsed {
		t.Errorf("proxy used_memory %d, a node's %d: want the one process counted once", proxyUsed, nodeUsed)
	}
	if v := do(t, c, "INFO", "memory", "keyspace").Text(); !strings.HasPrefix(v, "# Memory\r\n") ||
		!strings.Contains(v, "\r\n\r\n# Keyspace\r\ndb0:keys=20,") || strings.Contains(v, "# Server") {
		t.Errorf("INFO memory keyspace:\n%s", v)
	}
	// instantaneous_ops_per_sec follows the traffic within a couple of
	// samples.
	pollUntil(t, 3*time.Second, func() error {
		for range 50 {
			do(t, c, "PING")
		}
		v := do(t, c, "INFO", "stats").Text()
		if strings.Contains(v, "instantaneous_ops_per_sec:0\r\n") {
			return errors.New("instantaneous_ops_per_sec stays 0")
		}
		return nil
	})
}

// TestClientListOtherConnectionsMatchRedis: another connection's CLIENT
// LIST line shows the transaction ('x', multi=: the commands Redis would
// hold) and the last command looked up, rejected or not (cmd=NULL when
// unknown), as with a real redis-server; a CLIENT REPLY SKIP applies to
// the RESET after it.
func TestClientListOtherConnectionsMatchRedis(t *testing.T) {
	p := difftest.Start(t)
	cl := proxytest.Start(t, 2, proxy.Options{})
	pair := func() *difftest.ConnPair {
		rc, err := difftest.DialProto(p.Oracle.Addr, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return &difftest.ConnPair{Redis: rc, Node: dial(t, cl.Addr, 2), Proto: 2}
	}
	a, b := pair(), pair()
	lineOfA := func(v difftest.Value) difftest.Value {
		v = clientNorm(v)
		for _, line := range strings.Split(string(v.Str), "\n") {
			if strings.Contains(line, "name=A ") {
				v.Str = []byte(line)
				return v
			}
		}
		v.Str = nil
		return v
	}
	listA := func() {
		t.Helper()
		x, y := b.Both(t, "CLIENT", "LIST")
		b.Compare(t, []string{"CLIENT", "LIST"}, lineOfA(x), lineOfA(y))
	}
	a.Do(t, "CLIENT", "SETNAME", "A")
	listA()
	for _, step := range [][]string{
		{"MULTI"}, {"SET", "{r}k", "2"}, {"GET", "{r}k"}, {"EXEC"},
		{"MULTI"}, {"SET", "{r}k", "3"}, {"GET"}, {"GET", "{r}k"}, {"DISCARD"},
		{"LPUSH", "{r}k"}, {"NOSUCH", "x"}, {"CLIENT", "NOSUCH"}, {"CLIENT", "SETNAME", "a", "b"},
		{"CONFIG", "NOSUCH"}, {"GET", "{r}k"},
	} {
		a.Do(t, step...)
		listA()
	}
	for _, conn := range []*difftest.Conn{a.Redis, a.Node} {
		for _, args := range [][]string{{"CLIENT", "REPLY", "SKIP"}, {"RESET"}} {
			var raw [][]byte
			for _, a := range args {
				raw = append(raw, []byte(a))
			}
			if err := conn.Send(raw...); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.Do(t, "ECHO", "after reset")
}

// splitTopology gives node 0 two slot ranges and node 1 the rest.
type splitTopology struct{ nodes []proxy.NodeInfo }

func (s splitTopology) Nodes() []proxy.NodeInfo { return s.nodes }

func (s splitTopology) Owner(slot uint16) int {
	for i, n := range s.nodes {
		for _, r := range n.Ranges {
			if r.First <= slot && slot <= r.Last {
				return i
			}
		}
	}
	return -1
}

// TestInfoParsesLikeRedisPy: every INFO line whose value holds both ','
// and '=' is a list of key=value pairs, the rule redis-py's INFO parser
// (run by RedisCluster at connect) applies; a node with two slot ranges
// used to put a bare "200-16383" between the commas and break it.
func TestInfoParsesLikeRedisPy(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{})
	topo := splitTopology{nodes: []proxy.NodeInfo{
		{Addr: cl.NodeAddrs[0], Ranges: []proxy.SlotRange{{First: 0, Last: 99}, {First: 200, Last: 16383}}},
		{Addr: cl.NodeAddrs[1], Ranges: []proxy.SlotRange{{First: 100, Last: 199}}},
	}}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo})
	c := dial(t, addr, 2)
	text := do(t, c, "INFO", "everything").Text()
	if !strings.Contains(text, "node0:addr="+cl.NodeAddrs[0]+",slots=0-99 200-16383,") {
		t.Errorf("INFO has no node0 line with both ranges:\n%s", text)
	}
	for _, line := range strings.Split(text, "\r\n") {
		_, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") || !strings.Contains(value, ",") || !strings.Contains(value, "=") {
			continue
		}
		for _, item := range strings.Split(value, ",") {
			if !strings.Contains(item, "=") {
				t.Errorf("INFO line %q: item %q is no key=value pair", line, item)
			}
		}
	}
}

// TestShutdownArgumentsMatchRedis: SHUTDOWN through the proxy checks its
// arguments as redis-server does (a syntax error, ABORT with nothing in
// progress) before the proxy refuses to shut anything down.
func TestShutdownArgumentsMatchRedis(t *testing.T) {
	p := difftest.Start(t)
	cl := proxytest.Start(t, 1, proxy.Options{})
	rc, err := difftest.DialProto(p.Oracle.Addr, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	cp := &difftest.ConnPair{Redis: rc, Node: dial(t, cl.Addr, 2), Proto: 2}
	for _, args := range [][]string{
		{"SHUTDOWN", "FOO"}, {"SHUTDOWN", "foo", "bar"}, {"SHUTDOWN", "NOSAVE", "SAVE"},
		{"SHUTDOWN", "ABORT", "NOW"}, {"SHUTDOWN", "FORCE", "abort"}, {"shutdown", "abort"},
		{"SHUTDOWN", "ABORT", "ABORT"}, {"SHUTDOWN", "NOW", "NOW", "FOO"},
	} {
		cp.Do(t, args...)
	}
	for _, args := range [][]string{{"SHUTDOWN"}, {"SHUTDOWN", "NOSAVE", "NOW", "FORCE"}} {
		if v := do(t, cp.Node, args...); v.Text() != resp.ErrProxyShutdown {
			t.Errorf("%q through the proxy: %s, want %q", args, v, resp.ErrProxyShutdown)
		}
	}
}

// TestClientKillFreshConnection: a connection the kernel has completed is
// a client at once, before it sends anything (as in Redis, whose event
// loop accepts it before it serves a later command); see the node's test
// of the same name.
func TestClientKillFreshConnection(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{})
	a := dial(t, cl.Addr, 2)
	for i := 0; i < 20; i++ {
		b, err := net.Dial("tcp", cl.Addr)
		if err != nil {
			t.Fatal(err)
		}
		addr := b.LocalAddr().String()
		// Until the kernel has it, no server can know the connection.
		if err := difftest.WaitServerSide(b); err != nil {
			t.Fatal(err)
		}
		if got := do(t, a, "CLIENT", "KILL", "ADDR", addr); !difftest.Equal(got, difftest.Int(1)) {
			b.Close()
			t.Fatalf("round %d: CLIENT KILL ADDR %s = %s, want 1", i, addr, got)
		}
		if err := expectClosed(b); err != nil {
			t.Errorf("round %d: killed by ADDR: %v", i, err)
		}
		b.Close()
	}
}
