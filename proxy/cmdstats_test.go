package proxy_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestDiffCommandStats compares the proxy's INFO commandstats and
// latencystats with redis-server's (difftest.CommandStatsScenario): the
// counts of the commands its clients sent, transactions and blocking
// pops included.
func TestDiffCommandStats(t *testing.T) {
	difftest.CommandStatsScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}

// TestCommandStatsTimeOfRoundTrippingCommand: a command that makes round
// trips of its own (a segmented BITCOUNT over many segments) after others
// in the same pipeline is timed from when those were answered, not
// counted as taking nothing (the earlier batch's end cleared its start).
func TestCommandStatsTimeOfRoundTrippingCommand(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"seg:*"}, SegmentBits: 1 << 12})
	c := dial(t, cl.Addr, 2)
	const segments = 500
	if err := c.WriteRaw(pipeline(segments, func(i int) []string {
		return []string{"SETBIT", "seg:big", strconv.Itoa(i << 12), "1"}
	})); err != nil {
		t.Fatal(err)
	}
	for range segments {
		if _, err := c.Receive(); err != nil {
			t.Fatal(err)
		}
	}
	do(t, c, "CONFIG", "RESETSTAT")
	if err := c.WriteRaw(pipeline(2, func(i int) []string {
		return [][]string{{"PING"}, {"BITCOUNT", "seg:big"}}[i]
	})); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && v.Int != segments {
			t.Fatalf("BITCOUNT seg:big = %v, want %d", v, segments)
		}
	}
	line := infoField(t, c, "commandstats", "cmdstat_bitcount")
	usec := -1
	for _, f := range strings.Split(line, ",") {
		if v, ok := strings.CutPrefix(f, "usec="); ok {
			usec, _ = strconv.Atoi(v)
		}
	}
	// 500 segments on 3 nodes take well over 100 microseconds.
	if usec < 100 {
		t.Errorf("cmdstat_bitcount %q: usec %d, want the BITCOUNT's own time", line, usec)
	}
}

// TestDiffCommandStatsOOM: a command a node refuses for its maxmemory is a
// rejected call, not a failed one, in the proxy's commandstats as in
// redis-server's, and not in total_commands_processed.
func TestDiffCommandStatsOOM(t *testing.T) {
	oracle := dial(t, startPlainOracle(t, "commandstats under OOM"), 2)
	px := proxytest.Start(t, 1, proxy.Options{})
	node := dial(t, px.NodeAddrs[0], 2)
	target := dial(t, px.Addr, 2)
	for _, c := range []*difftest.Conn{oracle, node} {
		do(t, c, "CONFIG", "SET", "maxmemory", "1")
	}
	lines := func(c *difftest.Conn) []string {
		do(t, c, "CONFIG", "RESETSTAT")
		do(t, c, "SET", "a", "1")
		do(t, c, "GET", "a")
		do(t, c, "RPUSH", "l", "x")
		var out []string
		for _, section := range []string{"commandstats", "errorstats"} {
			for _, line := range strings.Split(do(t, c, "INFO", section).Text(), "\r\n") {
				if strings.HasPrefix(line, "cmdstat_config") || strings.HasPrefix(line, "cmdstat_info") {
					continue
				}
				if name, stats, ok := strings.Cut(line, ":"); ok {
					out = append(out, name+":"+dropUsec(stats))
				}
			}
		}
		return append(out, "total_commands_processed:"+infoField(t, c, "stats", "total_commands_processed"))
	}
	// Sorted: Redis lists commands in its hash table's order.
	want, got := lines(oracle), lines(target)
	slices.Sort(want)
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("proxy:\n%s\nredis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// dropUsec keeps a cmdstat line's counts, not its times.
func dropUsec(stats string) string {
	var keep []string
	for _, f := range strings.Split(stats, ",") {
		if !strings.HasPrefix(f, "usec") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, ",")
}
