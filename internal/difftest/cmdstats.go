package difftest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CommandStatsScenario runs the same commands on the target and on
// redis-server and compares INFO commandstats (calls, rejected_calls and
// failed_calls of each command; usec is each server's own time, checked
// for sense) and which commands INFO latencystats lists with which
// percentiles. The commands cover what decides the counts: refusals
// before a command runs (arity, NOAUTH, inside MULTI) against errors it
// replies with, a transaction's commands counted at EXEC and EXEC failing
// only for its own error, unknown commands and subcommands counted
// nowhere, and blocking pops counted once they end, served or timed out.
func CommandStatsScenario(t *testing.T, p *Pair) {
	t.Helper()
	t.Cleanup(func() {
		p.Redis.DoStrings("CONFIG", "SET", "requirepass", "", "latency-tracking", "yes", "latency-tracking-info-percentiles", "50 99 99.9")
	})
	c := p.ConnPair
	c2 := p.NewConn(t)
	checkTotalIsCalls(t, c, false) // on the fresh target (the oracle is shared: its counts since earlier tests do not add up)
	c.Do(t, "CONFIG", "RESETSTAT")
	for _, args := range [][]string{
		{"SET", "a", "1"},
		{"GET", "a"},
		{"GET"},                    // arity: rejected
		{"NOSUCHCOMMAND", "x"},     // unknown: nowhere
		{"CONFIG", "NOPE"},         // unknown subcommand: nowhere
		{"CONFIG"},                 // the container's arity: rejected
		{"CONFIG", "GET"},          // the subcommand's arity: rejected
		{"LPUSH", "a", "x"},        // WRONGTYPE: failed
		{"GETEX", "a", "PX", "-1"}, // syntax: failed
		{"AUTH", "x"},              // no password set: failed
		{"HELLO", "4"},             // NOPROTO: failed
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, // NOGROUP: failed
		{"MULTI"},
		{"SET", "a", "2"},
		{"GET"},  // rejected inside MULTI, aborting it
		{"EXEC"}, // EXECABORT: failed
		{"MULTI"},
		{"LPUSH", "a", "1"}, // fails at EXEC
		{"INCR", "a"},
		{"BLPOP", "a", "0"}, // does not block inside EXEC: WRONGTYPE
		{"EXEC"},            // not failed: its commands did
		{"MULTI"},
		{"MULTI"},      // nested: failed
		{"WATCH", "a"}, // inside MULTI: failed
		{"SHUTDOWN"},   // not allowed inside MULTI: rejected
		{"DISCARD"},
		{"EXEC"}, // without MULTI: failed
		{"DISCARD"},
		{"DEBUG", "SLEEP", "0"}, // refused outright: rejected
		{"PING"},
		{"BLPOP", "empty", "0.05"},            // times out: counted
		{"XREAD", "STREAMS", "nostream", "0"}, // nil, without blocking: timed
		{"XREAD", "BLOCK", "50", "STREAMS", "nostream", "$"}, // times out: untimed
	} {
		c.Do(t, args...)
	}
	// A pipeline: INFO sees the commands before it in the same read,
	// RESETSTAT forgets them, and the errors of replies CLIENT REPLY OFF
	// drops still count.
	pa, pb := pipeline(t, c, 4, []string{"SET", "p", "1"}, []string{"GET", "p"}, []string{"GET"},
		[]string{"CLIENT", "REPLY", "OFF"}, []string{"LPUSH", "p", "x"}, []string{"GET"}, []string{"CLIENT", "REPLY", "ON"})
	for i := range pa {
		c.Compare(t, []string{"(pipelined reply)", fmt.Sprint(i)}, pa[i], pb[i])
	}
	pa, pb = pipeline(t, c, 2, []string{"INCR", "n"}, []string{"INFO", "commandstats"})
	compareCommandStatsText(t, pa[1].Text(), pb[1].Text())
	pa, pb = pipeline(t, c, 2, []string{"INFO", "errorstats"}, []string{"INFO", "latencystats"})
	c.Compare(t, []string{"INFO", "errorstats"}, pa[0], pb[0])
	if ka, kb := latencyKeys(t, pa[1].Text(), "p50,p99,p99.9"), latencyKeys(t, pb[1].Text(), "p50,p99,p99.9"); ka != kb {
		t.Errorf("latencystats commands differ in a pipeline:\nredis: %s\ntarget: %s", ka, kb)
	}
	// A transaction whose WATCH fails: EXEC answers nil, not an error.
	c.Do(t, "WATCH", "w")
	c2.Do(t, "SET", "w", "1")
	c.Do(t, "MULTI")
	c.Do(t, "INCR", "w")
	c.Do(t, "EXEC")
	// A pop that blocks and is served.
	c2.Redis.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
	c2.Node.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
	WaitBlocked(t, c, 1)
	// Counted as it blocks, as Redis counts it.
	CompareCommandStats(t, c)
	checkTotalIsCalls(t, c, true)
	c.Do(t, "RPUSH", "q", "job")
	ra, _ := c2.Redis.Receive()
	rb, _ := c2.Node.Receive()
	c2.Compare(t, []string{"BLPOP", "q", "0"}, ra, rb)
	// Unblocked with an error: a failed call.
	idR, idN := c2.Both(t, "CLIENT", "ID")
	c2.Redis.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
	c2.Node.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
	WaitBlocked(t, c, 1)
	p.Redis.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(idR.Int), "ERROR")
	p.Node.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(idN.Int), "ERROR")
	ra, _ = c2.Redis.Receive()
	rb, _ = c2.Node.Receive()
	c2.Compare(t, []string{"BLPOP", "q", "0", "(unblocked)"}, ra, rb)
	// NOAUTH: rejected.
	c.Do(t, "CONFIG", "SET", "requirepass", "pw")
	c3 := p.NewConn(t)
	c3.Do(t, "GET", "a")
	c3.Do(t, "AUTH", "pw")
	c.Do(t, "AUTH", "pw")
	c.Do(t, "CONFIG", "SET", "requirepass", "")

	CompareCommandStats(t, c)
	CompareHistograms(t, c, "set", "GET", "nosuch", "config", "lpush", "blpop", "exec", "config|set", "get")
	c3p := p.NewConnProto(t, 3)
	CompareHistograms(t, c3p, "set", "config", "blpop")
	// The latency monitor is off: no events, nothing to reset or graph.
	for _, args := range [][]string{
		{"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "command"}, {"LATENCY", "RESET"},
		{"LATENCY", "RESET", "command", "fork"}, {"LATENCY", "DOCTOR"}, {"LATENCY", "GRAPH", "command"},
		{"LATENCY", "HELP"}, {"LATENCY", "HISTORY"}, {"LATENCY", "NOPE"}, {"LATENCY"}, {"LATENCY", "LATEST", "x"},
	} {
		c.Do(t, args...)
		c3p.Do(t, args...)
	}
	a, b := c.Both(t, "INFO", "latencystats")
	if ka, kb := latencyKeys(t, a.Text(), "p50,p99,p99.9"), latencyKeys(t, b.Text(), "p50,p99,p99.9"); ka != kb {
		t.Errorf("latencystats commands differ:\nredis: %s\ntarget: %s", ka, kb)
	}

	// The percentiles INFO reads, and turning tracking off.
	for _, v := range []string{"33.33333333 0.0000001 100.0 99.90", "abc", "101", " 50  99 ", "1e1 0x10", "", "nan", "inf"} {
		c.Do(t, "CONFIG", "SET", "latency-tracking-info-percentiles", v)
		c.Do(t, "CONFIG", "GET", "latency-tracking-info-percentiles")
	}
	c.Do(t, "CONFIG", "SET", "latency-tracking-info-percentiles", "50 99.99 0")
	a, b = c.Both(t, "INFO", "latencystats")
	if ka, kb := latencyKeys(t, a.Text(), "p50,p99.99,p0"), latencyKeys(t, b.Text(), "p50,p99.99,p0"); ka != kb {
		t.Errorf("latencystats commands differ:\nredis: %s\ntarget: %s", ka, kb)
	}
	c.Do(t, "CONFIG", "SET", "latency-tracking", "maybe")
	c.Do(t, "CONFIG", "SET", "latency-tracking", "NO")
	c.Do(t, "CONFIG", "GET", "latency-tracking")
	c.Do(t, "INFO", "latencystats")
	c.Do(t, "CONFIG", "SET", "latency-tracking", "yes")

	// RESETSTAT forgets it all; only its own call is counted after it.
	c.Do(t, "CONFIG", "RESETSTAT")
	a, b = c.Both(t, "INFO", "commandstats")
	if n := strings.Count(a.Text(), "cmdstat_"); n != 1 {
		t.Errorf("after CONFIG RESETSTAT redis-server lists %d commands, want 1 (itself): %q", n, a.Text())
	}
	if n := strings.Count(b.Text(), "cmdstat_"); n != 1 {
		t.Errorf("after CONFIG RESETSTAT the target lists %d commands, want 1 (itself): %q", n, b.Text())
	}
	CompareCommandStats(t, c)
}

