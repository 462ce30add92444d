package netserve

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSettleAdmitsCompletedConnections: a connection whose connect has
// returned is among the clients after Settle, whether it still waits in
// the listener's queue (the accept loop has not run yet) or the accept
// loop is still handling it. Shut then stops the loop and the listening.
func TestSettleAdmitsCompletedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var r Clients[net.Conn]
	// Under a full parallel test run the accept loop's goroutine can wait
	// longer than settleMax for a core; what is checked here is that
	// Settle waits for the right connections.
	r.settleWait = 10 * time.Second
	if err := r.Attach(ln, nil); err != nil {
		t.Fatal(err)
	}
	handle := func(nc net.Conn) {
		time.Sleep(time.Millisecond) // an accept loop slow to register
		r.Admit(nc, 1000, func(int64) {})
	}
	start := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		<-start
		done <- r.AcceptLoop(ln, r.Closed, handle, nil)
	}()
	for i := 1; i <= 200; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i == 1 {
			// The first connection waits in the queue until Settle
			// has begun.
			time.AfterFunc(time.Millisecond, func() { close(start) })
		}
		// connect can return before the server's kernel has queued the
		// connection (the last ACK is still on its way); in the servers
		// a later command from another client comes after it.
		for {
			r.mu.Lock()
			acc := r.acc
			r.mu.Unlock()
			if taken, queued, ok := r.counts(ln, acc); ok && taken+int64(queued) >= int64(i) {
				break
			}
			time.Sleep(10 * time.Microsecond)
		}
		t0 := time.Now()
		r.Settle()
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("Settle after connection %d took %v: it waits for connections already admitted", i, d)
		}
		if n := r.Len(); n != i {
			t.Fatalf("after connection %d and Settle: %d clients", i, n)
		}
	}
	r.Shut(nil, func(nc net.Conn) { nc.Close() })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("AcceptLoop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AcceptLoop still running after Shut")
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("still listening after Shut")
	}
}

// TestServe: an admitted client gets an id and runs on a goroutine the
// WaitGroup counts; a client past max is told Redis's maxclients error
// and closed; one that comes after Shut is closed without a word.
func TestServe(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		shut      bool
		wantReply string
		wantServe bool
		wantFull  bool
	}{
		{name: "admitted", max: 1, wantServe: true},
		{name: "full", max: 0, wantReply: "-ERR max number of clients + cluster connections reached\r\n", wantFull: true},
		{name: "closed", max: 1, shut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Clients[net.Conn]
			if tc.shut {
				r.Shut(nil, func(net.Conn) {})
			}
			server, client := net.Pipe()
			defer client.Close()
			var (
				wg              sync.WaitGroup
				id              int64
				served, wasFull atomic.Bool
			)
			release := make(chan struct{})
			read := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(client)
				read <- string(b)
			}()
			r.Serve(server, server, tc.max, &wg, func(got int64) { id = got }, func() { wasFull.Store(true) }, func() {
				served.Store(true)
				<-release
				server.Close()
			})
			if tc.wantServe {
				if id != firstClientID {
					t.Errorf("id %d, want %d", id, firstClientID)
				}
				waited := make(chan struct{})
				go func() { wg.Wait(); close(waited) }()
				select {
				case <-waited:
					t.Fatal("the WaitGroup does not count the client's goroutine")
				case <-time.After(20 * time.Millisecond):
				}
				close(release)
				<-waited
			}
			if got := <-read; got != tc.wantReply {
				t.Errorf("the client read %q, want %q", got, tc.wantReply)
			}
			if served.Load() != tc.wantServe || wasFull.Load() != tc.wantFull {
				t.Errorf("served %v, full %v; want %v, %v", served.Load(), wasFull.Load(), tc.wantServe, tc.wantFull)
			}
			if n := r.Len(); n != btoi(tc.wantServe) {
				t.Errorf("%d clients registered", n)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
