package proxy_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// authScript is a client session before and after AUTH whose every reply
// is the same on any Redis 7.0 with requirepass "pw".
const authScript = "PING\r\nGET k\r\nSET k v\r\nAUTH wrong\r\nAUTH default wrong\r\nAUTH nobody pw\r\nAUTH a b c\r\n" +
	"HELLO 3\r\nHELLO 2 AUTH default wrong\r\nCLIENT ID\r\nCLIENT GETNAME\r\nHGET k\r\nHGET k f\r\nSUNIONSTORE d a b\r\nAUTH pw\r\nPING\r\nAUTH default pw\r\nECHO hi\r\n" +
	"HELLO 2 AUTH default wrong\r\nPING after\r\n"

// exchange writes in, half-closes and returns all the server sent.
func exchange(t *testing.T, addr, in string) string {
	t.Helper()
	nc := rawDial(t, addr)
	nc.SetDeadline(time.Now().Add(promptly))
	io.WriteString(nc, in)
	nc.(*net.TCPConn).CloseWrite()
	out, _ := io.ReadAll(nc)
	return string(out)
}

// startRedisWithPassword runs a plain redis-server with requirepass pw on
// a free port, or skips (fails under CI=true) without one.
func startRedisWithPassword(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath(difftest.RedisBinary)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not on PATH", difftest.RedisBinary)
		}
		t.Skipf("%s not on PATH", difftest.RedisBinary)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--requirepass", "pw",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "redis-server to listen", 5*time.Second, func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err == nil
	})
	return addr
}

// TestRequirePassLikeRedis: the proxy with RequirePass answers a session
// before and after AUTH byte for byte as redis-server --requirepass does.
func TestRequirePassLikeRedis(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{RequirePass: "pw"})
	redis := startRedisWithPassword(t)
	want, got := exchange(t, redis, authScript), exchange(t, cl.Addr, authScript)
	if got != want {
		t.Errorf("session through the proxy:\n%q\nredis-server:\n%q", got, want)
	}
	// Unauthenticated clients get Redis's tighter request limits.
	for _, in := range []string{
		"*11\r\n$3\r\nSET\r\n",
		fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", 16385),
	} {
		if got, want := exchange(t, cl.Addr, in), exchange(t, redis, in); got != want {
			t.Errorf("%q: proxy %q, redis-server %q", in, got, want)
		}
	}
	// HELLO AUTH in RESP3, then commands reach the nodes.
	c := dial(t, cl.Addr, 2)
	if v := do(t, c, "GET", "k"); v.Text() != resp.ErrNoAuth {
		t.Errorf("GET before AUTH: %v", v)
	}
	if v := do(t, c, "HELLO", "3", "AUTH", "default", "pw"); v.Kind != difftest.Map {
		t.Fatalf("HELLO 3 AUTH: %v", v)
	}
	if v := do(t, c, "SET", "k", "v"); v.Text() != "OK" {
		t.Errorf("SET after HELLO AUTH: %v", v)
	}
}

// TestNodePassword: the proxy authenticates to nodes started with a
// password; with a wrong one, the nodes' slots fail promptly with an
// error, and the log says why.
func TestNodePassword(t *testing.T) {
	nodeOpts := node.Options{RequirePass: "npw"}
	cl := proxytest.StartWithNodes(t, 3, nodeOpts, proxy.Options{NodePassword: "npw"})
	for _, proto := range []int{2, 3} {
		c := dial(t, cl.Addr, proto)
		for i := range 10 {
			if v := do(t, c, "SET", fmt.Sprint("k", i), "v"); v.Text() != "OK" {
				t.Fatalf("RESP%d SET through password nodes: %v", proto, v)
			}
		}
		if v := do(t, c, "DBSIZE"); v.Int != 10 {
			t.Errorf("DBSIZE: %v", v)
		}
	}

	var log proxy.LogBuffer
	topo, _ := proxy.NewStaticTopology(cl.NodeAddrs)
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, NodePassword: "wrong", Logger: log.Logger()})
	for _, proto := range []int{2, 3} {
		c := dial(t, addr, proto)
		for range 3 {
			timed(t, "a request with a wrong node password", promptly, func() {
				if v := do(t, c, "GET", "k1"); v.Text() != resp.ErrClusterDownSlot {
					t.Errorf("RESP%d GET with a wrong node password: %v", proto, v)
				}
			})
		}
	}
	if !strings.Contains(log.String(), "WRONGPASS") || !strings.Contains(log.String(), "node unreachable") {
		t.Errorf("no log line about the refused AUTH:\n%s", log.String())
	}

	// Without a password the nodes are unreachable in the same way (not
	// NOAUTH passed on to clients, whose AUTH the proxy answers), and
	// the log says which flag is missing.
	var noPassLog proxy.LogBuffer
	_, addr, _ = proxytest.StartProxy(t, proxy.Options{Topology: topo, Logger: noPassLog.Logger()})
	for _, proto := range []int{2, 3} {
		c := dial(t, addr, proto)
		for _, cmd := range [][]string{{"GET", "k1"}, {"SET", "k1", "x"}, {"DBSIZE"}} {
			timed(t, "a request without the node password", promptly, func() {
				if v := do(t, c, cmd...); !strings.HasPrefix(v.Text(), "CLUSTERDOWN ") {
					t.Errorf("RESP%d %v without the node password: %v", proto, cmd, v)
				}
			})
		}
	}
	if !strings.Contains(noPassLog.String(), "--node-password") || !strings.Contains(noPassLog.String(), "node unreachable") {
		t.Errorf("no log line about the missing node password:\n%s", noPassLog.String())
	}
}

// TestDiffPasswordCleared: clearing the proxy's password with CONFIG SET
// serves the clients that connected while it was set, as Redis's
// authRequired does (difftest.PasswordClearedScenario).
func TestDiffPasswordCleared(t *testing.T) {
	difftest.PasswordClearedScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}

// TestDiffUnauthenticated: before AUTH, a Redis command shardgate does
// not serve meets Redis's refusals (difftest.UnauthenticatedScenario).
func TestDiffUnauthenticated(t *testing.T) {
	difftest.UnauthenticatedScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}

// TestDiffCommandsProcessed: total_commands_processed counts what Redis's
// call() runs (difftest.CommandsProcessedScenario).
func TestDiffCommandsProcessed(t *testing.T) {
	difftest.CommandsProcessedScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}
