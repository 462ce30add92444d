package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// These tests run the built node the way a new user does, next to a real
// cluster-mode redis-server, with real clients (raw TCP, redis-cli and,
// when it is installed, redis-py), and compare what the clients see.

// needTool returns the path of a Redis tool, skipping the test when it is
// missing, except under CI=true where .ci/run installs Redis.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not on PATH", name)
		}
		t.Skipf("%s not on PATH (apt-get install redis-server redis-tools)", name)
	}
	return p
}

// startNodeAndRedis starts the built node and a cluster-mode redis-server
// owning all slots, and returns their addresses.
func startNodeAndRedis(t *testing.T) (node, redis string) {
	t.Helper()
	needTool(t, difftest.RedisBinary)
	bin := buildShardgate(t)
	_, node, _ = startNode(t, bin)
	r, err := difftest.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return node, r.Addr
}

// rawExchange writes in to a new connection, half-closes it and returns
// every byte the server sent until it closed the connection. The
// half-close makes the end deterministic: both servers answer what they
// read and then see end of file, so no idle timeout is involved.
func rawExchange(t *testing.T, addr string, in []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, e2eTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(e2eTimeout))
	if _, err := c.Write(in); err != nil {
		t.Fatalf("write %q: %v", in, err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%q: %s did not close the connection within %v (read %q)", in, addr, e2eTimeout, out)
	}
	// A reset after the last reply is how a server may drop a client;
	// what was read before it still counts.
	return out
}

// TestRawInputLikeRedis sends hand-written request bytes (inline and
// multibulk, malformed, telnet-style quoting, HTTP) to the node and to
// redis-server and requires the same reply bytes from both.
func TestRawInputLikeRedis(t *testing.T) {
	node, redis := startNodeAndRedis(t)
	cases := []struct {
		name string
		in   string
	}{
		{"inline", "PING\r\n"},
		{"inline LF only", "PING\n"},
		{"empty lines", "\r\n\r\nPING\r\n"},
		{"trailing spaces", "ping   \r\n"},
		{"tabs", "\t\tPING\r\n"},
		{"quoted args", "set \"a b\" \"c\\x41d\"\r\nget \"a b\"\r\n"},
		{"unbalanced quotes", "echo \"unbalanced\r\n"},
		{"quote then text", "echo 'x'y\r\n"},
		{"bad hex escape", "ECHO \"\\xZZ\"\r\n"},
		{"escapes", "ECHO \"\\x41\\n\"\r\n"},
		{"NUL in inline", "PING\x00FOO\r\n"},
		{"zero multibulk", "*0\r\nPING\r\n"},
		{"negative multibulk", "*-1\r\nPING\r\n"},
		{"null bulk arg", "*1\r\n$-1\r\n"},
		{"bad multibulk length", "*abc\r\n"},
		{"integer instead of bulk", "*1\r\n:1\r\n"},
		{"bulk longer than said", "*2\r\n$4\r\nECHO\r\n$3\r\nabcd\r\n"},
		{"bare bulk", "$4\r\nPING\r\n"},
		{"multibulk too long", "*1048577\r\n"},
		{"bulk too long", "*1\r\n$536870913\r\n"},
		{"bulk incomplete", "*1\r\n$536870912\r\n"},
		{"negative bulk", "*2\r\n$3\r\nGET\r\n$-5\r\n"},
		{"space in bulk header", "*1\r\n$ 4\r\nPING\r\n"},
		{"leading zeros", "*01\r\n$04\r\nPING\r\n"},
		{"plus sign", "*+1\r\n$4\r\nPING\r\n"},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx"},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"},
		{"huge number", "*" + strings.Repeat("1", 30) + "\r\n"},
		{"binary", "\x00\x01\x02\xff\r\n"},
		{"pipelined", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" + strings.Repeat("*1\r\n$4\r\nping\r\n", 3)},
		{"truncated command", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n"},
		{"QUIT then more", "*1\r\n$4\r\nQUIT\r\nPING\r\n"},
		{"MULTI errors", "MULTI\r\nGET\r\nEXEC\r\nMULTI\r\nMULTI\r\nWATCH x\r\nEXEC\r\nEXEC\r\n"},
		{"CLIENT REPLY", "CLIENT REPLY OFF\r\nPING\r\nCLIENT REPLY ON\r\nPING\r\n"},
		{"RESET", "RESET\r\nPING\r\n"},
		{"SELECT", "*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\nSELECT 0\r\n"},
		{"unknown command", "nosuch a b c d e f g h\r\nnosuch " + strings.Repeat("x", 200) + "\r\n"},
		{"HELLO errors", "HELLO 4\r\nHELLO 2 AUTH\r\nHELLO abc\r\n"},
		// Redis drops, without a reply, a connection that sends POST or
		// Host: as a command (cross-protocol scripting from a browser),
		// and with it the replies it had not yet written.
		{"HTTP GET", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"HTTP POST", "POST / HTTP/1.1\r\n\r\n"},
		{"Host header", "host: x\r\nPING\r\n"},
		{"POST multibulk", "*1\r\n$4\r\nPOST\r\n"},
		{"POST and a NUL", "*1\r\n$5\r\nPOST\x00\r\nPING\r\n"},
		{"Host: and a NUL", "*2\r\n$7\r\nhost:\x00x\r\n$1\r\na\r\nPING\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rawExchange(t, node, []byte(c.in))
			want := rawExchange(t, redis, []byte(c.in))
			if !bytes.Equal(got, want) {
				t.Errorf("input %q\n node: %q\nredis: %q", c.in, got, want)
			}
		})
	}
}

