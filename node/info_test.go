package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
)

// infoFields returns INFO's fields (all sections) as name -> value.
func infoFields(t *testing.T, c *difftest.Conn, sections ...string) map[string]string {
	t.Helper()
	v := connDo(t, c, append([]string{"INFO"}, sections...)...)
	if v.Kind != difftest.Bulk && v.Kind != difftest.Verbatim {
		t.Fatalf("INFO: %s", v)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimPrefix(string(v.Str), "txt:"), "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = val
		}
	}
	return out
}

// TestInfoCounters checks the counters INFO derives from traffic and that
// CONFIG RESETSTAT zeroes them.
func TestInfoCounters(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	c := connDial(t, n.addr, 2)
	connDo(t, c, "SET", "s", "v")
	connDo(t, c, "INCR", "s")                   // ERR not an integer
	connDo(t, c, "NOSUCH")                      // ERR unknown command
	connDo(t, c, "HELLO", "4")                  // NOPROTO
	connDo(t, c, "MSET", "{a}1", "1", "b", "2") // CROSSSLOT
	connDo(t, c, "MULTI")
	connDo(t, c, "INCR", "s")
	connDo(t, c, "EXEC") // the INCR error inside EXEC counts too
	f := infoFields(t, c, "stats", "errorstats")
	want := map[string]string{
		"total_error_replies": "5", "errorstat_ERR": "count=3", "errorstat_NOPROTO": "count=1",
		"errorstat_CROSSSLOT": "count=1", "total_connections_received": "1",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
	if f["total_commands_processed"] == "0" || f["total_net_input_bytes"] == "0" {
		t.Errorf("traffic counters not counted: %v", f)
	}

	connExpect(t, c, difftest.Simple("OK"), "CONFIG", "RESETSTAT")
	f = infoFields(t, c, "stats", "errorstats")
	for _, k := range []string{"total_error_replies", "total_connections_received", "expired_keys"} {
		if f[k] != "0" {
			t.Errorf("after RESETSTAT %s = %q", k, f[k])
		}
	}
	if _, ok := f["errorstat_ERR"]; ok {
		t.Errorf("errorstats not reset: %v", f)
	}
}

// TestInfoKeyspace checks db0's counts and avg_ttl on a fixed clock, and
// that INFO inside EXEC reads the keyspace the transaction already holds.
func TestInfoKeyspace(t *testing.T) {
	clock := newFakeClock(time.Unix(1700000000, 0))
	n := startNode(t, node.Options{Now: clock.Now}, nil)
	c := connDial(t, n.addr, 3)
	if f := infoFields(t, c, "keyspace"); len(f) != 0 {
		t.Errorf("empty node keyspace section: %v", f)
	}
	connDo(t, c, "SET", "a", "1")
	connDo(t, c, "SET", "b", "1", "EX", "100")
	connDo(t, c, "SET", "c", "1", "PX", "200000")
	if got := infoFields(t, c, "keyspace")["db0"]; got != "keys=3,expires=2,avg_ttl=150000" {
		t.Errorf("db0:%s", got)
	}
	connDo(t, c, "MULTI")
	connDo(t, c, "SET", "d", "1")
	connDo(t, c, "INFO", "keyspace")
	v := connDo(t, c, "EXEC")
	if v.Kind != difftest.Array || len(v.Elems) != 2 || !strings.Contains(string(v.Elems[1].Str), "db0:keys=4,expires=2,") {
		t.Errorf("INFO in EXEC: %s", v)
	}
}

func TestInfoServerAndClients(t *testing.T) {
	n := startNode(t, node.Options{MaxClients: 50}, nil)
	c := connDial(t, n.addr, 2)
	// A reply on the second connection: the node has registered it (a
	// finished dial alone does not mean the node accepted it yet).
	connDo(t, connDial(t, n.addr, 2), "PING")
	f := infoFields(t, c)
	_, port, _ := strings.Cut(n.addr, ":")
	want := map[string]string{"redis_version": "7.0.15", "redis_mode": "cluster", "tcp_port": port,
		"connected_clients": "2", "maxclients": "50", "cluster_enabled": "1", "role": "master",
		"maxmemory_policy": "noeviction", "aof_enabled": "0"}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
	if len(f["run_id"]) != 40 {
		t.Errorf("run_id %q", f["run_id"])
	}
}

// TestDiffInfoFieldNames: these INFO sections list the fields
// redis-server 7.0.15 lists, in its order (the values are the node's own).
func TestDiffInfoFieldNames(t *testing.T) {
	p := difftest.Start(t)
	names := func(v difftest.Value) []string {
		var out []string
		for _, l := range strings.Split(string(v.Str), "\r\n") {
			if k, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
				out = append(out, k)
			}
		}
		return out
	}
	// errorstats lists the kinds of errors since the last reset: the
	// shared redis-server has served other tests.
	p.Both(t, "CONFIG", "RESETSTAT")
	p.Both(t, "SET", "s", "v")
	p.Both(t, "LPUSH", "s", "x")
	p.Both(t, "GET")
	// The counters of commands, socket reads and writes move as Redis's:
	// one read and one write per command sent alone.
	r, n := p.Both(t, "INFO", "stats")
	for _, k := range []string{"total_commands_processed", "total_reads_processed", "total_writes_processed", "total_error_replies"} {
		if got, want := infoValue(string(n.Str), k), infoValue(string(r.Str), k); got != want {
			t.Errorf("INFO stats %s: node %q, redis %q", k, got, want)
		}
	}
	for _, section := range []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "errorstats", "cluster", "keyspace"} {
		r, n := p.Both(t, "INFO", section)
		if got, want := names(n), names(r); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("INFO %s fields:\n node:  %v\n redis: %v", section, got, want)
		}
	}
	// Fields about the machine and the release read the same from both
	// servers on one machine.
	r, n = p.Both(t, "INFO", "server")
	for _, k := range []string{"redis_version", "os", "arch_bits", "process_supervised", "hz", "configured_hz", "io_threads_active"} {
		if got, want := infoValue(string(n.Str), k), infoValue(string(r.Str), k); got != want {
			t.Errorf("INFO server %s: node %q, redis %q", k, got, want)
		}
	}
	r, n = p.Both(t, "INFO", "memory")
	if got, want := infoValue(string(n.Str), "total_system_memory"), infoValue(string(r.Str), "total_system_memory"); got != want {
		t.Errorf("INFO memory total_system_memory: node %q, redis %q", got, want)
	}
}
