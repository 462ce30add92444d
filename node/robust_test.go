package node_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
)

// Robustness: whatever clients send or do, the node replies like Redis
// or closes the connection, and it never crashes, hangs or leaks
// goroutines. Every network operation has a deadline.

const robustTimeout = 10 * time.Second

// syncBuffer collects the node's log lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testNode struct {
	srv  *node.Server
	addr string
	logs *syncBuffer
	done chan error // Serve's result
}

// startNode serves a fresh node on a free port; setup (optional) runs
// between New and Serve. The test's cleanup closes it.
func startNode(t *testing.T, opts node.Options, setup func(*node.Server)) *testNode {
	t.Helper()
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := node.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{srv: srv, addr: ln.Addr().String(), logs: logs, done: make(chan error, 1)}
	go func() { n.done <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		srv.Close()
		select {
		case err := <-n.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(robustTimeout):
			t.Error("Serve did not return after Close")
		}
	})
	return n
}

// checkLeaks fails the test if goroutines started during it outlive it.
// Register it first, so it runs after every other cleanup.
func checkLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dialNode(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, robustTimeout)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(robustTimeout))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{Conn: nc, br: bufio.NewReader(nc)}
}

// reply reads one RESP2 reply and renders it compactly: "+PONG",
// "-ERR ...", ":1", "$hello", "$nil", "*[a b]".
func (c *rawConn) reply() (string, error) {
	line, err := c.br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	switch line[0] {
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "$nil", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, b); err != nil {
			return "", err
		}
		return "$" + string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		var parts []string
		for range n {
			p, err := c.reply()
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return "*[" + strings.Join(parts, " ") + "]", nil
	}
	return line, nil
}

func (c *rawConn) do(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := io.WriteString(c, cmd); err != nil {
		t.Fatal(err)
	}
	r, err := c.reply()
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return r
}

// expectClosed reads until the node closes the connection.
func (c *rawConn) expectClosed(t *testing.T) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(robustTimeout))
	if n, err := io.Copy(io.Discard, c.br); err != nil {
		t.Fatalf("connection not closed by the node: %v", err)
	} else if n != 0 {
		t.Fatalf("%d unexpected bytes before close", n)
	}
}

// checkFor polls cond until it returns nil or timeout passes.
func checkFor(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connectedClients reads connected_clients from INFO over a new connection
// (which counts itself).
func connectedClients(t *testing.T, addr string) int {
	t.Helper()
	c := dialNode(t, addr)
	defer c.Close()
	info := c.do(t, "INFO clients\r\n")
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n - 1
		}
	}
	t.Fatalf("no connected_clients in %q", info)
	return 0
}

func waitNoClients(t *testing.T, addr string) {
	t.Helper()
	checkFor(t, robustTimeout, func() error {
		if n := connectedClients(t, addr); n != 0 {
			return fmt.Errorf("%d clients still connected", n)
		}
		return nil
	})
}

// TestRobustProtocolErrors: malformed requests get Redis's exact error
// text, then the connection closes; replies to the commands before it in
// the same pipeline still arrive; the node serves others throughout.
func TestRobustProtocolErrors(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	for _, c := range []struct {
		name, in string
		err      *resp.ProtocolError
	}{
		{"oversized bulk", "*1\r\n$536870913\r\n", resp.ErrInvalidBulkLen},
		{"absurd bulk", "*2\r\n$3\r\nGET\r\n$9999999999\r\n", resp.ErrInvalidBulkLen},
		{"negative bulk", "*1\r\n$-5\r\n", resp.ErrInvalidBulkLen},
		{"absurd multibulk", "*99999999999\r\n", resp.ErrInvalidMultibulkLen},
		{"multibulk over INT_MAX", "*2147483648\r\n", resp.ErrInvalidMultibulkLen},
		{"not a bulk", "*1\r\n:1\r\n", &resp.ProtocolError{Msg: "expected '$', got ':'"}},
		{"unbalanced quotes", "ECHO \"abc\r\n", resp.ErrUnbalancedQuotes},
		{"too big inline", strings.Repeat("x", 70000), resp.ErrTooBigInline},
		{"too big mbulk count", "*" + strings.Repeat("9", 70000), resp.ErrTooBigMbulkCount},
		{"too big bulk count", "*1\r\n$" + strings.Repeat("9", 70000), resp.ErrTooBigBulkCount},
		{"binary garbage", "*\xff\xfe\r\n", resp.ErrInvalidMultibulkLen},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := dialNode(t, n.addr)
			if _, err := io.WriteString(conn, "PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"+c.in); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"+PONG", "$hi", "-ERR " + c.err.Error()} {
				got, err := conn.reply()
				if err != nil || got != want {
					t.Fatalf("got %q (%v), want %q", got, err, want)
				}
			}
			conn.expectClosed(t)
			if got := dialNode(t, n.addr).do(t, "PING\r\n"); got != "+PONG" {
				t.Fatalf("node after a protocol error: %q", got)
			}
		})
	}
	waitNoClients(t, n.addr)
}