// runTool runs a Redis command line tool with stdin and returns its
// combined output.
func runTool(t *testing.T, tool string, stdin []byte, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %q: timed out", tool, args)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %q: %v", tool, args, err)
	}
	return string(out)
}

// respCommands encodes commands as RESP, the input of redis-cli --pipe.
func respCommands(cmds [][]string) []byte {
	var b []byte
	for _, c := range cmds {
		args := make([][]byte, len(c))
		for i, a := range c {
			args[i] = []byte(a)
		}
		b = difftest.AppendCommand(b, args...)
	}
	return b
}

// TestRedisCLILikeRedis drives redis-cli as users do (--pipe, --scan,
// --bigkeys, -3, -c, --no-raw formatting) against both servers and
// requires the same output. Values have distinct sizes so that --bigkeys'
// summary does not depend on the scan order.
func TestRedisCLILikeRedis(t *testing.T) {
	cli := needTool(t, "redis-cli")
	node, redis := startNodeAndRedis(t)
	var load [][]string
	for i := 1; i <= 60; i++ {
		load = append(load, []string{"SET", fmt.Sprintf("str:%d", i), strings.Repeat("x", i*7)})
	}
	load = append(load,
		[]string{"INCRBY", "counter", "41"},
		[]string{"SET", "{t}a", "1"},
		[]string{"SET", "{t}b", "2"},
		[]string{"PFADD", "hll", "a", "b", "c"},
		[]string{"SETBIT", "bitmap", "100000", "1"},
	)
	pipeIn := respCommands(load)

	hostPort := func(addr string) []string {
		h, p, _ := net.SplitHostPort(addr)
		return []string{"-h", h, "-p", p}
	}
	for _, c := range []struct {
		name  string
		args  []string
		stdin []byte
		// sorted compares the output's lines as a set (scan order is
		// the server's business).
		sorted bool
		// from keeps only the output from the first line containing it.
		from string
	}{
		{name: "pipe", args: []string{"--pipe"}, stdin: pipeIn},
		{name: "scan", args: []string{"--scan"}, sorted: true},
		{name: "scan pattern", args: []string{"--scan", "--pattern", "str:1*"}, sorted: true},
		{name: "bigkeys", args: []string{"--bigkeys"}, from: "-------- summary -------"},
		{name: "dbsize", args: []string{"dbsize"}},
		{name: "info keyspace", args: []string{"info", "keyspace"}},
		{name: "get", args: []string{"get", "str:3"}},
		{name: "no-raw get missing", args: []string{"--no-raw", "get", "missing"}},
		{name: "no-raw incrbyfloat", args: []string{"--no-raw", "incrbyfloat", "f", "1.5"}},
		{name: "resp3 incrbyfloat", args: []string{"-3", "--no-raw", "incrbyfloat", "f", "1.5"}},
		{name: "resp3 config get", args: []string{"-3", "--no-raw", "config", "get", "maxclients"}},
		{name: "resp3 mget", args: []string{"-3", "--no-raw", "mget", "{t}a", "{t}b", "{t}c"}},
		{name: "resp3 ttl", args: []string{"-3", "--no-raw", "ttl", "nokey"}},
		{name: "resp3 hello", args: []string{"-3", "--no-raw", "hello", "3"}, from: "5# \"mode\""},
		{name: "no-raw pfcount", args: []string{"--no-raw", "pfcount", "hll"}},
		{name: "no-raw bitcount", args: []string{"--no-raw", "bitcount", "bitmap"}},
		{name: "cluster client", args: []string{"-c", "--no-raw", "mget", "{t}a", "{t}b"}},
		{name: "cluster client crossslot", args: []string{"-c", "--no-raw", "mget", "str:1", "str:2"}},
		{name: "select", args: []string{"-n", "1", "ping"}},
		{name: "repeat", args: []string{"-r", "3", "--no-raw", "incr", "counter"}},
		{name: "unknown command", args: []string{"--no-raw", "nosuchcommand", "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var outs [2]string
			for i, addr := range []string{node, redis} {
				out := runTool(t, cli, c.stdin, append(hostPort(addr), c.args...)...)
				out = strings.ReplaceAll(out, addr, "ADDR")
				if c.from != "" {
					if j := strings.Index(out, c.from); j >= 0 {
						out = out[j:]
					}
				}
				if c.sorted {
					lines := strings.Split(strings.TrimSpace(out), "\n")
					slices.Sort(lines)
					out = strings.Join(lines, "\n")
				}
				outs[i] = out
			}
			if outs[0] != outs[1] {
				t.Errorf("redis-cli %q\n--- node:\n%s\n--- redis:\n%s", c.args, outs[0], outs[1])
			}
		})
	}
}

