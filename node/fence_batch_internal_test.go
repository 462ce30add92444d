package node

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// TestFenceRefusalCoversItsBatch: once a command of a pipeline gets
// TRYAGAIN at a migration's fence, the pipeline's later keyed commands get
// it too and do not run, whatever their slot, also when they come in a
// later read. go-redis's ClusterClient retries a whole pipeline when its
// first command answers TRYAGAIN; the others, run here or MOVED to the new
// owner and run there, then ran twice (seen as INCR counters ahead of
// their acknowledged count, first with every pipeline, then, with only
// the first read's commands refused, with pipelines over 16 KB).
// fencedNode serves a node whose slot of key "fenced" has a migration's
// fence up, which commands wait on for wait, and returns the node, the
// fence and a connection to it; hook, if not nil, is the node's
// fencedBatchEnd.
func fencedNode(t *testing.T, wait time.Duration, hook func()) (s *Server, f *fence, nc net.Conn) {
	t.Helper()
	s, err := New(Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.gate.wait = wait
	s.fencedBatchEnd = hook
	slot := slots.Slot([]byte("fenced"))
	f = &fence{done: make(chan struct{})}
	s.ks.RLock()
	sh := s.ks.Shard(slot)
	sh.Lock()
	s.gate.raiseFence(slot, f)
	sh.Unlock()
	s.ks.RUnlock()
	return s, f, serveForTest(t, s)
}

// serveForTest serves s on a loopback port until the test ends and
// returns a connection to it, with a 10 s deadline.
func serveForTest(t *testing.T, s *Server) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil && !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func TestFenceRefusalCoversItsBatch(t *testing.T) {
	s, f, nc := fencedNode(t, 20*time.Millisecond, nil)
	fenced := "fenced"
	slot := slots.Slot([]byte(fenced))
	s.ks.RLock()
	sh := s.ks.Shard(slot)
	s.ks.RUnlock()
	br := bufio.NewReader(nc)
	// pipeline sends the commands in one write and returns their replies'
	// first lines.
	pipeline := func(cmds ...[]string) []string {
		t.Helper()
		var req []byte
		for _, c := range cmds {
			req = append(req, encodeCmd(c...)...)
		}
		if _, err := nc.Write(req); err != nil {
			t.Fatal(err)
		}
		return readReplyLines(t, br, len(cmds))
	}
	tryAgain := "-" + resp.ErrTryAgain
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\n got  %q\n want %q", what, got, want)
		}
	}
	// pause lets a refused pipeline end: the next bytes come later than a
	// continuation would (fenceBatchGap), as from a client that read the
	// replies and backed off before sending again.
	pause := func() { time.Sleep(4 * fenceBatchGap) }

	check("fenced command first", pipeline([]string{"INCR", fenced}, []string{"INCR", "a"}, []string{"INCR", "b"}, []string{"PING"}),
		tryAgain, tryAgain, tryAgain, "+PONG")
	pause()
	check("the refused batch ran nothing", pipeline([]string{"GET", "a"}, []string{"GET", "b"}), "$-1", "$-1")
	check("fenced command later", pipeline([]string{"INCR", "a"}, []string{"INCR", fenced}, []string{"INCR", "b"}),
		":1", tryAgain, tryAgain)
	pause()
	check("next pipeline", pipeline([]string{"INCR", "b"}), ":1")

	// A pipeline that arrives in two reads: the second part, sent while
	// the first waits at the fence, is read at once after it and refused
	// too; so is one whose first read ends inside a command.
	send := func(b []byte) {
		t.Helper()
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	cmd := encodeCmd
	readReplies := func(n int) []string { t.Helper(); return readReplyLines(t, br, n) }
	pause()
	send(append(cmd("INCR", fenced), cmd("INCR", "a")...))
	time.Sleep(s.gate.wait / 2) // read, and waiting at the fence
	send(cmd("INCR", "b"))
	check("second read of a refused pipeline", readReplies(3), tryAgain, tryAgain, tryAgain)
	pause()
	half := cmd("INCR", "b")
	send(append(cmd("INCR", fenced), half[:5]...))
	time.Sleep(s.gate.wait + 4*fenceBatchGap) // the first read is served
	send(append(half[5:], cmd("INCR", "a")...))
	check("a command cut across reads", readReplies(3), tryAgain, tryAgain, tryAgain)
	pause()
	check("after the cut pipeline", pipeline([]string{"GET", "a"}, []string{"GET", "b"}), "$1", "$1")

	s.ks.RLock()
	sh.Lock()
	s.gate.lowerFence(slot, f)
	sh.Unlock()
	s.ks.RUnlock()
	close(f.done)
	pause()
	check("fence down", pipeline([]string{"INCR", fenced}, []string{"INCR", "a"}), ":1", ":2")
}

// TestFenceRefusalSurvivesALateRead: a node descheduled between two reads
// of one refused pipeline (here made to sleep as the first read's batch
// ends) reads its rest later than fenceBatchGap; the rest, already in the
// socket when the batch ended, is still refused. When only the gap
// counted, go-redis ran part of a pipeline of thousands of commands twice
// on a machine at a load average of 26.
func TestFenceRefusalSurvivesALateRead(t *testing.T) {
	_, _, nc := fencedNode(t, 300*time.Millisecond, func() { time.Sleep(4 * fenceBatchGap) })
	cmd := encodeCmd
	send := func(b []byte) {
		t.Helper()
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(nc)
	readReplies := func(n int) string { t.Helper(); return strings.Join(readReplyLines(t, br, n), "|") }
	tryAgain := "-" + resp.ErrTryAgain
	send(append(cmd("INCR", "fenced"), cmd("INCR", "a")...))
	time.Sleep(20 * time.Millisecond) // read, and waiting at the fence
	send(cmd("INCR", "b"))
	if got, want := readReplies(3), tryAgain+"|"+tryAgain+"|"+tryAgain; got != want {
		t.Errorf("pipeline read late:\n got  %q\n want %q", got, want)
	}
	time.Sleep(4 * fenceBatchGap)
	send(append(cmd("GET", "a"), cmd("GET", "b")...))
	if got := readReplies(2); got != "$-1|$-1" {
		t.Errorf("after the refused pipeline, GET a, GET b = %q: part of it ran", got)
	}
}

// encodeCmd is a command in RESP.
func encodeCmd(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return resp.AppendCommand(nil, b)
}

// readReplyLines reads n replies of one line each (a bulk string's two),
// and returns their first lines.
func readReplyLines(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		out[i] = strings.TrimSuffix(line, "\r\n")
		if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}
