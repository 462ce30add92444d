package slots

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// redisBinary is the oracle the live tests compare with.
const redisBinary = "redis-server"

// oracle is a connection to a private redis-server started for one test.
// The slots package cannot use internal/difftest (it imports the node,
// which imports slots), so this is the minimum needed here.
type oracle struct {
	conn net.Conn
	r    *bufio.Reader
}

// startOracle starts a cluster-mode redis-server on a free port and
// connects to it; the test is skipped when redis-server is not on PATH
// (and fails in CI, where it must be installed).
func startOracle(t testing.TB) *oracle {
	t.Helper()
	if _, err := exec.LookPath(redisBinary); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not on PATH: CI must install it (apt-get install redis-server)", redisBinary)
		}
		t.Skipf("%s not on PATH: skipping the comparison with real Redis (apt-get install redis-server)", redisBinary)
	}
	var lastErr error
	for range 5 {
		o, err := tryStartOracle(t)
		if err == nil {
			return o
		}
		lastErr = err
	}
	t.Fatalf("start %s: %v", redisBinary, lastErr)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tryStartOracle(t testing.TB) (*oracle, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	cmd := exec.Command(redisBinary, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--dir", dir, "--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			o := &oracle{conn: conn, r: bufio.NewReader(conn)}
			t.Cleanup(func() { conn.Close(); stop() })
			return o, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s exited at startup", redisBinary)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, err
		}
	}
}

// reply is a parsed RESP2 reply: err is set for error replies, str for
// bulk and simple strings, num for integers, elems for arrays.
type reply struct {
	err   string
	str   []byte
	num   int64
	elems []reply
	null  bool
}

func (o *oracle) do(t testing.TB, args ...[]byte) reply {
	t.Helper()
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n", len(a))
		b = append(append(b, a...), "\r\n"...)
	}
	o.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := o.conn.Write(b); err != nil {
		t.Fatal(err)
	}
	r, err := readReply(o.r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readReply(r *bufio.Reader) (reply, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 {
		return reply{}, fmt.Errorf("short line %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '-':
		return reply{err: body}, nil
	case '+':
		return reply{str: []byte(body)}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return reply{num: n}, err
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return reply{null: true}, err
		}
		buf := make([]byte, n+2)
		_, err = io.ReadFull(r, buf)
		return reply{str: buf[:n]}, err
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return reply{null: true}, err
		}
		out := reply{elems: make([]reply, 0, n)}
		for range n {
			e, err := readReply(r)
			if err != nil {
				return out, err
			}
			out.elems = append(out.elems, e)
		}
		return out, nil
	}
	return reply{}, fmt.Errorf("unexpected reply type %q", line[0])
}
