package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chunkReader hands out data in the given chunk sizes (cycling through
// them), so a test controls exactly how the stream is split into reads.
type chunkReader struct {
	data   []byte
	chunks []int
	i      int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.chunks) > 0 {
		n = max(1, c.chunks[c.i%len(c.chunks)])
		c.i++
	}
	n = min(n, len(c.data), len(p))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// parseResult is everything a Reader made of a byte stream: the commands
// (copied), and the protocol error that ended it, if any.
type parseResult struct {
	cmds [][]string
	err  error
}

func (p parseResult) String() string {
	return fmt.Sprintf("cmds=%q err=%v", p.cmds, p.err)
}

// readAll parses everything r's source gives. Without a protocol error the
// stream simply ends (possibly inside a command, which Redis would wait on).
func readAll(t testing.TB, r *Reader) parseResult {
	t.Helper()
	var res parseResult
	for {
		args, ok, err := r.Next()
		if err != nil {
			res.err = err
			return res
		}
		if ok {
			cmd := make([]string, len(args))
			for i, a := range args {
				cmd[i] = string(a)
			}
			res.cmds = append(res.cmds, cmd)
			continue
		}
		if err := r.Fill(); err != nil {
			if err != io.EOF {
				t.Fatalf("Fill: %v", err)
			}
			return res
		}
	}
}

func sameResult(a, b parseResult) bool {
	return a.String() == b.String()
}

// startRedis runs a plain (non-cluster) redis-server on a free port for
// the life of the test, with extra arguments such as --requirepass. The
// protocol parser is the same in cluster mode; a plain server starts
// faster. The test is skipped when redis-server is not installed, except
// in CI (CI=true), where that must fail.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not on PATH: CI must install it (apt-get install redis-server)")
		}
		t.Skip("redis-server not on PATH (apt-get install redis-server)")
	}
	for attempt := 0; attempt < 5; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
			"--dir", t.TempDir()}, extra...)
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-done:
				deadline = time.Time{} // exited: port taken? try another
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Cleanup(func() {
					cmd.Process.Kill()
					<-done
				})
				return addr
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Kill()
		<-done
	}
	t.Fatal("could not start redis-server")
	return ""
}

// rawReply is one reply as a server sent it, RESP2 only (what a fresh
// connection speaks): its first byte and its text (the bulk payload for
// '$', the line for '+', '-' and ':'; nested replies are skipped).
type rawReply struct {
	kind byte
	text string
}

// talk sends input to addr in small paced writes, so that the server sees
// the stream arrive piece by piece, then collects replies until the server
// closes the connection or stays silent for quiet. The last two bytes go
// after a pause: Redis applies its line size limits only to lines whose
// terminator has not arrived yet, so a too-long line is refused only if
// the server looks before the terminator comes (our Reader always refuses
// it, whatever the timing). The pause is long enough for a server that a
// busy machine left unscheduled for a while to look first.
func talk(addr string, input []byte, quiet time.Duration) (replies []rawReply, closed bool, err error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, false, err
	}
	defer nc.Close()
	go func() {
		tail := input[max(0, len(input)-2):]
		input = input[:len(input)-len(tail)]
		for len(input) > 0 {
			n := min(len(input), 4096)
			if _, err := nc.Write(input[:n]); err != nil {
				return
			}
			input = input[n:]
			time.Sleep(time.Millisecond)
		}
		time.Sleep(150 * time.Millisecond)
		nc.Write(tail)
	}()
	br := bufio.NewReader(nc)
	for {
		nc.SetReadDeadline(time.Now().Add(quiet))
		rep, err := readRawReply(br)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return replies, false, nil
			}
			if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset by peer") {
				return replies, true, nil
			}
			return replies, false, fmt.Errorf("reading replies: %w", err)
		}
		replies = append(replies, rep)
	}
}

func (r rawReply) String() string {
	const max = 80
	if len(r.text) > max {
		return fmt.Sprintf("%c%q...(%d bytes)", r.kind, r.text[:max], len(r.text))
	}
	return fmt.Sprintf("%c%q", r.kind, r.text)
}

func readRawReply(br *bufio.Reader) (rawReply, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return rawReply{}, err
	}
	if len(line) < 3 {
		return rawReply{}, fmt.Errorf("short reply line %q", line)
	}
	rep := rawReply{kind: line[0], text: line[1 : len(line)-2]}
	switch rep.kind {
	case '$', '=', '!':
		n, _ := strconv.Atoi(rep.text)
		if n < 0 {
			rep.text = ""
			return rep, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return rawReply{}, err
		}
		rep.text = string(b[:n])
	case '*', '~', '>', '%':
		n, _ := strconv.Atoi(rep.text)
		if rep.kind == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if _, err := readRawReply(br); err != nil {
				return rawReply{}, err
			}
		}
	}
	return rep, nil
}