var cmdstatLine = regexp.MustCompile(`^cmdstat_([a-z|-]+):calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),failed_calls=(\d+)$`)

// CompareCommandStats compares INFO commandstats's counts, in name order
// (Redis lists them in its dictionary's order), with usec blanked once
// its per-call figure is checked against it.
func CompareCommandStats(t *testing.T, c *ConnPair) {
	t.Helper()
	a, b := c.Both(t, "INFO", "commandstats")
	compareCommandStatsText(t, a.Text(), b.Text())
}

// compareCommandStatsText compares two INFO commandstats replies as
// CompareCommandStats does.
func compareCommandStatsText(t *testing.T, a, b string) {
	t.Helper()
	norm := func(who, text string) string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(text), "\r\n")[1:] {
			m := cmdstatLine.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: bad commandstats line %q", who, line)
				continue
			}
			if m[1] == "info" {
				continue // the polls for blocked clients: as many as it takes
			}
			calls, _ := strconv.ParseInt(m[2], 10, 64)
			usec, _ := strconv.ParseInt(m[3], 10, 64)
			if calls > 0 {
				if want := fmt.Sprintf("%.2f", float32(usec)/float32(calls)); m[4] != want {
					t.Errorf("%s: %q: usec_per_call %s, want %s", who, line, m[4], want)
				}
			}
			if usec > 5_000_000 {
				t.Errorf("%s: %q: %d µs", who, line, usec)
			}
			out = append(out, fmt.Sprintf("%s calls=%s rejected=%s failed=%s", m[1], m[2], m[5], m[6]))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	if na, nb := norm("redis", a), norm("target", b); na != nb {
		t.Errorf("INFO commandstats differs:\nredis:\n%s\ntarget:\n%s", na, nb)
	}
}