// TestRobustUnauthenticatedLimits: before AUTH, Redis's small request
// limits apply; after AUTH in the same pipeline, they are gone.
func TestRobustUnauthenticatedLimits(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{RequirePass: "secret"}, nil)

	c := dialNode(t, n.addr)
	io.WriteString(c, "*11\r\n")
	if got, _ := c.reply(); got != "-ERR "+resp.ErrUnauthMultibulkLen.Error() {
		t.Fatalf("got %q", got)
	}
	c.expectClosed(t)

	c = dialNode(t, n.addr)
	io.WriteString(c, "*2\r\n$4\r\nECHO\r\n$16385\r\n")
	if got, _ := c.reply(); got != "-ERR "+resp.ErrUnauthBulkLen.Error() {
		t.Fatalf("got %q", got)
	}
	c.expectClosed(t)

	c = dialNode(t, n.addr)
	big := strings.Repeat("b", 20000)
	io.WriteString(c, "AUTH secret\r\n*12\r\n$4\r\nMSET\r\n$1\r\na\r\n$20000\r\n"+big+"\r\n"+
		strings.Repeat("$1\r\nk\r\n$1\r\nv\r\n", 4)+"$1\r\nz\r\n$1\r\nv\r\n")
	for _, want := range []string{"+OK"} {
		if got, err := c.reply(); got != want {
			t.Fatalf("got %q (%v), want %q", got, err, want)
		}
	}
	// MSET a.. k.. z: different slots, so CROSSSLOT — what matters is that
	// the request was parsed, not refused as unauthenticated.
	if got, err := c.reply(); err != nil || strings.Contains(got, "Protocol error") {
		t.Fatalf("after AUTH: %q %v", got, err)
	}
}

