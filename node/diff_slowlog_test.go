package node_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffSlowlog logs every command (slowlog-log-slower-than 0) on the
// node and on redis-server and compares SLOWLOG's replies: which commands
// are logged (not those refused before they run, nor EXEC, nor a blocking
// pop that timed out; each command of a transaction; a blocked pop once
// served), their ids, arguments as Redis cuts and redacts them, client
// names, and the errors and trimming of SLOWLOG and its parameters. Times
// and durations are the servers' own: checked for sense, then blanked;
// client addresses are replaced by the test's name for the connection.
func TestDiffSlowlog(t *testing.T) {
	p := difftest.Start(t)
	t.Cleanup(func() {
		// The oracle is shared: back to Redis's defaults.
		p.Redis.DoStrings("CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128")
		p.Redis.DoStrings("SLOWLOG", "RESET")
	})
	c := p.ConnPair
	c2 := p.NewConn(t)
	c3 := p.NewConnProto(t, 3)
	peers := peerNames(map[string]*difftest.ConnPair{"c": c, "c2": c2, "c3": c3})
	get := func(args ...string) {
		t.Helper()
		a, b := c.Both(t, args...)
		c.Compare(t, args, slowlogNorm(t, a, peers.redis), slowlogNorm(t, b, peers.node))
	}

	c.Do(t, "CONFIG", "SET", "slowlog-log-slower-than", "0")
	c.Do(t, "SLOWLOG", "RESET")
	long := strings.Repeat("v", 300)
	many := []string{"MGET"}
	for i := range 40 {
		many = append(many, fmt.Sprint("{k}", i))
	}
	for _, args := range [][]string{
		{"SET", "{k}a", "1"},
		{"GET", "{k}a"},
		{"NOSUCHCOMMAND", "x"},                  // unknown: not run, not logged
		{"GET"},                                 // arity: not logged
		{"LPUSH", "{k}a", "x"},                  // WRONGTYPE: run, logged
		{"SET", "{k}long", long},                // cut to 128 bytes
		many,                                    // cut to 32 arguments
		{"AUTH", "secret"},                      // redacted
		{"AUTH", "user", "secret"},              // redacted
		{"HELLO", "5", "AUTH", "default", "pw"}, // NOPROTO before the redaction
		{"HELLO", "2", "SETNAME"},               // syntax error
		{"CONFIG", "SET", "requirepass", "", "maxclients", "10000"},
		{"CLIENT", "SETNAME", "worker-1"}, // the entry has the new name
		{"MULTI"},
		{"INCR", "{k}n"},
		{"GET", "{k}n"},
		{"EXEC"},
		{"MULTI"},
		{"GET", "{k}n"},
		{"GET"},
		{"EXEC"},
		{"CLIENT", "SETNAME", ""},
		{"SLOWLOG", "LEN"},
		{"SLOWLOG", "GET", "-2"},
		{"SLOWLOG", "GET", "abc"},
		{"SLOWLOG", "GET", "1", "2"},
		{"SLOWLOG", "NOPE"},
		{"SLOWLOG"},
		{"SLOWLOG", "HELP"},
	} {
		c.Do(t, args...)
		if args[0] == "AUTH" {
			a, b := c.Both(t, "HELLO", "2", "AUTH", "default", "pw", "SETNAME", "x")
			c.Compare(t, []string{"HELLO"}, helloNorm(a), helloNorm(b))
		}
	}
	get("SLOWLOG", "GET", "-1")
	get("SLOWLOG", "GET", "3")
	get("SLOWLOG", "GET", "0")
	get("SLOWLOG", "GET")
	c.Do(t, "SLOWLOG", "LEN")

	// A pop that blocks and is served is logged once served (its wait
	// left out); one that times out is not logged at all.
	c2.Redis.Send([]byte("BLPOP"), []byte("{k}q"), []byte("0"))
	c2.Node.Send([]byte("BLPOP"), []byte("{k}q"), []byte("0"))
	waitBlocked(t, c, 1)
	c.Do(t, "SLOWLOG", "RESET")
	c.Do(t, "RPUSH", "{k}q", "job")
	ra, _ := c2.Redis.Receive()
	rb, _ := c2.Node.Receive()
	c2.Compare(t, []string{"BLPOP", "{k}q", "0"}, ra, rb)
	c3.Do(t, "BLPOP", "{k}empty", "0.05")
	c3.Do(t, "XREAD", "BLOCK", "50", "STREAMS", "{k}s", "$")
	// Unblocked by CLIENT UNBLOCK, with either reply: Redis 7.0 logs the
	// pop with no arguments.
	idR, idN := c2.Both(t, "CLIENT", "ID")
	ids := [2]int64{idR.Int, idN.Int}
	for _, how := range []string{"TIMEOUT", "ERROR"} {
		c2.Redis.Send([]byte("BLPOP"), []byte("{k}q"), []byte("0"))
		c2.Node.Send([]byte("BLPOP"), []byte("{k}q"), []byte("0"))
		waitBlocked(t, c, 1)
		c.Redis.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(ids[0]), how)
		c.Node.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(ids[1]), how)
		ra, _ := c2.Redis.Receive()
		rb, _ := c2.Node.Receive()
		c2.Compare(t, []string{"BLPOP", "{k}q", "0", "(unblocked " + how + ")"}, ra, rb)
	}
	a, b := c.Both(t, "SLOWLOG", "GET", "-1")
	// The pop and the push ran in different clients: whichever logs
	// first gets the lower id, on either server.
	// The polls for blocked clients and the CLIENT UNBLOCKs (whose ids
	// differ) are left out.
	c.Compare(t, []string{"SLOWLOG", "GET"}, sortEntries(slowlogNorm(t, a, peers.redis)), sortEntries(slowlogNorm(t, b, peers.node)))
	if n := len(a.Elems); n < 3 {
		t.Errorf("redis-server logged %d commands around the BLPOPs, want at least RESET, RPUSH and the served BLPOP: %s", n, a)
	}

	// The length is cut when an entry is added, not when it changes.
	c.Do(t, "SLOWLOG", "RESET")
	for i := range 5 {
		c.Do(t, "SET", "{k}x", fmt.Sprint(i))
	}
	c.Do(t, "CONFIG", "SET", "slowlog-max-len", "2")
	c.Do(t, "SLOWLOG", "LEN")
	get("SLOWLOG", "GET", "-1")
	c.Do(t, "SLOWLOG", "LEN")
	c.Do(t, "CONFIG", "SET", "slowlog-max-len", "0")
	c.Do(t, "SLOWLOG", "LEN")

	// The parameters' bounds and parsing.
	for _, v := range []string{"-1", "-2", "abc", "1.5", "", "+5", "01", "9223372036854775807", "9223372036854775808", "1k", "100"} {
		c.Do(t, "CONFIG", "SET", "slowlog-log-slower-than", v)
		c.Do(t, "CONFIG", "SET", "slowlog-max-len", v)
		a, b := c.Both(t, "CONFIG", "GET", "slowlog-*") // in the order of Redis's dict
		c.Compare(t, []string{"CONFIG", "GET", "slowlog-*"}, pairsNorm(a), pairsNorm(b))
	}
	// Off: nothing is logged.
	c.Do(t, "CONFIG", "SET", "slowlog-log-slower-than", "-1", "slowlog-max-len", "128")
	c.Do(t, "SLOWLOG", "RESET")
	c.Do(t, "GET", "{k}a")
	c.Do(t, "SLOWLOG", "LEN")
	// A high threshold logs nothing quick.
	c.Do(t, "CONFIG", "SET", "slowlog-log-slower-than", "1000000")
	c.Do(t, "GET", "{k}a")
	c.Do(t, "SLOWLOG", "LEN")
}