// checkTotalIsCalls checks on the target (and on redis-server too if
// redisToo) that INFO's total_commands_processed is the sum of
// commandstats's calls, as it is on Redis after CONFIG RESETSTAT (both
// count what ran, or blocked, and neither counts the INFO being
// answered).
func checkTotalIsCalls(t *testing.T, c *ConnPair, redisToo bool) {
	t.Helper()
	a, b := c.Both(t, "INFO", "stats", "commandstats")
	for who, v := range map[string]Value{"redis": a, "target": b} {
		if who == "redis" && !redisToo {
			continue
		}
		var total, calls int64 = -1, 0
		for _, line := range strings.Split(v.Text(), "\r\n") {
			if n, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
				total, _ = strconv.ParseInt(n, 10, 64)
			}
			if m := cmdstatLine.FindStringSubmatch(line); m != nil {
				n, _ := strconv.ParseInt(m[2], 10, 64)
				calls += n
			}
		}
		if total != calls {
			t.Errorf("%s: total_commands_processed %d, commandstats calls sum to %d", who, total, calls)
		}
	}
}

// pipeline sends every command to both servers before reading any
// reply, then reads n replies from each (fewer than the commands when
// CLIENT REPLY OFF silences some).
func pipeline(t *testing.T, c *ConnPair, n int, cmds ...[]string) (redis, target []Value) {
	t.Helper()
	for _, args := range cmds {
		b := toBytes(args)
		if err := c.Redis.Send(b...); err != nil {
			t.Fatal(err)
		}
		if err := c.Node.Send(b...); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		a, err := c.Redis.Receive()
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Node.Receive()
		if err != nil {
			t.Fatal(err)
		}
		redis, target = append(redis, a), append(target, b)
	}
	return redis, target
}