// pythonWithRedis returns a Python interpreter that can import redis-py
// (Debian's python3-redis installs it for /usr/bin/python3), or "".
func pythonWithRedis() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(py); err == nil {
			if exec.Command(p, "-c", "import redis").Run() == nil {
				return p
			}
		}
	}
	return ""
}

// TestRedisPyLikeRedis runs e2e/py/clients_diff.py, typical redis-py use
// (pipelines, transactions, WATCH retries from threads, scan_iter, binary
// values, errors), against both servers; the script prints every
// difference and exits 1 if there is one. redis-py is optional: the test
// skips without it (apt-get install python3-redis).
func TestRedisPyLikeRedis(t *testing.T) {
	py := pythonWithRedis()
	if py == "" {
		t.Skip("no python3 with redis-py (apt-get install python3-redis)")
	}
	node, redis := startNodeAndRedis(t)
	script, err := filepath.Abs(filepath.Join("py", "clients_diff.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*e2eTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, node, redis).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	t.Logf("%s", out)
}

// TestNodeBadFlagValues: values a flag's type accepts but the node cannot
// use are refused at start with a message naming the flag, not with a
// panic after the node has started listening.
func TestNodeBadFlagValues(t *testing.T) {
	bin := buildShardgate(t)
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--active-expiry-interval", "-1s"}, "active-expiry-interval"},
		{[]string{"--maxclients", "-1"}, "maxclients"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
		cmd := exec.CommandContext(ctx, bin, append([]string{"node", "--addr", "127.0.0.1:0"}, c.args...)...)
		out, _ := cmd.CombinedOutput()
		cancel()
		s := string(out)
		code := cmd.ProcessState.ExitCode()
		if code == 0 || strings.Contains(s, "panic:") || strings.Contains(s, "node listening") ||
			!strings.Contains(strings.ToLower(s), c.flag) {
			t.Errorf("shardgate node %q: exit %d, output:\n%s\nwant a non-zero exit before listening, with a message naming %s and no panic",
				c.args, code, s, c.flag)
		}
	}
}
