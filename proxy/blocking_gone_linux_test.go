package proxy_test

import (
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
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
// element is served at once (the proxy runs the non-blocking form); if its
// client has gone by then, the element goes back where it was rather than
// to nobody, as for a blocked client that leaves. (Another client's push
// sent after the close may overtake the command in the proxy, where Redis
// would have blocked the command and then read the close.)
func TestBlockingClientGoneBeforeItsPop(t *testing.T) {
	forBackends(t, func(t *testing.T, e *blockEnv) {
		b := dial(t, e.addr, 2)
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"BLPOP", "q", "0"}, []string{"x", "y", "z"}},
			{[]string{"BRPOP", "q", "5"}, []string{"x", "y", "z"}},
			{[]string{"BLMPOP", "0", "1", "q", "LEFT", "COUNT", "2"}, []string{"x", "y", "z"}},
			{[]string{"BLMPOP", "0", "1", "q", "RIGHT", "COUNT", "2"}, []string{"x", "y", "z"}},
			// What a move took stays in its destination, where a
			// reliable queue's recovery finds it.
			{[]string{"BLMOVE", "q", "{q}dst", "LEFT", "RIGHT", "0"}, []string{"y", "z"}},
		} {
			for round := range 5 {
				do(t, b, "DEL", "q", "{q}dst")
				do(t, b, "RPUSH", "q", "x", "y", "z")
				// The gone client's command has run (and what it took
				// is back) once the proxy has let go of it.
				conns := infoField(t, b, "stats", "total_connections_received")
				sendThenClose(t, e.addr, tc.args...)
				waitFor(t, "the proxy to take and let go of the closed client", promptly, func() bool {
					return infoField(t, b, "stats", "total_connections_received") != conns &&
						infoField(t, b, "clients", "connected_clients") == "1"
				})
				want(t, fmt.Sprintf("%q round %d: LRANGE q", tc.args, round), do(t, b, "LRANGE", "q", "0", "-1"), arr(tc.want...))
				if len(tc.want) == 2 {
					want(t, fmt.Sprintf("%q round %d: LRANGE {q}dst", tc.args, round), do(t, b, "LRANGE", "{q}dst", "0", "-1"), arr("x"))
				}
			}
		}
	})
}
