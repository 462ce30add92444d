package difftest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClientPauseScenario checks CLIENT PAUSE and CLIENT UNPAUSE on the server
// under test against redis-server: the argument errors, then, on each
// server in turn, what a pause holds and until when. The replies of the
// two runs must be the same, and each run must show the same holds (the
// oracle confirms what the scenario expects of Redis).
//
// A pause the scenario sets on the shared oracle is lifted or runs out
// before it returns.
func ClientPauseScenario(t *testing.T, p *Pair) {
	t.Helper()
	for _, args := range [][]string{
		{"CLIENT", "PAUSE"},
		{"CLIENT", "PAUSE", "x"},
		{"CLIENT", "PAUSE", "-1"},
		{"CLIENT", "PAUSE", "1.5"},
		{"CLIENT", "PAUSE", "+10"},
		{"CLIENT", "PAUSE", "10", "y"},
		{"CLIENT", "PAUSE", "x", "y"}, // the mode is checked first
		{"CLIENT", "PAUSE", "10", "WRITE\x00z"},
		{"CLIENT", "PAUSE", "1", "ALL", "x"},
		{"CLIENT", "UNPAUSE", "x"},
		{"CLIENT", "PAUSE", "0", "write"},
		{"CLIENT", "UNPAUSE"},
		{"CLIENT", "UNPAUSE"},
	} {
		p.Do(t, args...)
	}
	var transcripts [2][]string
	for i, side := range []struct{ name, addr string }{{"redis", p.Oracle.Addr}, {"target", p.NodeAddr}} {
		t.Run(side.name, func(t *testing.T) {
			transcripts[i] = pauseRun(t, side.addr)
		})
	}
	if a, b := strings.Join(transcripts[0], "\n"), strings.Join(transcripts[1], "\n"); a != b {
		t.Errorf("CLIENT PAUSE replies differ:\nredis:\n%s\ntarget:\n%s", a, b)
	}
}