// CompareHistograms compares LATENCY HISTOGRAM names...: which commands
// it lists, in order, and their calls; each distribution's buckets are
// the servers' own timings, checked for form (powers of two from 1 µs,
// counts growing to the calls) and blanked.
func CompareHistograms(t *testing.T, c *ConnPair, names ...string) {
	t.Helper()
	args := append([]string{"LATENCY", "HISTOGRAM"}, names...)
	a, b := c.Both(t, args...)
	norm := func(who string, v Value) Value {
		if v.Kind != Map && v.Kind != Array {
			return v
		}
		out := v
		out.Elems = append([]Value(nil), v.Elems...)
		for i := 1; i < len(out.Elems); i += 2 {
			h := out.Elems[i]
			if len(h.Elems) != 4 || string(h.Elems[0].Str) != "calls" || string(h.Elems[2].Str) != "histogram_usec" {
				t.Errorf("%s: LATENCY HISTOGRAM entry %s", who, h)
				continue
			}
			calls, cdf := h.Elems[1].Int, h.Elems[3].Elems
			prevUsec, prevCount := int64(0), int64(0)
			for j := 0; j+1 < len(cdf); j += 2 {
				usec, n := cdf[j].Int, cdf[j+1].Int
				if usec <= prevUsec || n <= prevCount || n > calls {
					t.Errorf("%s: %s: distribution %s not increasing up to %d calls", who, out.Elems[i-1], h.Elems[3], calls)
					break
				}
				prevUsec, prevCount = usec, n
			}
			if prevCount != calls {
				t.Errorf("%s: %s: distribution %s ends at %d, calls %d", who, out.Elems[i-1], h.Elems[3], prevCount, calls)
			}
			e := append([]Value(nil), h.Elems...)
			e[3] = Value{Kind: e[3].Kind}
			h.Elems = e
			out.Elems[i] = h
		}
		return out
	}
	c.Compare(t, args, sortPairs(norm("redis", a)), sortPairs(norm("target", b)))
}

// sortPairs sorts a map reply's pairs by key: LATENCY HISTOGRAM lists a
// container's subcommands in Redis's dictionary order.
func sortPairs(v Value) Value {
	if len(v.Elems)%2 != 0 {
		return v
	}
	type pair struct{ k, v Value }
	ps := make([]pair, 0, len(v.Elems)/2)
	for i := 0; i < len(v.Elems); i += 2 {
		ps = append(ps, pair{v.Elems[i], v.Elems[i+1]})
	}
	sort.SliceStable(ps, func(i, j int) bool { return string(ps[i].k.Str) < string(ps[j].k.Str) })
	out := v
	out.Elems = nil
	for _, p := range ps {
		out.Elems = append(out.Elems, p.k, p.v)
	}
	return out
}

// latencyKeys checks INFO latencystats's lines against Redis's format with
// the given percentiles and returns the commands listed, in name order.
func latencyKeys(t *testing.T, text, percentiles string) string {
	t.Helper()
	var pat strings.Builder
	for i, p := range strings.Split(percentiles, ",") {
		if i > 0 {
			pat.WriteString(",")
		}
		pat.WriteString(regexp.QuoteMeta(p) + `=\d+\.\d{3}`)
	}
	line := regexp.MustCompile(`^latency_percentiles_usec_([a-z|-]+):` + pat.String() + `$`)
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\r\n")[1:] {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("bad latencystats line %q", l)
			continue
		}
		names = append(names, m[1])
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// WaitBlocked polls both servers until each counts n blocked clients
// (INFO blocked_clients), so that a push is sent only once the waiters
// are registered.
func WaitBlocked(t *testing.T, c *ConnPair, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, nd := blockedCount(t, c.Redis), blockedCount(t, c.Node)
		if r == n && nd == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients: redis %d, target %d; want %d", r, nd, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func blockedCount(t *testing.T, c *Conn) int {
	t.Helper()
	v, err := c.DoStrings("INFO", "clients")
	if err != nil {
		t.Fatalf("INFO clients: %v", err)
	}
	_, rest, ok := strings.Cut(v.Text(), "blocked_clients:")
	if !ok {
		t.Fatalf("no blocked_clients in INFO: %q", v.Text())
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\r\n", 2)[0]))
	return n
}
