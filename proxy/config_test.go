package proxy_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// configValue is CONFIG GET name's value, in either protocol's shape.
func configValue(t *testing.T, c *difftest.Conn, name string) string {
	t.Helper()
	v := do(t, c, "CONFIG", "GET", name)
	if v.IsError() || len(v.Elems) != 2 || string(v.Elems[0].Str) != name {
		t.Fatalf("CONFIG GET %s: %v", name, v)
	}
	return string(v.Elems[1].Str)
}

// TestConfigSetRequirePassIsTheProxys: CONFIG SET requirepass through the
// proxy protects the proxy, as it protects a Redis server, and leaves the
// nodes alone; passed on to them, it locked the proxy out of its own
// nodes at its next connection (every blocking command, then everything
// after a reconnect, answered NOAUTH).
func TestConfigSetRequirePassIsTheProxys(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	for _, proto := range []int{2, 3} {
		c := dial(t, cl.Addr, proto)
		if v := do(t, c, "CONFIG", "SET", "requirepass", "pw"); v.Text() != "OK" {
			t.Fatalf("RESP%d CONFIG SET requirepass: %v", proto, v)
		}
		// The connection that set it stays authenticated, as in Redis.
		if v := do(t, c, "SET", "k", "v"); v.Text() != "OK" {
			t.Errorf("RESP%d SET after CONFIG SET requirepass: %v", proto, v)
		}
		if got := configValue(t, c, "requirepass"); got != "pw" {
			t.Errorf("RESP%d CONFIG GET requirepass = %q, want pw", proto, got)
		}
		// A blocking command takes a fresh node connection.
		if v := do(t, c, "BLPOP", "nolist", "0.05"); v.Kind != difftest.NullArray && v.Kind != difftest.Null {
			t.Errorf("RESP%d BLPOP on an empty list: %v, want nil", proto, v)
		}

		other := dial(t, cl.Addr, 2)
		if v := do(t, other, "GET", "k"); v.Text() != resp.ErrNoAuth {
			t.Errorf("GET on a new connection without AUTH: %v", v)
		}
		if v := do(t, other, "AUTH", "pw"); v.Text() != "OK" {
			t.Errorf("AUTH pw: %v", v)
		}
		if v := do(t, other, "GET", "k"); v.Text() != "v" {
			t.Errorf("GET after AUTH: %v", v)
		}

		for _, addr := range cl.NodeAddrs {
			n := dial(t, addr, 2)
			if got := configValue(t, n, "requirepass"); got != "" {
				t.Errorf("node %s requirepass = %q, want it unchanged (empty)", addr, got)
			}
		}

		if v := do(t, c, "CONFIG", "SET", "requirepass", ""); v.Text() != "OK" {
			t.Fatalf("CONFIG SET requirepass '': %v", v)
		}
		if v := do(t, dial(t, cl.Addr, 2), "GET", "k"); v.Text() != "v" {
			t.Errorf("GET without AUTH once the password is removed: %v", v)
		}
	}
}

// TestConfigSetMaxClientsIsTheProxys: CONFIG SET maxclients caps the
// proxy's clients (CONFIG GET and INFO show it) and not the nodes'.
func TestConfigSetMaxClientsIsTheProxys(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{})
	c := dial(t, cl.Addr, 2)
	if v := do(t, c, "CONFIG", "SET", "maxclients", "3"); v.Text() != "OK" {
		t.Fatalf("CONFIG SET maxclients 3: %v", v)
	}
	if got := configValue(t, c, "maxclients"); got != "3" {
		t.Errorf("CONFIG GET maxclients = %q, want 3", got)
	}
	if got := infoField(t, c, "clients", "maxclients"); got != "3" {
		t.Errorf("INFO maxclients = %q, want 3", got)
	}
	for _, addr := range cl.NodeAddrs {
		if got := configValue(t, dial(t, addr, 2), "maxclients"); got != "10000" {
			t.Errorf("node %s maxclients = %q, want it unchanged", addr, got)
		}
	}
	dial(t, cl.Addr, 2)
	dial(t, cl.Addr, 2)
	closedWithout(t, rawDial(t, cl.Addr), "-"+resp.ErrMaxClients+"\r\n")
	// Every client still reaches the nodes.
	if v := do(t, c, "SET", "k", "v"); v.Text() != "OK" {
		t.Errorf("SET at the client cap: %v", v)
	}
}

