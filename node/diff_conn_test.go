package node_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Differential tests of the connection and server commands against a real
// cluster-mode redis-server, in RESP2 and RESP3. Replies that carry values
// private to each server (client ids, addresses, clocks, ports) go through
// a normalizer that keeps everything else; the rest must match exactly.
//
// The oracle is shared with other tests: nothing here changes its
// configuration or kills connections other than the test's own.

// connStep is one command and, when its reply holds per-server values, the
// normalizer applied to both replies before comparing.
type connStep struct {
	args []string
	norm func(difftest.Value) difftest.Value
}

func cs(args ...string) connStep { return connStep{args: args} }

func csNorm(norm func(difftest.Value) difftest.Value, args ...string) connStep {
	return connStep{args: args, norm: norm}
}

func runConnSteps(t *testing.T, c *difftest.ConnPair, steps []connStep) {
	t.Helper()
	for _, st := range steps {
		a, b := c.Both(t, st.args...)
		if st.norm != nil {
			a, b = st.norm(a), st.norm(b)
		}
		c.Compare(t, st.args, a, b)
	}
}

// helloNorm blanks the client id in a HELLO reply.
func helloNorm(v difftest.Value) difftest.Value {
	if v.Kind != difftest.Map && v.Kind != difftest.Array {
		return v
	}
	out := v
	out.Elems = append([]difftest.Value(nil), v.Elems...)
	for i := 0; i+1 < len(out.Elems); i += 2 {
		if string(out.Elems[i].Str) == "id" {
			out.Elems[i+1] = difftest.Int(0)
		}
	}
	return out
}

// clientLineNorm keeps the CLIENT INFO/LIST fields that both servers must
// agree on and drops addresses, ids, fds, times and buffer sizes.
func clientLineNorm(v difftest.Value) difftest.Value {
	if v.Kind != difftest.Bulk && v.Kind != difftest.Verbatim {
		return v
	}
	keep := map[string]bool{"name": true, "flags": true, "db": true, "sub": true, "psub": true,
		"ssub": true, "multi": true, "events": true, "cmd": true, "user": true, "redir": true, "resp": true}
	text := string(v.Str)
	prefix := ""
	if v.Kind == difftest.Verbatim {
		prefix, text = text[:4], text[4:]
	}
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		var fields []string
		for _, f := range strings.Fields(line) {
			if k, _, _ := strings.Cut(f, "="); keep[k] {
				fields = append(fields, f)
			}
		}
		lines = append(lines, strings.Join(fields, " "))
	}
	out := v
	out.Str = []byte(prefix + strings.Join(lines, "\n"))
	return out
}

// timeNorm keeps the shape of a TIME reply and checks it is plausible.
func timeNorm(v difftest.Value) difftest.Value {
	if v.Kind != difftest.Array || len(v.Elems) != 2 {
		return v
	}
	return difftest.ArrayOf(difftest.BulkOf("secs"), difftest.BulkOf("usecs"))
}

// pairsNorm sorts the key/value pairs of a CONFIG GET reply (Redis lists
// them in hash-table order) and drops the ones whose value is the
// server's own (port, bind).
func pairsNorm(v difftest.Value) difftest.Value {
	if v.Kind != difftest.Map && v.Kind != difftest.Array {
		return v
	}
	type kv struct{ k, v difftest.Value }
	var pairs []kv
	for i := 0; i+1 < len(v.Elems); i += 2 {
		switch strings.ToLower(string(v.Elems[i].Str)) {
		case "port", "bind":
			continue
		}
		pairs = append(pairs, kv{v.Elems[i], v.Elems[i+1]})
	}
	sort.Slice(pairs, func(i, j int) bool { return bytes.Compare(pairs[i].k.Str, pairs[j].k.Str) < 0 })
	out := v
	out.Elems = nil
	for _, p := range pairs {
		out.Elems = append(out.Elems, p.k, p.v)
	}
	return out
}

// configAllNorm is pairsNorm for CONFIG GET * and wide patterns: it also
// drops what the two servers were started with differently (directories,
// cluster bus settings, log level) and where the node reports its own
// truth by design (tcp-keepalive is Go's 15 s, protected-mode no, and the
// persistence file names Redis would use are not the node's;
// node/config.go).
func configAllNorm(v difftest.Value) difftest.Value {
	v = pairsNorm(v)
	out := v
	out.Elems = nil
	for i := 0; i+1 < len(v.Elems); i += 2 {
		switch string(v.Elems[i].Str) {
		case "dir", "cluster-port", "cluster-config-file", "loglevel", "tcp-keepalive", "protected-mode",
			"appendfilename", "appenddirname", "dbfilename":
			continue
		}
		out.Elems = append(out.Elems, v.Elems[i], v.Elems[i+1])
	}
	return out
}

func TestDiffConnCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []connStep
	}{
		{"persistence argument errors", []connStep{
			// Only what cannot save or stop either server: the oracle is
			// shared, and this node has no --dir.
			cs("SHUTDOWN", "ABORT"), cs("SHUTDOWN", "FOO"), cs("SHUTDOWN", "NOSAVE", "SAVE"),
			cs("SHUTDOWN", "ABORT", "NOW"), cs("SHUTDOWN", "FORCE", "ABORT"), cs("shutdown", "abort", "abort"),
			cs("BGSAVE", "FOO"), cs("BGSAVE", "SCHEDULE", "X"), cs("SAVE", "X"), cs("LASTSAVE", "X"),
			cs("BGREWRITEAOF", "X"),
			cs("MULTI"), cs("SHUTDOWN"), cs("SAVE"), cs("EXEC"),
		}},
		{"ping echo", []connStep{
			cs("PING"), cs("PING", "hello"), cs("PING", "a", "b"), cs("ping", ""),
			cs("ECHO"), cs("ECHO", "x"), cs("ECHO", ""), cs("ECHO", "a", "b"),
		}},
		{"hello", []connStep{
			csNorm(helloNorm, "HELLO"), csNorm(helloNorm, "HELLO", "2"),
			cs("HELLO", "4"), cs("HELLO", "1"), cs("HELLO", "0"), cs("HELLO", "-1"),
			cs("HELLO", "abc"), cs("HELLO", "3.0"), cs("HELLO", "99999999999999999999"),
			cs("HELLO", "3", "SETNAME"), cs("HELLO", "3", "FOO"), cs("HELLO", "3", "AUTH", "default"),
			cs("HELLO", "2", "SETNAME", "a b"), cs("HELLO", "2", "SETNAME", "é"),
			cs("HELLO", "4", "SETNAME", "x"),
			csNorm(helloNorm, "HELLO", "2", "SETNAME", "n1"), cs("CLIENT", "GETNAME"),
			cs("HELLO", "2", "SETNAME", "n2", "FOO"), cs("CLIENT", "GETNAME"),
			csNorm(helloNorm, "HELLO", "2", "setname", "a", "SETNAME", "b"), cs("CLIENT", "GETNAME"),
			csNorm(helloNorm, "HELLO", "2", "SETNAME", ""), cs("CLIENT", "GETNAME"),
			csNorm(helloNorm, "HELLO", "2", "AUTH", "default", "anything"),
			cs("HELLO", "2", "AUTH", "nobody", "x"),
			// Switching protocol changes the reply types of what follows.
			csNorm(helloNorm, "HELLO", "3"), cs("GET", "missing"), cs("CLIENT", "GETNAME"),
			csNorm(helloNorm, "HELLO"), csNorm(helloNorm, "HELLO", "2"), cs("GET", "missing"),
		}},
		{"auth without requirepass", []connStep{
			cs("AUTH"), cs("AUTH", "x"), cs("AUTH", "default"), cs("AUTH", "default", "x"),
			cs("AUTH", "nobody", "x"), cs("AUTH", "a", "b", "c"),
		}},
		{"select", []connStep{
			cs("SELECT", "0"), cs("SELECT", "1"), cs("SELECT", "-1"), cs("SELECT", "16"),
			cs("SELECT", "abc"), cs("SELECT", "99999999999999999999"), cs("SELECT", "2147483648"),
			cs("SELECT", "00"), cs("SELECT", " 0"), cs("SELECT"), cs("SELECT", "0", "1"),
		}},
		{"time and cluster", []connStep{
			csNorm(timeNorm, "TIME"), cs("TIME", "x"), cs("ROLE"), cs("ROLE", "x"),
			cs("CLUSTER", "KEYSLOT", "foo"), cs("CLUSTER", "KEYSLOT", "{user1}.a"), cs("CLUSTER", "KEYSLOT", ""),
			cs("CLUSTER", "KEYSLOT"), cs("CLUSTER", "KEYSLOT", "a", "b"), cs("CLUSTER", "HELP"),
			cs("cluster", "help", "x"),
		}},
		{"client", []connStep{
			cs("CLIENT"), cs("CLIENT", "FOO"), cs("CLIENT", "HELP"), cs("CLIENT", "ID", "x"),
			cs("CLIENT", "GETNAME"), cs("CLIENT", "SETNAME"), cs("CLIENT", "SETNAME", "a", "b"),
			cs("CLIENT", "SETNAME", "a b"), cs("CLIENT", "SETNAME", "a\nb"), cs("CLIENT", "SETNAME", "é"),
			cs("CLIENT", "SETNAME", "conn-1"), cs("CLIENT", "GETNAME"), cs("CLIENT", "GETNAME", "x"),
			csNorm(clientLineNorm, "CLIENT", "INFO"), csNorm(clientLineNorm, "CLIENT", "LIST", "ID", "0"),
			cs("CLIENT", "SETNAME", ""), cs("CLIENT", "GETNAME"),
			cs("CLIENT", "LIST", "TYPE", "foo"), cs("CLIENT", "LIST", "TYPE", "pubsub"),
			cs("CLIENT", "LIST", "TYPE", "master"), cs("CLIENT", "LIST", "TYPE", "replica"),
			cs("CLIENT", "LIST", "TYPE", "slave"), cs("CLIENT", "LIST", "ID"), cs("CLIENT", "LIST", "ID", "abc"),
			cs("CLIENT", "LIST", "ID", "99999", "x"), cs("CLIENT", "LIST", "ID", "99999"),
			cs("CLIENT", "LIST", "FOO"), cs("CLIENT", "LIST", "TYPE", "normal", "x"),
		}},
		{"client kill errors", []connStep{
			cs("CLIENT", "KILL"), cs("CLIENT", "KILL", "1.2.3.4:5"), cs("CLIENT", "KILL", "ID"),
			cs("CLIENT", "KILL", "ID", "abc"), cs("CLIENT", "KILL", "ID", "0"), cs("CLIENT", "KILL", "ID", "-5"),
			cs("CLIENT", "KILL", "ID", "999999"), cs("CLIENT", "KILL", "FOO", "bar"),
			cs("CLIENT", "KILL", "TYPE", "foo"), cs("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "maybe"),
			cs("CLIENT", "KILL", "USER", "nobody"), cs("CLIENT", "KILL", "ADDR", "1.1.1.1:1", "LADDR", "x"),
			cs("CLIENT", "KILL", "ID", "1", "ID"), cs("CLIENT", "KILL", "MAXAGE", "10"),
			cs("CLIENT", "KILL", "TYPE", "pubsub"), cs("CLIENT", "KILL", "a", "b"),
		}},
		{"config", []connStep{
			cs("CONFIG"), cs("CONFIG", "FOO"), cs("CONFIG", "HELP"), cs("CONFIG", "GET"),
			csNorm(pairsNorm, "CONFIG", "GET", "maxmemory"), csNorm(pairsNorm, "CONFIG", "GET", "MAXMEMORY"),
			csNorm(pairsNorm, "CONFIG", "GET", "maxmemory*"), csNorm(pairsNorm, "CONFIG", "GET", "Max*"),
			csNorm(pairsNorm, "CONFIG", "GET", "maxmemory", "maxmemory-policy", "maxmemory"),
			csNorm(pairsNorm, "CONFIG", "GET", "save", "appendonly", "databases", "cluster-enabled",
				"proto-max-bulk-len", "timeout", "requirepass", "notify-keyspace-events", "lua-time-limit",
				"busy-reply-threshold", "maxclients", "hz", "appendfsync"),
			csNorm(pairsNorm, "CONFIG", "GET", "slowlog-*"), csNorm(pairsNorm, "CONFIG", "GET", "[m]axclients"),
			csNorm(pairsNorm, "CONFIG", "GET", "maxclient?"), csNorm(pairsNorm, "CONFIG", "GET", "nosuch"),
			csNorm(pairsNorm, "CONFIG", "GET", "nosuch*"),
			csNorm(pairsNorm, "CONFIG", "GET", "stream-node-max-entries"), csNorm(pairsNorm, "CONFIG", "GET", "list-max-*"),
			csNorm(pairsNorm, "CONFIG", "GET", "hash-max-*"), csNorm(pairsNorm, "CONFIG", "GET", "slave*"),
			csNorm(pairsNorm, "CONFIG", "GET", "Hll-Sparse-Max-Bytes"), csNorm(pairsNorm, "CONFIG", "GET", "cluster-*-timeout"),
			csNorm(configAllNorm, "CONFIG", "GET", "*"), csNorm(configAllNorm, "CONFIG", "GET", "*", "maxmemory"),
			cs("CONFIG", "SET"), cs("CONFIG", "SET", "maxclients"), cs("CONFIG", "SET", "foo", "bar"),
			cs("CONFIG", "SET", "a", "b", "c"), cs("CONFIG", "SET", "maxclients", "10", "a"),
			cs("CONFIG", "SET", "maxclients", "abc"), cs("CONFIG", "SET", "MAXCLIENTS", "0"),
			cs("CONFIG", "SET", "maxclients", "-1"), cs("CONFIG", "SET", "maxclients", "99999999999"),
			cs("CONFIG", "SET", "maxclients", "10", "maxclients", "20"),
			// Names are checked before values, in order; the first
			// problem among the names is the error.
			cs("CONFIG", "SET", "appendonly", "abc", "foo", "bar"), cs("CONFIG", "SET", "save", "yes", "databases", "abc"),
			cs("CONFIG", "SET", "appendonly", "abc", "appendonly", "yes"), cs("CONFIG", "SET", "maxmemory", "abc", "foo", "bar"),
			cs("CONFIG", "SET", "maxmemory", "abc", "databases", "1"), cs("CONFIG", "SET", "hz", "11", "foo", "bar"),
			cs("CONFIG", "SET", "databases", "1", "foo", "bar"), cs("CONFIG", "SET", "foo", "bar", "databases", "1"),
			cs("CONFIG", "SET", "dir", "/x", "databases", "1"), cs("CONFIG", "SET", "maxclients", "x", "dir", "/x"),
			cs("CONFIG", "SET", "hz", "10", "HZ", "10"),
			cs("CONFIG", "SET", "", "x"), cs("CONFIG", "SET", "", "2", "daemonize", "no"),
			cs("CONFIG", "SET", "maxclients", "10", "foo", "2"), cs("CONFIG", "SET", "foo", "1", "maxclients", "x"),
			cs("CONFIG", "SET", "databases", "4"), cs("CONFIG", "SET", "cluster-enabled", "no"),
			// Set to the value they have: accepted unless Redis calls the
			// parameter immutable or protected.
			cs("CONFIG", "SET", "maxmemory-policy", "noeviction"), cs("CONFIG", "SET", "maxmemory-policy", "NoEviction"),
			cs("CONFIG", "SET", "appendfsync", "everysec", "timeout", "0"), cs("CONFIG", "SET", "hz", "10"),
			cs("CONFIG", "SET", "databases", "16"), cs("CONFIG", "SET", "daemonize", "no"),
			cs("CONFIG", "SET", "dbfilename", "dump.rdb"), cs("CONFIG", "SET", "dir", "/nonexistent"),
			cs("CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory-policy", "noeviction"),
			cs("CONFIG", "SET", "maxmemory", "0mb"), cs("CONFIG", "SET", "maxmemory", "0GB"),
			cs("CONFIG", "SET", "proto-max-bulk-len", "512mb"), cs("CONFIG", "SET", "proto-max-bulk-len", "536870912b"),
			// Parameters Redis changes at run time and the node keeps
			// fixed: a value Redis would refuse gets Redis's reason.
			cs("CONFIG", "SET", "appendonly", "maybe"), cs("CONFIG", "SET", "appendonly", "1"),
			cs("CONFIG", "SET", "appendfsync", "bogus"), cs("CONFIG", "SET", "maxmemory-policy", "bogus"),
			cs("CONFIG", "SET", "save", "bogus"), cs("CONFIG", "SET", "save", "3600"), cs("CONFIG", "SET", "save", "-1 1"),
			cs("CONFIG", "SET", "timeout", "x"), cs("CONFIG", "SET", "hz", "1.5"), cs("CONFIG", "SET", "loglevel", "x"),
			cs("CONFIG", "SET", "activerehashing", "x"), cs("CONFIG", "SET", "lazyfree-lazy-eviction", "1"),
			cs("CONFIG", "SET", "appendfsync", "everysec", "appendonly", "maybe"),
			cs("CONFIG", "SET", "appendonly", "maybe", "maxclients", "x"),
			cs("CONFIG", "SET", "sanitize-dump-payload", "x"), cs("CONFIG", "SET", "oom-score-adj", "x"),
			cs("CONFIG", "SET", "tls-auth-clients", "x"),
			cs("CONFIG", "RESETSTAT", "x"), cs("CONFIG", "RESETSTAT"), cs("CONFIG", "REWRITE"), cs("CONFIG", "REWRITE", "x"), cs("config", "rewrite"),
		}},
	}
	for _, proto := range []int{2, 3} {
		for _, tt := range tests {
			t.Run(tt.name+"/resp"+string(rune('0'+proto)), func(t *testing.T) {
				p := difftest.Start(t)
				runConnSteps(t, p.NewConnProto(t, proto), tt.steps)
			})
		}
	}
}

