// Package e2e builds the shardgate binary and tests it as a user runs it:
// as real processes, over real sockets, with real signals.
package e2e

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const e2eTimeout = 30 * time.Second

// buildShardgate compiles cmd/shardgate into a temporary directory.
func buildShardgate(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not found")
	}
	bin := filepath.Join(t.TempDir(), "shardgate")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/shardgate")
	cmd.Dir = ".." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// lineLog collects a process's output lines and lets a test wait for one.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newLineLog(r io.Reader) *lineLog {
	l := &lineLog{added: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// wait returns the first submatch of re in the output, waiting for it.
func (l *lineLog) wait(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(e2eTimeout)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if m := re.FindStringSubmatch(line); m != nil {
				l.mu.Unlock()
				return m[len(m)-1]
			}
		}
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-deadline:
			t.Fatalf("no line matching %v in output:\n%s", re, l.String())
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

var listeningRE = regexp.MustCompile(`msg="node listening" addr=(\S+)`)

// startNode runs `shardgate node` on a port the kernel picks and returns
// the process, its address and its log.
func startNode(t *testing.T, bin string, extra ...string) (*exec.Cmd, string, *lineLog) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"node", "--addr", "127.0.0.1:0"}, extra...)...)
	log := startLogged(t, cmd)
	return cmd, log.wait(t, listeningRE), log
}

// startLogged starts cmd with its standard error read into a lineLog,
// and kills it at the end of the test if it is still running.
func startLogged(t *testing.T, cmd *exec.Cmd) *lineLog {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	startOrFail(t, cmd)
	return newLineLog(stderr)
}

// startOrFail starts cmd, failing the test if it cannot, and kills it at
// the end of the test unless it has been waited for.
func startOrFail(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
}

// signalAndWait sends cmd sig and fails the test unless it exits
// cleanly within d; log is shown on failure.
func signalAndWait(t *testing.T, cmd *exec.Cmd, sig os.Signal, d time.Duration, log *lineLog) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after %v: %v\n%s", sig, err, log)
		}
	case <-time.After(d):
		t.Fatalf("still running %v after %v\n%s", d, sig, log)
	}
}

func send(t *testing.T, c net.Conn, br *bufio.Reader, cmd, want string) {
	t.Helper()
	if _, err := io.WriteString(c, cmd); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != want {
		t.Fatalf("%q: got %q (%v), want %q", cmd, line, err, want)
	}
}

// TestNodeGracefulShutdown: `shardgate node` serves, and on SIGTERM (and
// SIGINT) it disconnects its clients and exits 0 promptly.
func TestNodeGracefulShutdown(t *testing.T) {
	bin := buildShardgate(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, addr, log := startNode(t, bin)
			var conns []net.Conn
			for i := range 5 {
				c, err := net.DialTimeout("tcp", addr, e2eTimeout)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(e2eTimeout))
				br := bufio.NewReader(c)
				send(t, c, br, "PING\r\n", "+PONG\r\n")
				send(t, c, br, "SET k v\r\n", "+OK\r\n")
				if i == 0 {
					io.WriteString(c, "*2\r\n$4\r\nECHO\r\n$10\r\nabc") // mid-command
				}
				conns = append(conns, c)
			}
			signalAndWait(t, cmd, sig, 5*time.Second, log)
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			for i, c := range conns {
				if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset by peer") {
					t.Errorf("client %d still connected: %v", i, err)
				}
			}
		})
	}
}

// TestNodeBadFlags: flag mistakes exit 2 with a message, --help exits 0.
func TestNodeBadFlags(t *testing.T) {
	bin := buildShardgate(t)
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"node", "--help"}, 0, "Usage: shardgate node"},
		{[]string{"node", "--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"node", "extra"}, 2, "unexpected argument"},
		{[]string{"nosuchcommand"}, 2, "unknown command"},
		{[]string{}, 2, "Usage:"},
	} {
		cmd := exec.Command(bin, c.args...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.Contains(string(out), c.out) {
			t.Errorf("shardgate %q: exit %d, output %q; want exit %d with %q", c.args, code, out, c.code, c.out)
		}
	}
}
