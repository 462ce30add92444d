package outq

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/rawio"
)

// pair returns a raw server side and a plain client side of a loopback
// TCP connection.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	server = rawio.Wrap(server)
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestWriteNeverWaitsForTheReader: a client that reads nothing does not
// hold up Write; what the socket did not take is written, in order, once
// the client reads, and Wait returns then.
func TestWriteNeverWaitsForTheReader(t *testing.T) {
	server, client := pair(t)
	q := New(server)
	var want bytes.Buffer
	start := time.Now()
	for i := range 64 {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, 1<<20)
		want.Write(b)
		if err := q.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("64 MB of writes to a client that reads nothing took %v", d)
	}
	if q.Pending() == 0 {
		t.Fatal("64 MB went into the socket's buffers: the test proves nothing")
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(want.Len())))
		got <- b
	}()
	if err := q.Wait(); err != nil {
		t.Fatal(err)
	}
	if q.Pending() != 0 {
		t.Fatalf("Pending after Wait: %d", q.Pending())
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("the client read %d bytes, not the %d written in order", len(b), want.Len())
	}
	// With nothing pending, a write goes straight out.
	if err := q.Write([]byte("+OK\r\n")); err != nil || q.Pending() != 0 {
		t.Fatalf("a small write after the drain: err %v, pending %d", err, q.Pending())
	}
}

// TestWaitEndsWhenTheConnectionCloses: a client that never reads and a
// connection closed meanwhile end Wait with the error, and later writes
// fail.
func TestWaitEndsWhenTheConnectionCloses(t *testing.T) {
	server, _ := pair(t)
	q := New(server)
	for q.Pending() == 0 {
		if err := q.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- q.Wait() }()
	time.Sleep(20 * time.Millisecond)
	server.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Wait after the connection closed: nil error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not end when the connection closed")
	}
	if err := q.Write([]byte("x")); err == nil {
		t.Fatal("Write after the failure: nil error")
	}
}