// TestDiffResetConnection checks RESET after changing every piece of
// connection state it restores.
func TestDiffResetConnection(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConnProto(t, 3)
	runConnSteps(t, c, []connStep{
		cs("CLIENT", "SETNAME", "before"), cs("SET", "k", "v"), cs("WATCH", "k"), cs("MULTI"), cs("GET", "k"),
		cs("RESET"), cs("RESET", "x"),
		// Back to RESP2, no name, no transaction, no watch.
		cs("GET", "missing"), cs("CLIENT", "GETNAME"), cs("EXEC"), csNorm(clientLineNorm, "CLIENT", "INFO"),
	})
}

// needClientSub fails a test whose CLIENT subcommand is missing from the
// command table (slots/commands.txt), so that dropping it from the table
// cannot pass silently.
func needClientSub(t *testing.T, sub string) {
	t.Helper()
	if slots.LookupSub(slots.Lookup([]byte("client")), []byte(sub)) == nil {
		t.Fatalf("CLIENT %s is not in the slots command table", sub)
	}
}

func TestDiffClientNoEvict(t *testing.T) {
	needClientSub(t, "no-evict")
	p := difftest.Start(t)
	runConnSteps(t, p.NewConnProto(t, 3), []connStep{
		cs("CLIENT", "NO-EVICT", "on"), csNorm(clientLineNorm, "CLIENT", "INFO"),
		cs("CLIENT", "NO-EVICT", "x"), cs("CLIENT", "NO-EVICT"), cs("CLIENT", "NO-EVICT", "OFF"),
		csNorm(clientLineNorm, "CLIENT", "INFO"),
		// RESET keeps NO-EVICT in Redis 7.0.
		cs("CLIENT", "NO-EVICT", "on"), cs("RESET"), csNorm(clientLineNorm, "CLIENT", "INFO"),
	})
}

