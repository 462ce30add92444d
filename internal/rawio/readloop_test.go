//go:build linux

package rawio

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// loopBuf is a ReadLoop buffer that keeps what was read.
type loopBuf struct {
	buf  []byte
	got  []byte
	read int // reads handed to handle
}

func (b *loopBuf) space() []byte { return b.buf }

func (b *loopBuf) take(n int) {
	b.got = append(b.got, b.buf[:n]...)
	b.read++
}

// runLoop runs ReadLoop on its own goroutine; its error arrives on the
// channel.
func runLoop(c *Conn, b *loopBuf, handle func(n int) bool) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.ReadLoop(b.space, handle) }()
	return done
}

func waitLoop(t *testing.T, done <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("ReadLoop still running after %v", within)
		return nil
	}
}

// TestReadLoopStopsWhenHandleSaysSo: data sent in several pieces reaches
// handle in order, and ReadLoop returns nil when handle returns false.
func TestReadLoopStopsWhenHandleSaysSo(t *testing.T) {
	w, peer := pair(t)
	c := w.(*Conn)
	b := &loopBuf{buf: make([]byte, 4)} // small: reads that fill it are followed by another
	wantStop := "abcdefghij"
	done := runLoop(c, b, func(n int) bool {
		b.take(n)
		return len(b.got) < len(wantStop)
	})
	for _, piece := range []string{"abc", "defgh", "ij"} {
		if _, err := peer.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := waitLoop(t, done, 5*time.Second); err != nil {
		t.Fatalf("ReadLoop = %v, want nil", err)
	}
	if string(b.got) != wantStop {
		t.Fatalf("read %q, want %q", b.got, wantStop)
	}
	// The deadline ReadLoop used is gone: a plain Read waits again.
	peer.Write([]byte("k"))
	one := make([]byte, 1)
	if n, err := c.Read(one); n != 1 || err != nil || one[0] != 'k' {
		t.Fatalf("Read after the loop = %d %q %v", n, one[:n], err)
	}
}

// TestReadLoopKeepsReadinessDuringHandle: data that arrives while handle
// runs is read without waiting for a probe (the probe is set to an hour,
// so a lost readiness would hang the test).
func TestReadLoopKeepsReadinessDuringHandle(t *testing.T) {
	w, peer := pair(t)
	c := w.(*Conn)
	c.probe = time.Hour
	b := &loopBuf{buf: make([]byte, 64)}
	sent := make(chan struct{})
	done := runLoop(c, b, func(n int) bool {
		b.take(n)
		if b.read == 1 {
			// The next request comes while this one is being served.
			peer.Write([]byte("second"))
			time.Sleep(20 * time.Millisecond)
			close(sent)
		}
		return string(b.got) != "firstsecond"
	})
	peer.Write([]byte("first"))
	if err := waitLoop(t, done, 5*time.Second); err != nil {
		t.Fatalf("ReadLoop = %v", err)
	}
	<-sent
}

// TestReadLoopSeesFINThatCameWithData: the peer sends and shuts its
// writing side before the loop reads, so the FIN raises no readiness of
// its own after the data is read; the probing read must find it.
func TestReadLoopSeesFINThatCameWithData(t *testing.T) {
	w, peer := pair(t)
	c := w.(*Conn)
	peer.Write([]byte("last words"))
	peer.(*net.TCPConn).CloseWrite()
	time.Sleep(20 * time.Millisecond) // both are in the socket
	b := &loopBuf{buf: make([]byte, 64)}
	done := runLoop(c, b, func(n int) bool { b.take(n); return true })
	start := time.Now()
	if err := waitLoop(t, done, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("ReadLoop = %v, want io.EOF", err)
	}
	if string(b.got) != "last words" {
		t.Fatalf("read %q", b.got)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("EOF seen after %v; a new connection probes after %v", d, firstProbe)
	}
}

// TestReadLoopCloseDoesNotWaitForHandle: Close from another goroutine
// while handle is busy returns at once; the loop ends at its next read
// and closes the socket, which the peer sees.
func TestReadLoopCloseDoesNotWaitForHandle(t *testing.T) {
	w, peer := pair(t)
	c := w.(*Conn)
	b := &loopBuf{buf: make([]byte, 64)}
	inHandle, release := make(chan struct{}), make(chan struct{})
	done := runLoop(c, b, func(n int) bool {
		close(inHandle)
		<-release
		return true
	})
	peer.Write([]byte("x"))
	<-inHandle
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close = %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for the loop's handler")
	}
	close(release)
	if err := waitLoop(t, done, 5*time.Second); err == nil {
		t.Fatal("ReadLoop = nil after Close, want an error")
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("peer read after Close = %v, want EOF", err)
	}
	if err := c.Close(); err == nil {
		t.Fatal("second Close = nil, want the closed-connection error")
	}
}

// TestReadLoopCloseFromHandle: handle may close its own connection (a
// client that QUITs) without deadlocking.
func TestReadLoopCloseFromHandle(t *testing.T) {
	w, peer := pair(t)
	c := w.(*Conn)
	b := &loopBuf{buf: make([]byte, 64)}
	done := runLoop(c, b, func(n int) bool {
		c.Write([]byte("bye"))
		c.Close()
		return true
	})
	peer.Write([]byte("quit"))
	if err := waitLoop(t, done, 5*time.Second); err == nil {
		t.Fatal("ReadLoop = nil, want an error after the socket was shut")
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(peer)
	if string(got) != "bye" || err != nil {
		t.Fatalf("peer got %q, %v; want the reply, then EOF", got, err)
	}
}

// TestReadLoopGuessesByPeer: after a drained read the loop reads once more
// only while that finds data. A peer that has sent its next request by the
// time a batch is answered keeps it reading; one that waits for its reply
// makes it park on the poller for up to maxSkipGuess batches between
// guesses.
func TestReadLoopGuessesByPeer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		streaming bool // the next chunk is sent while handle runs
	}{{"streaming peer", true}, {"request-reply peer", false}} {
		t.Run(tc.name, func(t *testing.T) {
			w, peer := pair(t)
			c := w.(*Conn)
			c.probe = time.Hour
			if tc.streaming {
				// As after a miss: the first guess that finds data must
				// clear it.
				c.guessBackoff = maxSkipGuess
			}
			const batches = 60
			next := make(chan struct{}, 1)
			go func() {
				for range batches {
					if _, err := peer.Write([]byte("req")); err != nil {
						return
					}
					<-next
					if !tc.streaming {
						time.Sleep(3 * time.Millisecond) // after the guess, if any
					}
				}
			}()
			b := &loopBuf{buf: make([]byte, 64)}
			parkedAfterHit := 0
			done := runLoop(c, b, func(n int) bool {
				b.take(n)
				if b.read > 1 && tc.streaming && c.skipGuess > 0 {
					parkedAfterHit++
				}
				if b.read == batches {
					return false
				}
				next <- struct{}{}
				if tc.streaming {
					time.Sleep(3 * time.Millisecond) // the next chunk arrives meanwhile
				}
				return true
			})
			if err := waitLoop(t, done, 10*time.Second); err != nil {
				t.Fatalf("ReadLoop = %v", err)
			}
			if tc.streaming && (parkedAfterHit > 0 || c.guessBackoff != 0) {
				t.Fatalf("streaming peer: %d batches parked without a guess, backoff %d; want 0 and 0",
					parkedAfterHit, c.guessBackoff)
			}
			if !tc.streaming && c.guessBackoff != maxSkipGuess {
				t.Fatalf("request-reply peer: backoff %d after %d batches, want %d", c.guessBackoff, batches, maxSkipGuess)
			}
		})
	}
}
