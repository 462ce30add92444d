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

// TestFenceRefusalCoversItsBatch: once a command of a pipelined batch gets
// TRYAGAIN at a migration's fence, the batch's later keyed commands get
// it too and do not run, whatever their slot. go-redis's ClusterClient
// retries a whole pipeline when its first command answers TRYAGAIN; the
// others, run here or MOVED to the new owner and run there, then ran
// twice (seen as INCR counters ahead of their acknowledged count).
func TestFenceRefusalCoversItsBatch(t *testing.T) {
	s, err := New(Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.gate.wait = 20 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), ln) }()
	defer func() {
		s.Close()
		if err := <-served; err != nil && !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()

	fenced := "fenced"
	slot := slots.Slot([]byte(fenced))
	f := &fence{done: make(chan struct{})}
	s.ks.RLock()
	sh := s.ks.Shard(slot)
	sh.Lock()
	s.gate.raiseFence(slot, f)
	sh.Unlock()
	s.ks.RUnlock()

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	// pipeline sends the commands in one write and returns their replies'
	// first lines.
	pipeline := func(cmds ...[]string) []string {
		t.Helper()
		var req []byte
		for _, c := range cmds {
			args := make([][]byte, len(c))
			for i, a := range c {
				args[i] = []byte(a)
			}
			req = resp.AppendCommand(req, args)
		}
		if _, err := nc.Write(req); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(cmds))
		for i := range cmds {
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
	tryAgain := "-" + resp.ErrTryAgain
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\n got  %q\n want %q", what, got, want)
		}
	}

	check("fenced command first", pipeline([]string{"INCR", fenced}, []string{"INCR", "a"}, []string{"INCR", "b"}, []string{"PING"}),
		tryAgain, tryAgain, tryAgain, "+PONG")
	check("the refused batch ran nothing", pipeline([]string{"GET", "a"}, []string{"GET", "b"}), "$-1", "$-1")
	check("fenced command later", pipeline([]string{"INCR", "a"}, []string{"INCR", fenced}, []string{"INCR", "b"}),
		":1", tryAgain, tryAgain)
	check("next batch", pipeline([]string{"INCR", "b"}), ":1")

	s.ks.RLock()
	sh.Lock()
	s.gate.lowerFence(slot, f)
	sh.Unlock()
	s.ks.RUnlock()
	close(f.done)
	check("fence down", pipeline([]string{"INCR", fenced}, []string{"INCR", "a"}), ":1", ":2")
}