// TestConfigThroughProxyLikeNode: CONFIG SET's refusals through the proxy
// are a node's (themselves checked against redis-server in the node's
// tests), and CONFIG GET shows the proxy's own address.
func TestConfigThroughProxyLikeNode(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{QueryBufferLimit: 3 << 20, ClientOutputLimit: 5 << 20})
	for _, proto := range []int{2, 3} {
		p, n := dial(t, cl.Addr, proto), dial(t, cl.NodeAddrs[0], proto)
		for _, args := range [][]string{
			{"CONFIG", "SET", "nosuchparam", "1"},
			{"CONFIG", "SET", "appendonly", "yes"},
			{"CONFIG", "SET", "maxclients", "x"},
			{"CONFIG", "SET", "maxclients", "0"},
			{"CONFIG", "SET", "maxclients", "5", "MAXCLIENTS", "6"},
			{"CONFIG", "SET", "maxclients", "5", "requirepass"},
			{"CONFIG", "SET", "requirepass", "a", "appendonly", "yes"},
			{"CONFIG", "SET", "maxclients"},
			// To the value the node has: accepted, unless Redis calls
			// the parameter immutable or protected.
			{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
			{"CONFIG", "SET", "appendonly", "no", "maxmemory-policy", "NOEVICTION"},
			{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
			{"CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory-policy", "noeviction"},
			{"CONFIG", "SET", "databases", "16"},
			{"CONFIG", "SET", "dir", "/nonexistent"},
			// Names before values (the node's order is checked against
			// redis-server).
			{"CONFIG", "SET", "appendonly", "abc", "foo", "bar"},
			{"CONFIG", "SET", "save", "yes", "databases", "abc"},
			{"CONFIG", "SET", "appendonly", "abc", "appendonly", "yes"},
			{"CONFIG", "SET", "maxclients", "x", "dir", "/x"},
			// Values Redis refuses get Redis's reason, whoever holds
			// the parameter.
			{"CONFIG", "SET", "maxmemory", "abc"},
			{"CONFIG", "SET", "proto-max-bulk-len", "1"},
			{"CONFIG", "SET", "client-query-buffer-limit", "abc"},
			{"CONFIG", "SET", "client-output-buffer-limit", "normal 0 0"},
			{"CONFIG", "SET", "maxmemory-clients", "101%"},
			{"CONFIG", "SET", "notify-keyspace-events", "Q"},
			{"CONFIG", "SET", "lfu-decay-time", "-5"},
			{"CONFIG", "GET"},
			{"CONFIG", "GET", "maxmemory*"},
			{"CONFIG", "GET", "nosuch"},
		} {
			if got, want := do(t, p, args...), do(t, n, args...); !difftest.Equal(got, want) {
				t.Errorf("RESP%d %q: proxy %v, node %v", proto, args, got, want)
			}
		}
		if got := configValue(t, p, "requirepass"); got != "" {
			t.Errorf("requirepass after refused CONFIG SETs = %q", got)
		}
		// maxmemory is each node's own (a node sets it; the proxy, one
		// endpoint over many nodes, does not pick a node for it).
		if got, want := do(t, p, "CONFIG", "SET", "maxmemory", "1mb"), difftest.Err("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config"); !difftest.Equal(got, want) {
			t.Errorf("RESP%d CONFIG SET maxmemory 1mb through the proxy: %v, want %v", proto, got, want)
		}
		if got := configValue(t, n, "maxmemory"); got != "0" {
			t.Errorf("a node's maxmemory after CONFIG SET through the proxy = %q, want 0", got)
		}
		if got := configValue(t, p, "client-query-buffer-limit"); got != "3145728" {
			t.Errorf("CONFIG GET client-query-buffer-limit = %q, want the proxy's 3145728", got)
		}
		if got, want := configValue(t, p, "client-output-buffer-limit"), "normal 5242880 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"; got != want {
			t.Errorf("CONFIG GET client-output-buffer-limit = %q, want the proxy's %q", got, want)
		}
		// Parameters with no counterpart read Redis's defaults, as on a node.
		if got := configValue(t, p, "stream-node-max-entries"); got != "100" {
			t.Errorf("CONFIG GET stream-node-max-entries = %q, want Redis's 100", got)
		}
		_, port := splitHostPort(t, cl.Addr)
		if got := configValue(t, p, "port"); got != port {
			t.Errorf("CONFIG GET port = %q, want the proxy's %s", got, port)
		}
		all := do(t, p, "CONFIG", "GET", "*")
		found := false
		for i := 0; i+1 < len(all.Elems); i += 2 {
			if string(all.Elems[i].Str) == "port" {
				found = string(all.Elems[i+1].Str) == port
			}
		}
		if !found {
			t.Errorf("CONFIG GET * does not give the proxy's port %s: %v", port, all)
		}
	}
}

func splitHostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			if _, err := strconv.Atoi(addr[i+1:]); err != nil {
				t.Fatalf("bad address %q", addr)
			}
			return addr[:i], addr[i+1:]
		}
	}
	t.Fatalf("bad address %q", addr)
	return "", ""
}

// TestClientAnnounce: a proxy given ClientAnnounce shows that address to
// cluster-aware clients, whatever address they connected to (a
// container's published port: the proxy sees only its own side of the
// mapping).
func TestClientAnnounce(t *testing.T) {
	cl := proxytest.Start(t, 1, proxy.Options{ClientAnnounce: "10.1.2.3:7000"})
	for _, proto := range []int{2, 3} {
		c := dial(t, cl.Addr, proto)
		v := do(t, c, "CLUSTER", "SLOTS")
		if len(v.Elems) != 1 || len(v.Elems[0].Elems) != 3 {
			t.Fatalf("RESP%d CLUSTER SLOTS: %v", proto, v)
		}
		owner := v.Elems[0].Elems[2]
		if len(owner.Elems) < 2 || string(owner.Elems[0].Str) != "10.1.2.3" || owner.Elems[1].Int != 7000 {
			t.Errorf("RESP%d CLUSTER SLOTS owner: %v, want 10.1.2.3 7000", proto, owner)
		}
		if nodes := do(t, c, "CLUSTER", "NODES").Text(); !strings.Contains(nodes, " 10.1.2.3:7000@17000 myself,master ") {
			t.Errorf("RESP%d CLUSTER NODES: %q", proto, nodes)
		}
	}
	// Without it, the address the client connected to.
	plain := proxytest.Start(t, 1, proxy.Options{})
	host, port := splitHostPort(t, plain.Addr)
	if nodes := do(t, dial(t, plain.Addr, 2), "CLUSTER", "NODES").Text(); !strings.Contains(nodes, " "+host+":"+port+"@") {
		t.Errorf("CLUSTER NODES without ClientAnnounce: %q, want %s:%s", nodes, host, port)
	}
}
