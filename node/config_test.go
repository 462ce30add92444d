package node_test

import (
	"net"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
)

// configGet returns CONFIG GET's reply as name -> value.
func configGet(t *testing.T, c *difftest.Conn, patterns ...string) map[string]string {
	t.Helper()
	v := connDo(t, c, append([]string{"CONFIG", "GET"}, patterns...)...)
	if v.Kind != difftest.Array && v.Kind != difftest.Map {
		t.Fatalf("CONFIG GET %v: %s", patterns, v)
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		out[string(v.Elems[i].Str)] = string(v.Elems[i+1].Str)
	}
	if len(out)*2 != len(v.Elems) {
		t.Errorf("CONFIG GET %v repeats a name: %s", patterns, v)
	}
	return out
}

func TestConfigGetReportsNode(t *testing.T) {
	n := startNode(t, node.Options{RequirePass: "pw", MaxClients: 77, QueryBufferLimit: 2 << 20}, nil)
	c := connDial(t, n.addr, 3)
	connDo(t, c, "AUTH", "pw")
	host, port, _ := net.SplitHostPort(n.addr)
	got := configGet(t, c, "port", "bind", "requirepass", "maxclients", "cluster-enabled", "client-query-buffer-limit", "protected-mode")
	want := map[string]string{"port": port, "bind": host, "requirepass": "pw", "maxclients": "77", "cluster-enabled": "yes",
		"client-query-buffer-limit": "2097152", "protected-mode": "no"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("CONFIG GET %s = %q, want %q", k, got[k], v)
		}
	}
	if all := configGet(t, c, "*"); len(all) < 20 || all["maxmemory-policy"] != "noeviction" {
		t.Errorf("CONFIG GET *: %v", all)
	}
	if got := configGet(t, c, "*max*", "maxmemory"); got["maxmemory"] != "0" || got["maxclients"] != "77" {
		t.Errorf("CONFIG GET *max* maxmemory: %v", got)
	}
}

// TestConfigSetRequirePass: a new password applies to new connections;
// connections already authenticated stay so, as in Redis.
func TestConfigSetRequirePass(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	a := connDial(t, n.addr, 2)
	connExpect(t, a, difftest.Simple("OK"), "CONFIG", "SET", "requirepass", "s3cret")
	connExpect(t, a, difftest.Simple("PONG"), "PING")
	b := connDial(t, n.addr, 2)
	connExpect(t, b, difftest.Err("NOAUTH Authentication required."), "PING")
	connExpect(t, b, difftest.Err("WRONGPASS invalid username-password pair or user is disabled."), "AUTH", "other")
	connExpect(t, b, difftest.Simple("OK"), "AUTH", "s3cret")
	if got := configGet(t, b, "requirepass")["requirepass"]; got != "s3cret" {
		t.Errorf("requirepass = %q", got)
	}

	// All or nothing: a bad value leaves the good one unapplied.
	connExpect(t, a, difftest.Err("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"),
		"CONFIG", "SET", "requirepass", "changed", "MAXCLIENTS", "many")
	if got := configGet(t, a, "requirepass")["requirepass"]; got != "s3cret" {
		t.Errorf("after failed CONFIG SET requirepass = %q", got)
	}

	connExpect(t, a, difftest.Simple("OK"), "CONFIG", "SET", "requirepass", "")
	connExpect(t, connDial(t, n.addr, 2), difftest.Simple("PONG"), "PING")
}

// TestConfigSetMaxClients: the limit applies to the next connection.
func TestConfigSetMaxClients(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	a := connDial(t, n.addr, 2)
	connExpect(t, a, difftest.Simple("OK"), "CONFIG", "SET", "maxclients", "2")
	// As in Redis 7.0, whose two Lua engines' clients are 1 and 2, the
	// first connection is client 3.
	connExpect(t, a, difftest.Int(3), "CLIENT", "ID")
	second := connDial(t, n.addr, 2)
	connExpect(t, second, difftest.Int(4), "CLIENT", "ID")
	third := connDial(t, n.addr, 2)
	v, err := third.Receive()
	if err != nil || v.Text() != "ERR max number of clients + cluster connections reached" {
		t.Fatalf("third client: %s %v", v, err)
	}
	if got := configGet(t, a, "maxclients")["maxclients"]; got != "2" {
		t.Errorf("maxclients = %q", got)
	}
	// As Redis: the refused third counts as rejected, not as received.
	stats := string(connDo(t, a, "INFO", "stats").Str)
	for _, want := range []string{"total_connections_received:2\r\n", "rejected_connections:1\r\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("INFO stats lacks %q:\n%s", want, stats)
		}
	}
	// A refused connection takes no id, as in Redis.
	second.Close()
	waitFor(t, func() bool { return strings.Count(string(connDo(t, a, "CLIENT", "LIST").Str), "\n") == 1 })
	connExpect(t, connDial(t, n.addr, 2), difftest.Int(5), "CLIENT", "ID")
	connExpect(t, a, difftest.Err("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - can't set immutable config"),
		"CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	connExpect(t, a, difftest.Err("ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"),
		"CONFIG", "SET", "dir", "/tmp")
}
