// Package outq writes a server's replies to a client without ever making
// the goroutine that serves the client wait on the client's socket.
//
// Why: a client may write a whole pipeline before it reads a reply
// (redis-py's execute, go-redis's Pipeline do). If the server blocks in
// write(2) once the client's receive buffer is full, it stops reading;
// the client, still writing, blocks too, and both wait for ever. Redis
// keeps reading and holds the replies in the client's output buffer
// instead; so does this package. A Queue writes directly while the
// socket takes the bytes (one system call, no copy, no goroutine: the
// common case), and when it does not, keeps the rest and starts a
// goroutine that writes it out as the client reads, while the server
// goes on reading and running commands. Later replies queue behind it,
// in order.
package outq

import (
	"net"
	"sync"

	"github.com/shardgate/shardgate/internal/rawio"
)

// Queue is one connection's output. Write, Pending and Wait may be called
// from any goroutine; writes keep their order.
type Queue struct {
	nc net.Conn

	mu      sync.Mutex
	pending []byte // not yet written, in order
	spare   []byte // the writer's last buffer, for reuse
	writing bool   // a writer goroutine runs
	err     error  // the connection failed: nothing more is written
	drained *sync.Cond
}

// New returns the output queue of nc.
func New(nc net.Conn) *Queue {
	q := &Queue{nc: nc}
	q.drained = sync.NewCond(&q.mu)
	return q
}

// Write sends b, which the Queue does not keep: what the socket does not
// take at once is copied and written in the background. The error is the
// connection's, from this write or an earlier background one.
func (q *Queue) Write(b []byte) error {
	if len(b) == 0 {
		return q.Err()
	}
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return err
	}
	if q.writing {
		q.pending = append(q.pending, b...)
		q.mu.Unlock()
		return nil
	}
	q.mu.Unlock()
	// Only this goroutine writes while no writer runs (Write's callers
	// serialize their calls, as a connection's one serving goroutine
	// does).
	n, err := rawio.TryWrite(q.nc, b)
	if err != nil {
		q.fail(err)
		return err
	}
	if n == len(b) {
		return nil
	}
	q.mu.Lock()
	q.pending = append(q.pending, b[n:]...)
	q.writing = true
	q.mu.Unlock()
	go q.writeOut()
	return nil
}

// writeOut writes the pending bytes until none are left or the
// connection fails.
func (q *Queue) writeOut() {
	for {
		q.mu.Lock()
		if len(q.pending) == 0 || q.err != nil {
			q.writing = false
			q.pending = nil
			q.drained.Broadcast()
			q.mu.Unlock()
			return
		}
		out := q.pending
		q.pending = q.spare[:0]
		q.spare = nil
		q.mu.Unlock()
		if _, err := q.nc.Write(out); err != nil {
			q.fail(err)
			continue
		}
		if cap(out) <= 1<<20 {
			q.mu.Lock()
			q.spare = out[:0]
			q.mu.Unlock()
		}
	}
}

func (q *Queue) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.pending = nil
	q.drained.Broadcast()
	q.mu.Unlock()
}

// Pending is how many bytes wait to be written (the client's output
// buffer, as Redis counts it against its limits).
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Err is the connection's write error, if one happened.
func (q *Queue) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Wait returns once everything written so far is out, or the connection
// has failed (closing it from another goroutine ends the wait), with the
// connection's error.
func (q *Queue) Wait() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.writing && q.err == nil {
		q.drained.Wait()
	}
	return q.err
}