// TestDiffClientReadonly: READONLY shows as CLIENT LIST's 'r' flag (before
// NO-EVICT's 'e'); READWRITE and RESET clear it.
func TestDiffClientReadonly(t *testing.T) {
	p := difftest.Start(t)
	runConnSteps(t, p.NewConn(t), []connStep{
		cs("READONLY"), csNorm(clientLineNorm, "CLIENT", "INFO"),
		cs("CLIENT", "NO-EVICT", "on"), csNorm(clientLineNorm, "CLIENT", "INFO"),
		cs("READWRITE"), csNorm(clientLineNorm, "CLIENT", "INFO"),
		cs("READONLY"), cs("RESET"), csNorm(clientLineNorm, "CLIENT", "INFO"),
		cs("READONLY", "x"), cs("READWRITE", "x"),
	})
}

// TestDiffClientReply checks CLIENT REPLY OFF and SKIP: the dropped replies
// must never arrive, so the next answered command gets its own reply.
func TestDiffClientReply(t *testing.T) {
	needClientSub(t, "reply")
	p := difftest.Start(t)
	c := p.NewConn(t)
	send := func(args ...string) {
		t.Helper()
		for _, conn := range []*difftest.Conn{c.Redis, c.Node} {
			if err := conn.Send(toArgs(args)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("CLIENT", "REPLY", "OFF")
	send("PING")
	send("GET")
	send("CLIENT", "REPLY", "SKIP") // no effect while OFF
	send("PING")
	c.Do(t, "CLIENT", "REPLY", "ON")
	send("CLIENT", "REPLY", "SKIP")
	send("ECHO", "skipped")
	c.Do(t, "ECHO", "answered")
	c.Do(t, "ECHO", "again")
	c.Do(t, "CLIENT", "REPLY", "x")
	send("CLIENT", "REPLY", "OFF")
	c.Do(t, "RESET") // turns replies back on, its own included
	c.Do(t, "ECHO", "after reset")
}

// TestDiffClientReplyInMulti: CLIENT REPLY OFF queued in a transaction
// drops the replies from there on, EXEC's array header included only if
// replies were off before EXEC: Redis writes the header first, so the
// bytes that arrive are a header promising more elements than follow.
// Compared byte for byte, as no RESP reader parses that.
func TestDiffClientReplyInMulti(t *testing.T) {
	needClientSub(t, "reply")
	p := difftest.Start(t)
	for _, script := range [][][]string{
		{{"MULTI"}, {"SET", "k", "v"}, {"CLIENT", "REPLY", "OFF"}, {"PING"}, {"EXEC"}, {"CLIENT", "REPLY", "ON"}, {"PING", "end"}},
		{{"MULTI"}, {"CLIENT", "REPLY", "OFF"}, {"EXEC"}, {"CLIENT", "REPLY", "ON"}, {"PING", "end"}},
		{{"MULTI"}, {"CLIENT", "REPLY", "OFF"}, {"GET", "k"}, {"CLIENT", "REPLY", "ON"}, {"ECHO", "x"}, {"EXEC"}, {"PING", "end"}},
		{{"CLIENT", "REPLY", "OFF"}, {"MULTI"}, {"PING"}, {"CLIENT", "REPLY", "ON"}, {"EXEC"}, {"PING", "end"}},
		{{"MULTI"}, {"CLIENT", "REPLY", "SKIP"}, {"PING"}, {"ECHO", "x"}, {"EXEC"}, {"PING", "skipped"}, {"PING", "end"}},
		{{"CLIENT", "REPLY", "SKIP"}, {"EXEC"}, {"MULTI"}, {"PING"}, {"EXEC"}, {"PING", "end"}},
		{{"MULTI"}, {"PING"}, {"CLIENT", "REPLY", "SKIP"}, {"EXEC"}, {"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "ON"}, {"PING", "end"}},
	} {
		for _, proto := range []int{2, 3} {
			c := p.NewConnProto(t, proto)
			var got [2]string
			for i, conn := range []*difftest.Conn{c.Redis, c.Node} {
				var req []byte
				for _, args := range script {
					req = resp.AppendCommand(req, toArgs(args))
				}
				nc := conn.NetConn()
				if _, err := nc.Write(req); err != nil {
					t.Fatal(err)
				}
				nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				var buf []byte
				chunk := make([]byte, 4096)
				for !bytes.HasSuffix(buf, []byte("+end\r\n")) && !bytes.HasSuffix(buf, []byte("$3\r\nend\r\n")) {
					n, err := nc.Read(chunk)
					if err != nil {
						t.Fatalf("%v RESP%d: reading after %q: %v", script, proto, buf, err)
					}
					buf = append(buf, chunk[:n]...)
				}
				got[i] = string(buf)
			}
			if got[0] != got[1] {
				t.Errorf("%v RESP%d:\nredis %q\nnode  %q", script, proto, got[0], got[1])
			}
		}
	}
}

// TestDiffQuit checks QUIT's reply and that both servers then close.
func TestDiffQuit(t *testing.T) {
	p := difftest.Start(t)
	for _, args := range [][]string{{"QUIT"}, {"QUIT", "extra", "args"}} {
		c := p.NewConn(t)
		c.Do(t, args...)
		for name, conn := range map[string]*difftest.Conn{"redis": c.Redis, "node": c.Node} {
			if err := expectClosed(conn.NetConn()); err != nil {
				t.Errorf("%s after %v: %v", name, args, err)
			}
		}
	}
}

// TestDiffInfo compares INFO's structure: the sections each argument
// selects, Redis's field names for every field the node prints, and the
// keyspace line.
func TestDiffInfo(t *testing.T) {
	p := difftest.Start(t)
	p.Do(t, "SET", "a", "1")
	p.Do(t, "SET", "b", "1", "EX", "1000")
	p.Do(t, "SET", "{b}c", "1", "PX", "500000")
	for _, args := range [][]string{
		{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "everything"}, {"INFO", "server", "clients"},
		{"INFO", "foo"}, {"INFO", "SERVER"}, {"INFO", "keyspace"}, {"INFO", "cluster"}, {"INFO", "server", "default"},
		{"INFO", "all", "commandstats"}, {"INFO", "foo", "bar"}, {"INFO", "modules"}, {"INFO", "everything", "foo"},
		{"INFO", "errorstats"}, {"INFO", "Persistence", "STATS"}, {"INFO", "replication", "cpu", "memory"},
	} {
		for _, proto := range []int{2, 3} {
			c := p.ConnPair
			if proto == 3 {
				c = p.NewConnProto(t, 3)
			}
			a, b := c.Both(t, args...)
			if a.Kind != b.Kind {
				t.Errorf("%v RESP%d: kinds %s vs %s", args, proto, a.Kind, b.Kind)
				continue
			}
			ra, rb := parseInfo(t, a), parseInfo(t, b)
			if got, want := sectionNames(rb), sectionNames(ra); got != want {
				t.Errorf("%v RESP%d: sections %s, redis %s", args, proto, got, want)
			}
			for sec, fields := range rb {
				for name := range fields {
					// Which commands and errors are listed depends on
					// what each server has run (the oracle is shared):
					// TestDiffCommandStats compares them.
					perCommand := strings.HasPrefix(name, "errorstat_") || strings.HasPrefix(name, "cmdstat_") ||
						strings.HasPrefix(name, "latency_percentiles_usec_")
					if _, ok := ra[sec][name]; !ok && !perCommand {
						t.Errorf("%v: field %s in section %s is not one of Redis's", args, name, sec)
					}
				}
			}
			if ks, ok := rb["Keyspace"]; ok {
				wantKS := stripAvgTTL(ra["Keyspace"]["db0"])
				if got := stripAvgTTL(ks["db0"]); got != wantKS {
					t.Errorf("%v: keyspace db0 %q, redis %q", args, got, wantKS)
				}
			}
		}
	}
}

// parseInfo splits an INFO reply into section -> field -> value, checking
// Redis's framing: "\r\n" line ends and one blank line between sections.
func parseInfo(t *testing.T, v difftest.Value) map[string]map[string]string {
	t.Helper()
	text := string(v.Str)
	if v.Kind == difftest.Verbatim {
		if !strings.HasPrefix(text, "txt:") {
			t.Fatalf("INFO verbatim without txt: %q", text)
		}
		text = text[4:]
	}
	out := map[string]map[string]string{}
	if text == "" {
		return out
	}
	if !strings.HasSuffix(text, "\r\n") || strings.HasSuffix(text, "\r\n\r\n") {
		t.Errorf("INFO text does not end in exactly one CRLF: %q", text[max(0, len(text)-20):])
	}
	var cur map[string]string
	for i, line := range strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n") {
		switch {
		case strings.Contains(line, "\n"):
			t.Fatalf("INFO line with a bare newline: %q", line)
		case strings.HasPrefix(line, "# "):
			cur = map[string]string{}
			out[line[2:]] = cur
		case line == "":
		case cur == nil:
			t.Fatalf("INFO line %d outside a section: %q", i, line)
		default:
			k, val, ok := strings.Cut(line, ":")
			if !ok {
				t.Errorf("INFO line without ':': %q", line)
			}
			cur[k] = val
		}
	}
	return out
}

func sectionNames(m map[string]map[string]string) string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func stripAvgTTL(s string) string {
	if i := strings.Index(s, ",avg_ttl="); i >= 0 {
		return s[:i]
	}
	return s
}

// expectClosed waits for the peer to close nc.
func expectClosed(nc net.Conn) error {
	nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	for {
		n, err := nc.Read(buf)
		if n > 0 {
			return errors.New("unexpected data: " + string(buf[:n]))
		}
		if errors.Is(err, io.EOF) || isReset(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func toArgs(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestDiffClusterModeRefusals: commands a cluster node refuses whatever
// their arguments (MOVE and SWAPDB: only db 0 exists; DEBUG: protected and
// disabled), alone and inside MULTI, in RESP2 and RESP3.
func TestDiffClusterModeRefusals(t *testing.T) {
	p := difftest.Start(t)
	for _, proto := range []int{2, 3} {
		p.DoProto(t, proto, "SET", "k", "v")
		for _, args := range [][]string{
			{"MOVE", "k", "1"}, {"MOVE", "k", "x"}, {"MOVE", "k"}, {"move", "missing", "0"},
			{"SWAPDB", "0", "1"}, {"SWAPDB", "x", "y"}, {"SWAPDB", "0"},
			{"DEBUG", "SLEEP", "0"}, {"DEBUG", "OBJECT", "k"}, {"DEBUG"},
		} {
			p.DoProto(t, proto, args...)
		}
	}
	c := p.NewConn(t)
	for _, args := range [][]string{
		{"MULTI"}, {"MOVE", "k", "1"}, {"SWAPDB", "0", "1"}, {"GET", "k"}, {"EXEC"},
		{"MULTI"}, {"DEBUG", "SLEEP", "0"}, {"GET", "k"}, {"EXEC"},
	} {
		c.Do(t, args...)
	}
}

// TestDiffClientListOtherConnections: another connection's CLIENT LIST
// line shows the transaction ('x', multi= with the commands queued while
// the transaction could still run), the changed WATCH ('d') and the last
// command looked up, also a rejected one (cmd=NULL when unknown).
func TestDiffClientListOtherConnections(t *testing.T) {
	p := difftest.Start(t)
	a, b := p.NewConn(t), p.NewConn(t)
	// Only A's and B's lines: the pair's other connections are set up
	// differently on each server.
	named := func(v difftest.Value) difftest.Value {
		v = clientLineNorm(v)
		var keep []string
		for _, line := range strings.Split(string(v.Str), "\n") {
			if strings.HasPrefix(line, "name=A ") || strings.HasPrefix(line, "name=B ") {
				keep = append(keep, line)
			}
		}
		v.Str = []byte(strings.Join(keep, "\n"))
		return v
	}
	list := func() connStep { return csNorm(named, "CLIENT", "LIST") }
	runConnSteps(t, a, []connStep{cs("CLIENT", "SETNAME", "A"), cs("WATCH", "{r}k")})
	runConnSteps(t, b, []connStep{cs("CLIENT", "SETNAME", "B"), list(), cs("SET", "{r}k", "1"), list()})
	runConnSteps(t, a, []connStep{cs("MULTI"), cs("GET", "{r}k"), cs("GET", "{r}k")})
	runConnSteps(t, b, []connStep{list()})
	runConnSteps(t, a, []connStep{cs("EXEC")})
	runConnSteps(t, b, []connStep{list()})
	runConnSteps(t, a, []connStep{cs("MULTI"), cs("SET", "{r}k", "2"), cs("GET", "{r}k")})
	runConnSteps(t, b, []connStep{list()})
	runConnSteps(t, a, []connStep{cs("CLIENT", "INFO"), csNorm(execNorm, "EXEC")})
	runConnSteps(t, b, []connStep{list()})
	// A queued command error dooms the transaction: nothing more is
	// counted.
	runConnSteps(t, a, []connStep{cs("MULTI"), cs("SET", "{r}k", "3"), cs("GET"), cs("GET", "{r}k")})
	runConnSteps(t, b, []connStep{list()})
	runConnSteps(t, a, []connStep{cs("DISCARD")})
	for _, bad := range [][]string{
		{"LPUSH", "{r}k"}, {"NOSUCH", "x"}, {"CLIENT", "NOSUCH"}, {"CLIENT", "SETNAME", "a", "b"},
		{"CONFIG", "NOSUCH"}, {"GET", "{r}k"},
	} {
		runConnSteps(t, a, []connStep{cs(bad...)})
		runConnSteps(t, b, []connStep{list()})
	}
}

// execNorm applies clientLineNorm to the replies inside an EXEC reply.
func execNorm(v difftest.Value) difftest.Value {
	out := v
	out.Elems = nil
	for _, e := range v.Elems {
		out.Elems = append(out.Elems, clientLineNorm(e))
	}
	return out
}

// TestDiffClientReplySkipReset: a SKIP applies to the RESET that follows
// it, which clears only REPLY OFF.
func TestDiffClientReplySkipReset(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConn(t)
	for _, conn := range []*difftest.Conn{c.Redis, c.Node} {
		for _, args := range [][]string{{"CLIENT", "REPLY", "SKIP"}, {"RESET"}} {
			if err := conn.Send(toArgs(args)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Do(t, "ECHO", "after reset")
	c.Do(t, "ECHO", "again")
}

// TestDiffPasswordCleared: clearing the password with CONFIG SET serves
// the clients that connected while it was set, as Redis's authRequired
// does (difftest.PasswordClearedScenario).
func TestDiffPasswordCleared(t *testing.T) {
	difftest.PasswordClearedScenario(t, difftest.Start(t))
}

// TestDiffUnauthenticated: before AUTH, a Redis command the node does not
// serve meets Redis's refusals (difftest.UnauthenticatedScenario).
func TestDiffUnauthenticated(t *testing.T) {
	difftest.UnauthenticatedScenario(t, difftest.Start(t))
}

// TestDiffCommandsProcessed: total_commands_processed counts what Redis's
// call() runs (difftest.CommandsProcessedScenario).
func TestDiffCommandsProcessed(t *testing.T) {
	difftest.CommandsProcessedScenario(t, difftest.Start(t))
}
