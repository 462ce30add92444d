package proxy_test

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestDiffServerRepliesProxy: keyless server commands whose reply does not
// depend on time or on the data answer through the proxy exactly as one
// plain redis-server does, in RESP2 and RESP3.
func TestDiffServerRepliesProxy(t *testing.T) {
	redisAddr := startPlainOracle(t, "server-reply")
	px := proxytest.Start(t, 3, proxy.Options{})
	cmds := [][]string{
		{"ROLE"}, {"ROLE", "x"}, {"role"},
		{"PING"}, {"PING", "hi"}, {"PING", "a", "b"},
		{"ECHO", "e"}, {"ECHO"}, {"CONFIG", "REWRITE"}, {"CONFIG", "REWRITE", "x"},
		{"TIME", "x"}, {"LASTSAVE", "x"}, {"DBSIZE", "x"},
		{"WAIT", "0", "0"}, {"WAIT", "-1", "0"}, {"WAIT", "1", "10"}, {"WAIT", "x", "0"}, {"WAIT", "1", "x"},
		{"WAIT", "1", "-1"}, {"WAIT", "0", "-1"}, {"WAIT", "1", "1.5"}, {"WAIT", "1"}, {"wait", "1", "2", "3"},
		{"WAIT", "2147483648", "0"}, {"WAIT", "4294967296", "0"}, {"WAIT", "9223372036854775807", "0"}, {"WAIT", "4294967297", "10"},
	}
	for _, proto := range []int{2, 3} {
		diffSeq(t, dial(t, redisAddr, proto), dial(t, px.Addr, proto), proto, cmds)
	}
}

// TestDiffInfoFieldsProxy: the proxy's INFO sections carry Redis 7.0's
// field names in Redis's order (server, clients, persistence and
// keyspace, memory and stats the same list, plus the proxy's
// crossslot_rejections at the end of stats), asked one by one or all at once, and the
// counters that follow the data (keyspace hits and misses, from the
// nodes) and the proxy's own error replies (total and per code) move as
// one redis-server's do, CONFIG RESETSTAT included.
func TestDiffInfoFieldsProxy(t *testing.T) {
	oracle := dial(t, startPlainOracle(t, "INFO fields"), 2)
	px := dial(t, proxytest.Start(t, 3, proxy.Options{}).Addr, 2)
	// info returns each section's field names in order, and every value.
	info := func(c *difftest.Conn, args ...string) (names map[string][]string, vals map[string]string) {
		v, err := c.DoStrings(append([]string{"INFO"}, args...)...)
		if err != nil || v.IsError() {
			t.Fatalf("INFO %v: %v %v", args, v, err)
		}
		names, vals = map[string][]string{}, map[string]string{}
		section := ""
		for _, l := range strings.Split(string(v.Str), "\r\n") {
			if title, ok := strings.CutPrefix(l, "# "); ok {
				section = strings.ToLower(title)
			} else if k, val, ok := strings.Cut(l, ":"); ok {
				names[section] = append(names[section], k)
				vals[k] = val
			}
		}
		return names, vals
	}
	for _, c := range []*difftest.Conn{oracle, px} {
		for _, args := range [][]string{{"CONFIG", "RESETSTAT"}, {"SET", "k", "v"}, {"GET", "k"}, {"GET", "k"}, {"GET", "nokey"}, {"LPUSH", "k", "x"}, {"GET"},
			// Errors inside EXEC's reply count too, and EXECABORT.
			{"MULTI"}, {"LPUSH", "k", "x"}, {"INCR", "k"}, {"GET", "k"}, {"EXEC"},
			{"MULTI"}, {"GET"}, {"EXEC"}} {
			if _, err := c.DoStrings(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The sections, in Redis's order: the proxy adds its # Nodes.
	titles := func(c *difftest.Conn, args ...string) string {
		v, err := c.DoStrings(append([]string{"INFO"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(v.Str), "\r\n") {
			if title, ok := strings.CutPrefix(l, "# "); ok && title != "Nodes" {
				out = append(out, title)
			}
		}
		return strings.Join(out, ",")
	}
	for _, ask := range [][]string{nil, {"all"}, {"everything"}, {"modules"}} {
		if got, want := titles(px, ask...), titles(oracle, ask...); got != want {
			t.Errorf("INFO %v sections:\n proxy: %s\n redis: %s", ask, got, want)
		}
	}
	sections := []string{"server", "clients", "memory", "persistence", "stats", "errorstats", "keyspace"}
	for _, ask := range [][]string{sections, {"all"}} {
		want, wantVals := info(oracle, ask...)
		got, gotVals := info(px, ask...)
		for _, sec := range sections {
			g, w := got[sec], want[sec]
			switch sec {
			case "server":
				if n := len(g); n >= 2 && g[n-2] == "shardgate_role" && g[n-1] == "cross_slot" {
					g = g[:n-2]
				}
			case "stats":
				if n := len(g); n == 0 || g[n-1] != "crossslot_rejections" {
					t.Errorf("INFO %v: stats on the proxy do not end with crossslot_rejections: %v", ask, g)
				} else {
					g = g[:n-1]
				}
			}
			if strings.Join(g, " ") != strings.Join(w, " ") {
				t.Errorf("INFO %v: %s fields:\n proxy: %v\n redis: %v", ask, sec, g, w)
			}
		}
		for _, k := range []string{"keyspace_hits", "keyspace_misses", "total_error_replies", "errorstat_ERR", "errorstat_WRONGTYPE", "errorstat_EXECABORT", "loading", "rdb_changes_since_last_save", "db0"} {
			if gotVals[k] != wantVals[k] {
				t.Errorf("INFO %v: %s: proxy %q, redis %q", ask, k, gotVals[k], wantVals[k])
			}
		}
	}
}

// TestDiffBlockingTimeoutsWithData: a blocking pop on a list that has
// elements answers as one redis-server does whatever its timeout: the
// proxy's shortcut (the non-blocking form, run first) must not pop where
// Redis refuses the timeout (overflowing milliseconds read as negative,
// "." not a float). Each command is followed by the lists' contents.
func TestDiffBlockingTimeoutsWithData(t *testing.T) {
	redisAddr := startPlainOracle(t, "blocking timeouts")
	px := proxytest.Start(t, 3, proxy.Options{})
	timeouts := []string{
		"99999999999999999999", "9999999999999999", "999999999999999", "9223372036854775",
		".", "..", "", "1.", ".5", "007", "0.0001", "0", "-1", "-0", "1e3", "inf", "nan", "0x10", " 1", "1 ",
	}
	cmds := [][]string{{"RPUSH", "{t}l", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}}
	look := [][]string{{"LRANGE", "{t}l", "0", "-1"}, {"LRANGE", "{t}l2", "0", "-1"}}
	for _, to := range timeouts {
		for _, c := range [][]string{
			{"BLPOP", "{t}l", to}, {"BRPOP", "{t}l", "{t}x", to}, {"BLMPOP", to, "1", "{t}l", "LEFT"},
			{"BLMOVE", "{t}l", "{t}l2", "LEFT", "RIGHT", to}, {"BRPOPLPUSH", "{t}l", "{t}l2", to},
		} {
			cmds = append(cmds, c)
			cmds = append(cmds, look...)
		}
		// Keep the list from running dry.
		cmds = append(cmds, []string{"RPUSH", "{t}l", "x", "y", "z", "w", "v"})
	}
	for _, proto := range []int{2, 3} {
		diffSeq(t, dial(t, redisAddr, proto), dial(t, px.Addr, proto), proto, append(cmds, []string{"DEL", "{t}l", "{t}l2"}))
	}
}
