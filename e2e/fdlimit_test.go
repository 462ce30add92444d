package e2e

import (
	"bufio"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOpenFilesLimit: under a small open-files limit the node and the
// proxy lower maxclients to fit (as Redis does at start), refuse the
// clients beyond it with Redis's error, and go on serving: running out
// of descriptors must never end the server.
func TestOpenFilesLimit(t *testing.T) {
	bin := buildShardgate(t)
	limited := func(args ...string) *exec.Cmd {
		return exec.Command("sh", append([]string{"-c", `ulimit -n 96 && exec "$0" "$@"`, bin}, args...)...)
	}
	node := limited("node", "--addr", "127.0.0.1:0")
	nlog := startLogged(t, node)
	nodeAddr := nlog.wait(t, listeningRE)
	nlog.wait(t, regexp.MustCompile(`maxclients lowered .* maxclients=(64)`))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := ln.Addr().String()
	ln.Close()
	px := limited("proxy", "--addr", proxyAddr, "--nodes", nodeAddr)
	plog := startLogged(t, px)
	plog.wait(t, regexp.MustCompile(`maxclients lowered .* maxclients=(64)`))

	for _, addr := range []string{nodeAddr, proxyAddr} {
		var conns []net.Conn
		served, refused := 0, 0
		for range 150 {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatalf("%s: dial: %v", addr, err)
			}
			conns = append(conns, c)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("PING\r\n")); err != nil {
				refused++
				continue
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			switch {
			case line == "+PONG\r\n":
				served++
			case strings.HasPrefix(line, "-ERR max number of clients"):
				refused++
			default:
				t.Fatalf("%s: client %d got %q (%v)", addr, len(conns), line, err)
			}
		}
		if served == 0 || refused == 0 || served > 64 {
			t.Errorf("%s: %d served, %d refused; want at most 64 served and the rest refused", addr, served, refused)
		}
		for _, c := range conns {
			c.Close()
		}
		// Still serving once the crowd has gone.
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.SetDeadline(time.Now().Add(2 * time.Second))
				c.Write([]byte("PING\r\n"))
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Close()
				if line == "+PONG\r\n" {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s stopped serving: %v\nnode log:\n%s\nproxy log:\n%s", addr, err, nlog, plog)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, p := range []*exec.Cmd{node, px} {
		if p.ProcessState != nil {
			t.Errorf("%v exited: %v", p.Args, p.ProcessState)
		}
	}
}
