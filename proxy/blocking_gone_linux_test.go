package proxy_test

import (
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// sendThenClose sends one command and closes the connection so that the
// command and the close arrive together: TCP_CORK holds the command until
// the close, which flushes both. The server reads the command with the
// close already in its socket, whatever the scheduling.
func sendThenClose(t *testing.T, addr string, args ...string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc := nc.(*net.TCPConn)
	rc, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1)
	}); err != nil || serr != nil {
		t.Fatalf("TCP_CORK: %v %v", err, serr)
	}
	var cmd [][]byte
	for _, a := range args {
		cmd = append(cmd, []byte(a))
	}
	if _, err := nc.Write(difftest.AppendCommand(nil, cmd...)); err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// TestBlockingClientGoneBeforeItsPop: a blocking pop whose list has an
// element is served at once (the proxy runs the non-blocking form), even
// when its client has gone by then, as Redis runs every command it has
// read before it reads the close: the lists end as on redis-server.
func TestBlockingClientGoneBeforeItsPop(t *testing.T) {
	oracle := startPlainOracle(t, "gone before its pop")
	cases := [][]string{
		{"BLPOP", "q", "0"},
		{"BRPOP", "q", "5"},
		{"BLMPOP", "0", "1", "q", "LEFT", "COUNT", "2"},
		{"BLMPOP", "0", "1", "q", "RIGHT", "COUNT", "2"},
		{"BLMOVE", "q", "{q}dst", "LEFT", "RIGHT", "0"},
	}
	// lists runs each case against addr and returns the lists after it.
	lists := func(t *testing.T, addr string, rounds int) []difftest.Value {
		b := dial(t, addr, 2)
		var out []difftest.Value
		for _, args := range cases {
			for range rounds {
				do(t, b, "DEL", "q", "{q}dst")
				do(t, b, "RPUSH", "q", "x", "y", "z")
				// The gone client's command has run once the server has
				// let go of it.
				conns := infoField(t, b, "stats", "total_connections_received")
				sendThenClose(t, addr, args...)
				waitFor(t, "the server to take and let go of the closed client", promptly, func() bool {
					return infoField(t, b, "stats", "total_connections_received") != conns &&
						infoField(t, b, "clients", "connected_clients") == "1"
				})
				out = append(out, do(t, b, "LRANGE", "q", "0", "-1"), do(t, b, "LRANGE", "{q}dst", "0", "-1"))
			}
		}
		return out
	}
	const rounds = 5
	exp := lists(t, oracle, rounds)
	forBackends(t, func(t *testing.T, e *blockEnv) {
		got := lists(t, e.addr, rounds)
		for i := range exp {
			list := []string{"q", "{q}dst"}[i%2]
			want(t, fmt.Sprintf("%q round %d: LRANGE %s", cases[i/(2*rounds)], i/2%rounds, list), got[i], exp[i])
		}
	})
}

// TestBlockingHalfClosedPipeline: a client that pipelines blocking pops
// on a list with elements and shuts its writing side reads their replies,
// and the elements are its, as from redis-server (a half-closed client's
// commands read before the close all run).
func TestBlockingHalfClosedPipeline(t *testing.T) {
	const in = "RPUSH hq a b c\r\nBLPOP hq 0\r\nBLMPOP 0 1 hq RIGHT COUNT 1\r\nBRPOPLPUSH hq {hq}d 0\r\nLLEN hq\r\n"
	exchange := func(t *testing.T, addr string) (string, difftest.Value) {
		nc := rawDial(t, addr)
		nc.SetDeadline(time.Now().Add(promptly))
		io.WriteString(nc, in)
		nc.(*net.TCPConn).CloseWrite()
		out, err := io.ReadAll(nc)
		if err != nil {
			t.Errorf("reading until the close: %v", err)
		}
		b := dial(t, addr, 2)
		dst := do(t, b, "LRANGE", "{hq}d", "0", "-1")
		do(t, b, "DEL", "hq", "{hq}d")
		return string(out), dst
	}
	oracle := startPlainOracle(t, "half-closed pipeline")
	wantOut, wantDst := exchange(t, oracle)
	forBackends(t, func(t *testing.T, e *blockEnv) {
		out, dst := exchange(t, e.addr)
		if out != wantOut {
			t.Errorf("the proxy sent %q, redis-server %q", out, wantOut)
		}
		want(t, "LRANGE {hq}d", dst, wantDst)
	})
}

// TestKilledClientRunsNothingMore: nothing a client sent runs after a
// CLIENT KILL of it answered on the proxy, neither the rest of its
// pipeline nor a blocking pop sent just before the kill, whose first,
// non-blocking try (or blocking one) used to take the element the killer
// pushed next (difftest.KilledClientScenario).
func TestKilledClientRunsNothingMore(t *testing.T) {
	difftest.KilledClientScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})), 40)
}