// pauseRun runs the pause steps on the server at addr and returns its
// replies.
func pauseRun(t *testing.T, addr string) []string {
	dial := func() *Conn {
		c, err := Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial(), dial()
	id, err := b.DoStrings("CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	bID := id.String()
	if id.Kind == Integer {
		bID = strconv.FormatInt(id.Int, 10)
	}
	var out []string
	do := func(c *Conn, args ...string) string {
		t.Helper()
		v, err := c.DoStrings(args...)
		if err != nil {
			t.Fatalf("%s: %v", FormatCommand(args), err)
		}
		out = append(out, FormatCommand(args)+" -> "+v.String())
		return v.String()
	}
	t.Cleanup(func() { a.DoStrings("CLIENT", "UNPAUSE") })
	// fast: the command replies while the pause holds (UNPAUSE comes
	// only after it, so a held command would wait for the 10 s pause).
	fast := func(c *Conn, args ...string) {
		t.Helper()
		start := time.Now()
		do(c, args...)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v: held by the pause", FormatCommand(args), d)
		}
	}
	// held: the command gets no reply while the pause holds, and its
	// reply once UNPAUSE (sent on a) lifts it.
	held := func(c *Conn, args ...string) {
		t.Helper()
		if err := c.Send(toBytes(args)...); err != nil {
			t.Fatal(err)
		}
		got := make(chan Value, 1)
		go func() {
			v, _ := c.Receive()
			got <- v
		}()
		select {
		case v := <-got:
			t.Errorf("%s replied %s while paused", FormatCommand(args), v)
			out = append(out, FormatCommand(args)+" -> "+v.String())
			return
		case <-time.After(200 * time.Millisecond):
		}
		// Held, the client is listed blocked, with the held command.
		list, err := a.DoStrings("CLIENT", "LIST", "ID", bID)
		if err != nil {
			t.Fatal(err)
		}
		var shown []string
		for _, f := range strings.Fields(list.Text()) {
			if strings.HasPrefix(f, "flags=") || strings.HasPrefix(f, "cmd=") {
				shown = append(shown, f)
			}
		}
		info, err := a.DoStrings("INFO", "clients")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info.Text(), "\r\n") {
			if strings.HasPrefix(line, "blocked_clients:") || strings.HasPrefix(line, "clients_in_timeout_table:") {
				shown = append(shown, line)
			}
		}
		out = append(out, "held "+FormatCommand(args)+": "+strings.Join(shown, " "))
		do(a, "CLIENT", "UNPAUSE")
		select {
		case v := <-got:
			out = append(out, FormatCommand(args)+" -> "+v.String())
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no reply 5 s after CLIENT UNPAUSE", FormatCommand(args))
		}
	}

	do(b, "SET", "{p}k", "v0")
	do(b, "DEL", "{p}l")

	// WRITE holds writes, not reads; the caller is no exception.
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	fast(b, "GET", "{p}k")
	fast(b, "TTL", "{p}k")
	fast(a, "PING")
	held(b, "SET", "{p}k", "v1")
	do(a, "CLIENT", "PAUSE", "10000", "write")
	held(b, "RPUSH", "{p}l", "x")
	// PFCOUNT may store its key's cached count (Redis's may-replicate
	// flag): held as a write, also for a key that does not exist.
	do(b, "PFADD", "{p}h", "a")
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	held(b, "PFCOUNT", "{p}h")
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	held(b, "PFCOUNT", "{p}nohll")

	// In a pipeline, the replies before the held command arrive first.
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	if err := b.Send(toBytes([]string{"GET", "{p}k"})...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v, err := b.Receive()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, "GET {p}k (pipelined) -> "+v.String())
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a read pipelined before a held write waited %v", d)
	}
	held(b, "INCR", "{p}n")

	// A write inside MULTI is held before it is queued; an EXEC is held
	// when its transaction may write, not when it only reads.
	do(b, "MULTI")
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	held(b, "SET", "{p}k", "v2")
	do(b, "GET", "{p}k")
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	held(b, "EXEC")
	do(b, "MULTI")
	do(b, "GET", "{p}k")
	do(a, "CLIENT", "PAUSE", "10000", "WRITE")
	fast(b, "EXEC")
	do(a, "CLIENT", "UNPAUSE")

	// A pause that has run out holds nothing; so does a timeout whose
	// end wraps past the largest integer (Redis adds it to the clock
	// unchecked).
	do(a, "CLIENT", "PAUSE", "1", "WRITE")
	time.Sleep(20 * time.Millisecond)
	fast(b, "SET", "{p}k", "v3")
	do(a, "CLIENT", "PAUSE", "9223372036854775807", "WRITE")
	fast(b, "SET", "{p}k", "v4")

	// Pauses merge: the stricter mode and the later end. ALL holds every
	// command, the caller's own and CLIENT UNPAUSE included, until it
	// runs out.
	do(a, "CLIENT", "PAUSE", "50", "WRITE")
	do(a, "CLIENT", "PAUSE", "400")
	start = time.Now()
	do(b, "PING")
	do(a, "CLIENT", "UNPAUSE")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("PING and CLIENT UNPAUSE under a 400 ms ALL pause answered after %v", d)
	}
	fast(b, "SET", "{p}k", "v5")
	do(b, "GET", "{p}k")

	// A held client that closes its connection, or only its writing
	// side, is freed: its command never runs.
	for _, half := range []bool{false, true} {
		g := dial()
		do(a, "CLIENT", "PAUSE", "10000", "WRITE")
		if err := g.Send(toBytes([]string{"SET", "{p}k", "from a client gone"})...); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if tc, ok := g.NetConn().(*net.TCPConn); half && ok {
			tc.CloseWrite()
		} else {
			g.Close()
		}
		time.Sleep(400 * time.Millisecond)
		info, err := a.DoStrings("INFO", "clients")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info.Text(), "\r\n") {
			if strings.HasPrefix(line, "blocked_clients:") {
				out = append(out, fmt.Sprintf("held client gone (half-closed %v): %s", half, line))
			}
		}
		do(a, "CLIENT", "UNPAUSE")
		time.Sleep(50 * time.Millisecond)
		do(b, "GET", "{p}k")
	}
	return out
}