// TestRobustBinaryGarbage throws random bytes at the node on many
// connections; each gets replies and perhaps a close, and the node stays
// up.
func TestRobustBinaryGarbage(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	var wg sync.WaitGroup
	for i := range 64 {
		buf := make([]byte, 1+rng.IntN(20000))
		for j := range buf {
			buf[j] = byte(rng.Uint32())
			if i%2 == 0 && rng.IntN(8) == 0 {
				buf[j] = "*$\r\n0123456789-"[rng.IntN(15)] // more protocol-like
			}
		}
		wg.Go(func() {
			nc, err := net.DialTimeout("tcp", n.addr, robustTimeout)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(robustTimeout))
			go func() {
				nc.Write(buf)
				nc.(*net.TCPConn).CloseWrite()
			}()
			// The node answers what it can and closes when it sees our
			// EOF (or a protocol error) — it must not hang.
			if _, err := io.Copy(io.Discard, nc); err != nil && !errors.Is(err, net.ErrClosed) &&
				!strings.Contains(err.Error(), "reset by peer") {
				t.Errorf("garbage connection %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	c := dialNode(t, n.addr)
	if got := c.do(t, "PING\r\n"); got != "+PONG" {
		t.Fatalf("PING after garbage: %q", got)
	}
	c.Close()
	waitNoClients(t, n.addr)
}

// TestRobustDisconnectMidCommand: clients that vanish in the middle of a
// command (inside a header, half a bulk, between arguments) leave nothing
// behind and change nothing.
func TestRobustDisconnectMidCommand(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	full := "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\n"
	for cut := 1; cut < len(full); cut++ {
		nc, err := net.DialTimeout("tcp", n.addr, robustTimeout)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(robustTimeout))
		io.WriteString(nc, full[:cut])
		if cut%2 == 0 {
			nc.(*net.TCPConn).SetLinger(0) // RST instead of FIN
		}
		nc.Close()
	}
	waitNoClients(t, n.addr)
	if got := dialNode(t, n.addr).do(t, "EXISTS key\r\n"); got != ":0" {
		t.Fatalf("a half-sent SET changed the keyspace: EXISTS = %q", got)
	}
}

// patternReader yields size bytes of a repeating pattern without holding
// them in memory.
type patternReader struct {
	left int
	pat  []byte
	off  int
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && p.left > 0 {
		k := copy(b[n:min(len(b), n+p.left)], p.pat[p.off:])
		p.off = (p.off + k) % len(p.pat)
		n += k
		p.left -= k
	}
	return n, nil
}

// TestRobustHugeArgument sends a 100 MB argument in small pieces: it is
// stored intact, and what the node allocates for it is a small multiple of
// its size (the read buffer grows with the bytes received, not with the
// length the header claims).
func TestRobustHugeArgument(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 100 MB; skipped with -short")
	}
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	const size = 100 << 20
	c := dialNode(t, n.addr)
	c.SetDeadline(time.Now().Add(2 * time.Minute))

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	fmt.Fprintf(c, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", size)
	pat := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	w := bufio.NewWriterSize(c, 8192)
	if _, err := io.Copy(w, &patternReader{left: size, pat: pat}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "\r\n")
	w.Flush()
	if got, err := c.reply(); got != "+OK" {
		t.Fatalf("SET big: %q %v", got, err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("storing a %d MB argument allocated %d MB in all", size>>20, alloc>>20)
	if alloc > 9*size/2 {
		t.Errorf("storing a %d MB argument allocated %d MB", size>>20, alloc>>20)
	}
	if got := c.do(t, "STRLEN big\r\n"); got != ":"+strconv.Itoa(size) {
		t.Fatalf("STRLEN big = %q", got)
	}
	// Spot-check the content at both ends and in the middle.
	for _, off := range []int{0, size / 2, size - 10} {
		got := c.do(t, fmt.Sprintf("GETRANGE big %d %d\r\n", off, off+9))
		want := "$"
		for i := range 10 {
			want += string(pat[(off+i)%len(pat)])
		}
		if got != want {
			t.Fatalf("GETRANGE at %d = %q, want %q", off, got, want)
		}
	}
	if got := c.do(t, "DEL big\r\n"); got != ":1" {
		t.Fatalf("DEL big = %q", got)
	}
}

// TestRobustManyConnections opens and closes thousands of connections,
// many at a time; the node serves them all and ends with none.
func TestRobustManyConnections(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	const total, parallel = 3000, 100
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var failures sync.Map
	for i := range total {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", n.addr, robustTimeout)
			if err != nil {
				failures.Store(i, err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(robustTimeout))
			if i%3 == 0 {
				return // connect and leave without a word
			}
			io.WriteString(nc, "PING\r\n")
			line, err := bufio.NewReader(nc).ReadString('\n')
			if err != nil || line != "+PONG\r\n" {
				failures.Store(i, fmt.Errorf("PING: %q %v", line, err))
			}
		})
	}
	wg.Wait()
	failures.Range(func(k, v any) bool {
		t.Errorf("connection %v: %v", k, v)
		return true
	})
	waitNoClients(t, n.addr)
}

// TestRobustHandlerPanic: a command whose handler panics replies an ERR,
// logs the panic with its stack, releases its locks, and the connection
// and the node carry on — for data commands, node-level commands, and
// inside EXEC.
func TestRobustHandlerPanic(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, func(s *node.Server) {
		node.PanicOnForTest(s, "get", "boom in get")
		node.PanicOnForTest(s, "echo", "boom in echo")
	})
	c := dialNode(t, n.addr)
	wantErr := "-" + resp.ErrInternalPanic
	for _, step := range []struct{ cmd, want string }{
		{"SET k v\r\n", "+OK"},
		{"GET k\r\n", wantErr},
		{"SET k v2\r\n", "+OK"}, // k's shard lock was released
		{"GET k\r\n", wantErr},
		{"ECHO hello\r\n", wantErr},
		{"PING\r\n", "+PONG"},
		{"STRLEN k\r\n", ":2"},
	} {
		if got := c.do(t, step.cmd); got != step.want {
			t.Fatalf("%q: got %q, want %q", step.cmd, got, step.want)
		}
	}
	// Pipelined: the panicking command's reply is an error in its place.
	io.WriteString(c, "GET k\r\nINCR {k}n\r\nECHO x\r\nINCR {k}n\r\n")
	for _, want := range []string{wantErr, ":1", wantErr, ":2"} {
		if got, err := c.reply(); got != want {
			t.Fatalf("pipeline: got %q (%v), want %q", got, err, want)
		}
	}
	// Inside a transaction the error takes the command's place in EXEC
	// (the keys share a slot, as a cluster transaction must).
	for _, step := range []struct{ cmd, want string }{
		{"MULTI\r\n", "+OK"},
		{"INCR {k}n\r\n", "+QUEUED"},
		{"GET k\r\n", "+QUEUED"},
		{"ECHO x\r\n", "+QUEUED"},
		{"INCR {k}n\r\n", "+QUEUED"},
		{"EXEC\r\n", "*[:3 " + wantErr + " " + wantErr + " :4]"},
	} {
		if got := c.do(t, step.cmd); got != step.want {
			t.Fatalf("%q: got %q, want %q", step.cmd, got, step.want)
		}
	}
	logs := n.logs.String()
	for _, want := range []string{"boom in get", "boom in echo", "export_test.go"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%.2000s", want, logs)
		}
	}
	if got := dialNode(t, n.addr).do(t, "GET other\r\n"); got != wantErr {
		t.Fatalf("other connection: %q", got)
	}
}

// TestRobustCloseWithClients: Close returns promptly with clients idle,
// mid-command, mid-pipeline and in MULTI, and every one of them sees its
// connection end.
func TestRobustCloseWithClients(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	var conns []*rawConn
	for i := range 40 {
		c := dialNode(t, n.addr)
		switch i % 4 {
		case 0: // idle after a command
			if got := c.do(t, "PING\r\n"); got != "+PONG" {
				t.Fatal(got)
			}
		case 1: // half a bulk
			io.WriteString(c, "*2\r\n$4\r\nECHO\r\n$100\r\nabc")
		case 2: // in MULTI
			c.do(t, "MULTI\r\n")
			c.do(t, "SET a b\r\n")
		case 3: // never said anything
		}
		conns = append(conns, c)
	}
	checkFor(t, robustTimeout, func() error {
		if got := connectedClients(t, n.addr); got != len(conns) {
			return fmt.Errorf("%d clients connected, want %d", got, len(conns))
		}
		return nil
	})
	myID := strings.TrimPrefix(conns[0].do(t, "CLUSTER MYID\r\n"), "$")
	if !stillServing(n.addr, myID) {
		t.Fatal("the check does not see the live node")
	}
	start := time.Now()
	n.srv.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case err := <-n.done:
		if err != nil {
			t.Fatalf("Serve after Close: %v", err)
		}
		n.done <- nil // for the cleanup
	case <-time.After(robustTimeout):
		t.Fatal("Serve did not return")
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(robustTimeout))
		if _, err := io.Copy(io.Discard, c.br); err != nil && !strings.Contains(err.Error(), "reset by peer") {
			t.Errorf("client %d not disconnected: %v", i, err)
		}
	}
	if stillServing(n.addr, myID) {
		t.Error("node still accepts connections after Close")
	}
}

// TestCloseRacingServe: Close called while Serve is starting waits for
// the background goroutines Serve starts, and Serve returns. Serve used to
// add them to the WaitGroup Close was already waiting on (reported by the
// race detector).
func TestCloseRacingServe(t *testing.T) {
	checkLeaks(t)
	for range 100 {
		srv, err := node.New(node.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), ln) }()
		// Close just after Serve has taken the listener, while it
		// starts its goroutines.
		for srv.Addr() == nil {
			runtime.Gosched()
		}
		srv.Close()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, node.ErrServerClosed) {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(robustTimeout):
			t.Fatal("Serve did not return after Close")
		}
	}
}
