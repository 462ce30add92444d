package difftest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"time"
)

// WaitServerSide waits (up to 5 s) until the kernel has completed c's
// connection on the server's side: /proc/net/tcp lists the server's socket
// for it as ESTABLISHED. On loopback connect can return before the last
// ACK of the handshake is processed, and until then no server, Redis
// included, can know the connection. Where /proc/net/tcp cannot be read it
// returns at once.
func WaitServerSide(c net.Conn) error {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || local.IP.To4() == nil {
		return nil
	}
	// The server's socket: local port = the server's, remote port = ours,
	// state 01 (TCP_ESTABLISHED).
	want := fmt.Appendf(nil, ":%04X ", remote.Port)
	peer := fmt.Appendf(nil, ":%04X 01 ", local.Port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			return nil
		}
		for line := range bytes.Lines(b) {
			if i := bytes.Index(line, want); i >= 0 && bytes.Contains(line[i:], peer) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("difftest: the server's side of %s -> %s is not established after 5 s", local, remote)
		}
		time.Sleep(20 * time.Microsecond)
	}
}
