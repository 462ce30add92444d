package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestShutdownLeavesCluster: SHUTDOWN sent to a cluster node (with its
// append-only log) makes it exit 0 having left the gossip cleanly (the
// others see it "left", not dead), and when it comes back on the same
// --dir and address it serves what it had acknowledged.
func TestShutdownLeavesCluster(t *testing.T) {
	bin := buildShardgate(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	a := startClusterNode(t, bin, dirs[0], "127.0.0.1:0")
	b := startClusterNode(t, bin, dirs[1], "127.0.0.1:0", a.gossip)
	startClusterNode(t, bin, dirs[2], "127.0.0.1:0", a.gossip)
	waitConsistent(t, bin, 3, 0, viaGossip(a.gossip)...)

	// Keys b owns: the ones it stores rather than redirects.
	nc, err := net.DialTimeout("tcp", b.addr, e2eTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(e2eTimeout))
	br := bufio.NewReader(nc)
	var mine []string
	for i := 0; len(mine) < 20 && i < 2000; i++ {
		k := "sd:" + strconv.Itoa(i)
		line := sendLine(t, nc, br, "SET", k, "v"+k)
		if line == "+OK\r\n" {
			mine = append(mine, k)
		}
	}
	if len(mine) < 20 {
		t.Fatalf("node b accepted only %d of 2000 keys", len(mine))
	}
	sendRaw(t, nc, "SHUTDOWN")
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("SHUTDOWN got a reply; the connection should close without one")
	}
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("node b after SHUTDOWN: %v\n%s", err, b.log)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("node b still running 10 s after SHUTDOWN\n%s", b.log)
	}
	bid := b.log.wait(t, regexp.MustCompile(`msg="node is a cluster member" id=(\S+)`))
	a.log.wait(t, regexp.MustCompile(`msg="cluster: member left".* id=`+bid))

	b2 := startClusterNode(t, bin, dirs[1], b.addr, a.gossip)
	nc2, err := net.DialTimeout("tcp", b2.addr, e2eTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	br2 := bufio.NewReader(nc2)
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range mine {
		for {
			nc2.SetDeadline(time.Now().Add(e2eTimeout))
			line := sendLine(t, nc2, br2, "GET", k)
			if line == "$"+strconv.Itoa(len("v"+k))+"\r\n" {
				if v, _ := br2.ReadString('\n'); v != "v"+k+"\r\n" {
					t.Fatalf("GET %s after the restart = %q", k, v)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s after the restart: %q\n%s", k, line, b2.log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// sendRaw writes one command.
func sendRaw(t *testing.T, nc net.Conn, args ...string) {
	t.Helper()
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

// sendLine writes one command and returns the first line of its reply.
func sendLine(t *testing.T, nc net.Conn, br *bufio.Reader, args ...string) string {
	t.Helper()
	sendRaw(t, nc, args...)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestSighupIgnored: a node, like redis-server, outlives SIGHUP (the
// terminal it was started from closing) and still stops cleanly on
// SIGTERM afterwards.
func TestSighupIgnored(t *testing.T) {
	bin := buildShardgate(t)
	cmd, addr, log := startNode(t, bin)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	nc, err := net.DialTimeout("tcp", addr, e2eTimeout)
	if err != nil {
		t.Fatalf("node after SIGHUP: %v\n%s", err, log)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(e2eTimeout))
	if line := sendLine(t, nc, bufio.NewReader(nc), "PING"); line != "+PONG\r\n" {
		t.Fatalf("PING after SIGHUP: %q\n%s", line, log)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node after SIGHUP then SIGTERM: %v\n%s", err, log)
	}
}

// TestSigtermAnswersWhatRan: a proxy or node process stopped by SIGTERM
// while clients pipeline INCRs answers every INCR that ran before it
// closes their connections (each counter equals the replies its client
// received), and exits 0 promptly.
func TestSigtermAnswersWhatRan(t *testing.T) {
	bin := buildShardgate(t)
	t.Run("proxy", func(t *testing.T) {
		var nodes []string
		for range 2 {
			_, addr, _ := startNode(t, bin)
			nodes = append(nodes, addr)
		}
		cmd := exec.Command(bin, "proxy", "--addr", "127.0.0.1:0", "--nodes", strings.Join(nodes, ","))
		log := startLogged(t, cmd)
		sigtermMidPipeline(t, cmd, log, log.wait(t, proxyListeningRE), func(key string) int64 {
			var ran int64
			for _, a := range nodes {
				if v := getInt(t, a, key); v > 0 {
					ran = v
				}
			}
			return ran
		})
	})
	t.Run("node", func(t *testing.T) {
		dir := t.TempDir()
		cmd, addr, log := startNode(t, bin, "--dir", dir, "--appendfsync", "no")
		var replayed string // a node started on dir: it replays the log
		sigtermMidPipeline(t, cmd, log, addr, func(key string) int64 {
			if replayed == "" {
				_, replayed, _ = startNode(t, bin, "--dir", dir)
			}
			return getInt(t, replayed, key)
		})
	})
}

// getInt reads an integer string key from the server at addr (0 if the
// key does not exist).
func getInt(t *testing.T, addr, key string) int64 {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.DoStrings("GET", key)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(v.Text(), 10, 64)
	return n
}

// sigtermMidPipeline has clients pipeline INCRs to addr, sends cmd
// SIGTERM once each has had a reply, and checks that it exits 0 promptly
// and that what ran (ran, read once it has exited) is what was answered.
func sigtermMidPipeline(t *testing.T, cmd *exec.Cmd, log *lineLog, addr string, ran func(key string) int64) {
	const (
		clients = 4
		n       = 100000 // INCRs each, in one pipeline
	)
	var (
		conns []*difftest.Conn
		keys  []string
	)
	for i := range clients {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		keys = append(keys, fmt.Sprint("sigterm:", i))
	}
	load := difftest.StartIncrPipelines(conns, keys, n)
	load.WaitStarted()
	signalAndWait(t, cmd, syscall.SIGTERM, 10*time.Second, log)
	for _, err := range load.Wait() {
		t.Error(err)
	}
	for i, key := range keys {
		if r := ran(key); r != load.Got[i] {
			t.Errorf("client %d: %d INCRs ran, the client got %d replies", i, r, load.Got[i])
		}
	}
}