// peerMaps name each test connection's address as each server sees it.
type peerMaps struct{ redis, node map[string]string }

func peerNames(conns map[string]*difftest.ConnPair) peerMaps {
	m := peerMaps{redis: map[string]string{}, node: map[string]string{}}
	for name, c := range conns {
		m.redis[c.Redis.NetConn().LocalAddr().String()] = name
		m.node[c.Node.NetConn().LocalAddr().String()] = name
	}
	return m
}

// slowlogNorm checks a SLOWLOG GET reply's times and durations for sense
// and blanks them, and names its client addresses by peers.
func slowlogNorm(t *testing.T, v difftest.Value, peers map[string]string) difftest.Value {
	t.Helper()
	if v.Kind != difftest.Array {
		return v
	}
	out := v
	out.Elems = make([]difftest.Value, len(v.Elems))
	now := time.Now().Unix()
	// Ids relative to the oldest shown: the oracle's go on from earlier
	// tests.
	base := int64(1<<63 - 1)
	for _, e := range v.Elems {
		if len(e.Elems) == 6 {
			base = min(base, e.Elems[0].Int)
		}
	}
	for i, e := range v.Elems {
		if len(e.Elems) != 6 {
			t.Fatalf("slowlog entry %s: want 6 fields", e)
		}
		f := append([]difftest.Value(nil), e.Elems...)
		if ts := f[1].Int; ts < now-60 || ts > now+1 {
			t.Errorf("slowlog entry %s: time %d, now %d", e, ts, now)
		}
		if d := f[2].Int; d < 0 || d > 5e6 {
			t.Errorf("slowlog entry %s: duration %d µs", e, d)
		}
		f[0], f[1], f[2] = difftest.Int(f[0].Int-base), difftest.Int(0), difftest.Int(0)
		if name, ok := peers[string(f[4].Str)]; ok {
			f[4].Str = []byte(name)
		} else {
			t.Errorf("slowlog entry %s: client %q is none of the test's connections", e, f[4].Str)
		}
		out.Elems[i] = e
		out.Elems[i].Elems = f
	}
	return out
}

// sortEntries orders normalized entries by content, ids blanked, leaving
// out the test's INFO and CLIENT UNBLOCK commands.
func sortEntries(v difftest.Value) difftest.Value {
	out := v
	out.Elems = nil
	for _, e := range v.Elems {
		if args := e.Elems[3].Elems; len(args) > 0 && (string(args[0].Str) == "INFO" || string(args[0].Str) == "CLIENT" && string(args[1].Str) == "UNBLOCK") {
			continue
		}
		f := append([]difftest.Value(nil), e.Elems...)
		f[0] = difftest.Int(0)
		e.Elems = f
		out.Elems = append(out.Elems, e)
	}
	sort.Slice(out.Elems, func(i, j int) bool { return out.Elems[i].String() < out.Elems[j].String() })
	return out
}