// ExpiryPauseScenario checks that a CLIENT PAUSE keeps the dataset still,
// as Redis 7.0 keeps it: a key whose time runs out during the pause reads
// as gone (GET, EXISTS, TTL, KEYS, SCAN, RANDOMKEY) but stays stored
// (DBSIZE, INFO keyspace, MEMORY USAGE, expired_keys) until the pause
// ends. Each server runs the same steps in turn; the replies must match.
func ExpiryPauseScenario(t *testing.T, p *Pair) {
	t.Helper()
	var transcripts [2][]string
	for i, side := range []struct{ name, addr string }{{"redis", p.Oracle.Addr}, {"target", p.NodeAddr}} {
		t.Run(side.name, func(t *testing.T) {
			transcripts[i] = expiryPauseRun(t, side.addr)
		})
	}
	if a, b := strings.Join(transcripts[0], "\n"), strings.Join(transcripts[1], "\n"); a != b {
		t.Errorf("expiry during CLIENT PAUSE differs:\nredis:\n%s\ntarget:\n%s", a, b)
	}
}

func expiryPauseRun(t *testing.T, addr string) []string {
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DoStrings("CLIENT", "UNPAUSE"); c.Close() })
	var out []string
	do := func(args ...string) Value {
		t.Helper()
		v, err := c.DoStrings(args...)
		if err != nil {
			t.Fatalf("%s: %v", FormatCommand(args), err)
		}
		return v
	}
	note := func(what string, v any) { out = append(out, fmt.Sprintf("%s -> %v", what, v)) }
	record := func(args ...string) { note(FormatCommand(args), do(args...).String()) }
	// infoField reads one INFO field; for db0, only keys= and expires=
	// (avg_ttl is an estimate the active cycle keeps).
	infoField := func(section, name string) string {
		for _, line := range strings.Split(do("INFO", section).Text(), "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				if name == "db0" {
					f := strings.Split(v, ",")
					return strings.Join(f[:min(2, len(f))], ",")
				}
				return v
			}
		}
		return "(none)"
	}
	expiredBefore, _ := strconv.Atoi(infoField("stats", "expired_keys"))
	expired := func() int {
		n, _ := strconv.Atoi(infoField("stats", "expired_keys"))
		return n - expiredBefore
	}

	do("DEL", "{xp}gone", "{xp}gone2", "{xp}live")
	do("SET", "{xp}live", "v")
	do("SET", "{xp}gone", "v", "PX", "300")
	do("SET", "{xp}gone2", "v", "PX", "300")
	do("CLIENT", "PAUSE", "10000", "WRITE")
	time.Sleep(600 * time.Millisecond) // both have expired; the pause keeps them
	record("GET", "{xp}gone")
	record("EXISTS", "{xp}gone")
	record("TTL", "{xp}gone")
	record("TYPE", "{xp}gone")
	record("OBJECT", "ENCODING", "{xp}gone")
	record("DBSIZE")
	record("KEYS", "{xp}*")
	// A whole scan, cursor to cursor: a proxy's cursors name its nodes.
	var scanned []string
	for cursor, n := "0", 0; n == 0 || cursor != "0"; n++ {
		v := do("SCAN", cursor, "MATCH", "{xp}*", "COUNT", "1000")
		if len(v.Elems) != 2 || n > 100 {
			t.Fatalf("SCAN %s: %s", cursor, v)
		}
		cursor = string(v.Elems[0].Str)
		for _, k := range v.Elems[1].Elems {
			scanned = append(scanned, string(k.Str))
		}
	}
	note("SCAN MATCH {xp}* (all pages)", scanned)
	record("RANDOMKEY")
	note("MEMORY USAGE {xp}gone2 (kind)", do("MEMORY", "USAGE", "{xp}gone2").Kind)
	note("INFO keyspace db0", infoField("keyspace", "db0"))
	note("expired_keys since the start", expired())
	do("CLIENT", "UNPAUSE")
	record("GET", "{xp}gone") // removes it now
	note("GET removed it (expired_keys since the start >= 1)", expired() >= 1)
	// The active cycle takes {xp}gone2 within a cycle or two; when is a
	// race on both sides (Redis's cron may run between any two replies),
	// so wait for it rather than read DBSIZE at one instant.
	deadline := time.Now().Add(3 * time.Second)
	for do("DBSIZE").Int != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	record("DBSIZE")
	note("expired_keys since the start", expired())
	return out
}
