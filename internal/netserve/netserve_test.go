package netserve

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestWaitGrace: true once the group finishes within the grace, false
// when it is still busy at its end.
func TestWaitGrace(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	release := make(chan struct{})
	go func() {
		<-release
		wg.Done()
	}()
	start := time.Now()
	if WaitGrace(&wg, 50*time.Millisecond) {
		t.Fatal("WaitGrace reported a busy group finished")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("WaitGrace gave up after %v, before its grace", d)
	}
	close(release)
	if !WaitGrace(&wg, 5*time.Second) {
		t.Fatal("WaitGrace reported a finished group busy")
	}
}

// TestAcceptOutOfFDsRefuses: when accepting fails for want of
// descriptors, the loop frees its spares, takes the waiting client and
// answers it maxclients' error instead of leaving it queued with no
// answer; the next client is served as usual.
func TestAcceptOutOfFDsRefuses(t *testing.T) {
	refused, refusedPeer := net.Pipe()
	served, servedPeer := net.Pipe()
	defer refusedPeer.Close()
	defer servedPeer.Close()
	steps := []func() (net.Conn, error){
		func() (net.Conn, error) {
			return nil, &net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
		},
		func() (net.Conn, error) { return refused, nil },
		func() (net.Conn, error) { return served, nil },
	}
	var closed atomic.Bool
	accept := func() (net.Conn, error) {
		if len(steps) == 0 {
			closed.Store(true)
			return nil, net.ErrClosed
		}
		f := steps[0]
		steps = steps[1:]
		return f()
	}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(refusedPeer)
		got <- string(b)
	}()
	var handled []net.Conn
	if err := acceptLoop(accept, closed.Load, func(nc net.Conn) { handled = append(handled, nc) }, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "-"+resp.ErrMaxClients+"\r\n" {
			t.Errorf("the client refused for want of descriptors read %q", s)
		}
	case <-time.After(2 * time.Second):
		t.Error("the client taken for want of descriptors got no answer")
	}
	if len(handled) != 1 || handled[0] != served {
		t.Errorf("handled %v, want only the client after the refusal", handled)
	}
}
