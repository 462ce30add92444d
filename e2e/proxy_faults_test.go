package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/slots"
)

// TestProxyNodeFaults runs `shardgate proxy` over two node processes and
// breaks one of them with real signals: SIGSTOP (alive, silent) fails its
// requests after --node-timeout; SIGKILL fails a request in flight at
// once; a node restarted on the same port is used again without touching
// the proxy. The other node's slots work throughout.
func TestProxyNodeFaults(t *testing.T) {
	bin := buildShardgate(t)
	_, addr0, _ := startNode(t, bin)
	victim, addr1, _ := startNode(t, bin)
	cmd := exec.Command(bin, "proxy", "--addr", "127.0.0.1:0", "--nodes", addr0+","+addr1,
		"--node-timeout", "300ms", "--redial-backoff", "50ms")
	plog := startLogged(t, cmd)
	paddr := plog.wait(t, proxyListeningRE)

	topo, err := proxy.NewStaticTopology([]string{addr0, addr1})
	if err != nil {
		t.Fatal(err)
	}
	keyOn := func(n int) string {
		for i := 0; ; i++ {
			if k := "k" + string(rune('a'+i%26)) + strings.Repeat("x", i/26); topo.Owner(slots.SlotString(k)) == n {
				return k
			}
		}
	}
	k0, k1 := keyOn(0), keyOn(1)
	c, err := difftest.Dial(paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	do := func(args ...string) (difftest.Value, time.Duration) {
		t.Helper()
		start := time.Now()
		v, err := c.DoStrings(args...)
		if err != nil {
			t.Fatalf("%v: %v\nproxy log:\n%s", args, err, plog)
		}
		return v, time.Since(start)
	}
	do("SET", k0, "zero")
	do("SET", k1, "one")

	// SIGSTOP: the node's socket is open but nothing answers.
	if err := victim.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, victim.Process.Pid)
	v, d := do("GET", k1)
	if !strings.HasPrefix(v.Text(), "ERR connection to node "+addr1) || d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("GET on a stopped node: %v after %v; want the connection-lost error after --node-timeout", v, d)
	}
	if v, _ := do("GET", k0); v.Text() != "zero" {
		t.Errorf("GET on the live node while the other is stopped: %v", v)
	}
	plog.wait(t, regexp.MustCompile(`node not answering`))
	if err := victim.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the continued node to answer", func() bool {
		v, _ := do("GET", k1)
		return v.Text() == "one"
	})

	// A request in flight when the node dies: stop it, send, kill it.
	victim.Process.Signal(syscall.SIGSTOP)
	// Signals are asynchronous: a node still running would answer.
	waitStopped(t, victim.Process.Pid)
	nc, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(e2eTimeout))
	nc.Write([]byte("GET " + k1 + "\r\n"))
	time.Sleep(100 * time.Millisecond)
	victim.Process.Kill()
	victim.Wait()
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "-ERR connection to node "+addr1) && !strings.HasPrefix(line, "-CLUSTERDOWN") {
		t.Errorf("request in flight on a killed node: %q %v", line, err)
	}
	if v, _ := do("GET", k1); !v.IsError() {
		t.Errorf("GET on a killed node: %v", v)
	}
	if v, _ := do("GET", k0); v.Text() != "zero" {
		t.Errorf("GET on the live node after the kill: %v", v)
	}

	// Restarted on the same port: the proxy finds it by itself.
	startNode(t, bin, "--addr", addr1)
	waitUntil(t, "the restarted node to serve its slots", func() bool {
		v, _ := do("SET", k1, "again")
		return v.Text() == "OK"
	})
	if v, _ := do("GET", k1); v.Text() != "again" {
		t.Errorf("GET on the restarted node: %v", v)
	}

	// And the proxy still shuts down cleanly.
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("proxy exit: %v\n%s", err, plog)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("proxy still running 5s after SIGTERM")
	}
}

// waitStopped waits until the process is in the stopped state ('T' in
// /proc/<pid>/stat).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	waitUntil(t, "the node to stop", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		_, rest, ok := strings.Cut(string(b), ") ")
		return ok && strings.HasPrefix(rest, "T")
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e2eTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
