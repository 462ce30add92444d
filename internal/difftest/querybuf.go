package difftest

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// QueryBufLimit is the client-query-buffer-limit QueryBufferScenario sets
// on the oracle (Redis's smallest); the server under test must have been
// started with it.
const QueryBufLimit = 1 << 20

// QueryBufferScenario checks client-query-buffer-limit against
// redis-server: Redis closes a client when the argument arriving, alone,
// exceeds the limit with its CRLF, whatever the sum of a command's
// arguments and however the bytes are split into writes; the commands
// before it in the same write still run. Each case runs on a fresh
// connection to each server; the outcomes (the replies read before the
// connection ends, whether it closed, and which keys were written) must
// be the same.
func QueryBufferScenario(t *testing.T, p *Pair) {
	t.Helper()
	if v, err := p.Redis.DoStrings("CONFIG", "SET", "client-query-buffer-limit", fmt.Sprint(QueryBufLimit)); err != nil || v.Text() != "OK" {
		t.Fatalf("CONFIG SET client-query-buffer-limit on redis-server: %v %v", v, err)
	}
	t.Cleanup(func() { p.Redis.DoStrings("CONFIG", "SET", "client-query-buffer-limit", "1gb") })

	big := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name  string
		cmds  [][]string
		chunk int // 0: one write; else writes of chunk bytes 5 ms apart
		keys  []string
	}{
		{"two arguments of 0.6 MB", [][]string{{"MSET", "{q}1", big(600_000), "{q}2", big(600_000)}}, 0, []string{"{q}1", "{q}2"}},
		{"two arguments of 0.6 MB, trickled", [][]string{{"MSET", "{q}3", big(600_000), "{q}4", big(600_000)}}, 100_000, []string{"{q}3", "{q}4"}},
		{"one argument of 1.2 MB", [][]string{{"SET", "{q}5", big(1_200_000)}}, 0, []string{"{q}5"}},
		{"one argument of 1.2 MB, trickled", [][]string{{"SET", "{q}6", big(1_200_000)}}, 100_000, []string{"{q}6"}},
		{"an argument at the limit", [][]string{{"SET", "{q}7", big(QueryBufLimit - 2)}}, 0, []string{"{q}7"}},
		{"an argument one byte over", [][]string{{"SET", "{q}8", big(QueryBufLimit - 1)}}, 0, []string{"{q}8"}},
		{"a command before the big one", [][]string{{"SET", "{q}9", "1"}, {"SET", "{q}10", big(1_200_000)}}, 0, []string{"{q}9", "{q}10"}},
	}
	var outcomes [2][]string
	for i, addr := range []string{p.Oracle.Addr, p.NodeAddr} {
		for _, tc := range cases {
			outcomes[i] = append(outcomes[i], tc.name+": "+queryBufCase(t, addr, tc.cmds, tc.chunk, tc.keys))
		}
	}
	if a, b := strings.Join(outcomes[0], "\n"), strings.Join(outcomes[1], "\n"); a != b {
		t.Errorf("query buffer limit outcomes differ:\nredis:\n%s\ntarget:\n%s", a, b)
	}
}

// queryBufCase sends cmds to addr on a new connection and describes what
// came back and which of keys exist afterwards.
func queryBufCase(t *testing.T, addr string, cmds [][]string, chunk int, keys []string) string {
	t.Helper()
	var req []byte
	for _, c := range cmds {
		req = AppendCommand(req, toBytes(c)...)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	go func() {
		if chunk == 0 {
			nc.Write(req)
			return
		}
		for len(req) > 0 {
			n := min(chunk, len(req))
			if _, err := nc.Write(req[:n]); err != nil {
				return
			}
			req = req[n:]
			time.Sleep(5 * time.Millisecond)
		}
	}()
	// Every reply here is +OK: read them until the connection ends or
	// all have come.
	var got []string
	buf := make([]byte, 5)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	closed := false
	for len(got) < len(cmds) {
		if _, err := io.ReadFull(nc, buf); err != nil {
			closed = err == io.EOF || strings.Contains(err.Error(), "reset")
			if !closed {
				t.Fatalf("%s: reading replies: %v", addr, err)
			}
			break
		}
		got = append(got, fmt.Sprintf("%q", buf))
	}
	ctl, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	var exist []string
	for _, k := range keys {
		v, err := ctl.DoStrings("EXISTS", k)
		if err != nil {
			t.Fatal(err)
		}
		if v.Int == 1 {
			exist = append(exist, k)
		}
		ctl.DoStrings("DEL", k)
	}
	return fmt.Sprintf("replies %v closed %v stored %v", got, closed, exist)
}
