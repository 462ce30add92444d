package netserve

import (
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
)

// Clients is the connection side of a server that node and proxy share:
// its listener, whether it is closed, and the clients it serves, under
// one mutex, so that Close cannot miss a client being admitted (Admit
// refuses once Shut has run, and runs its callback under the lock).
type Clients[C any] struct {
	mu     sync.Mutex
	ln     net.Listener
	acc    *rawio.Acceptor // AcceptLoop's, where supported
	closed bool
	m      map[int64]C
	lastID int64 // the last client id given (Admit)
	// taken counts the connections taken from the listener's queue where
	// no Acceptor does; settled those the server has admitted or refused
	// (see AcceptLoop and Settle).
	taken, settled atomic.Int64
	// settleWait is Settle's bound (0: settleMax); tests on a loaded
	// machine raise it to check the counting, not the scheduler.
	settleWait time.Duration
}

// AcceptLoop serves ln as netserve.AcceptLoop does, counting for Settle
// the connections on their way from the kernel's queue to the clients;
// where it can, it takes them with a rawio.Acceptor, which counts each one
// as it leaves the queue. Shut stops it; closing ln alone does not, as
// the Acceptor holds a duplicate of its socket.
func (r *Clients[C]) AcceptLoop(ln net.Listener, closed func() bool, handle func(net.Conn), log *slog.Logger) error {
	counted := func(nc net.Conn) {
		defer r.settled.Add(1)
		handle(nc)
	}
	acc, ok := rawio.NewAcceptor(ln)
	if !ok {
		return AcceptLoop(ln, closed, func(nc net.Conn) {
			r.taken.Add(1)
			counted(nc)
		}, log)
	}
	defer acc.Close()
	if !r.IfOpen(func() { r.acc = acc }) {
		return nil
	}
	return acceptLoop(acc.Accept, closed, counted, log)
}

// counts is how many connections have left the listener's queue, and how
// many are still in it; ok is false when that could not be told this time.
func (r *Clients[C]) counts(ln net.Listener, acc *rawio.Acceptor) (taken int64, queued int, ok bool) {
	if acc != nil {
		return acc.Counts()
	}
	return r.taken.Load(), rawio.AcceptQueue(ln), true
}

// settleMax bounds Settle's wait, for a listener that never drains (a
// flood of connections) or an accept loop held up (the kernel growing the
// process's file table can stall it for milliseconds). It is spent only
// while completed connections wait to be admitted; on two cores shared
// with a full test run the accept loop was once not scheduled within
// 25 ms, hence 100.
const settleMax = 100 * time.Millisecond

// Settle lets connections the kernel has already completed join the
// clients before a command looks at all of them (CLIENT LIST, CLIENT
// KILL, INFO's connected_clients). Redis accepts in the event loop that
// runs commands, so a client whose connect returned before another client
// sent CLIENT KILL ADDR is always found; here the accept loop is a
// goroutine of its own that may not have run yet. Settle waits, at most
// settleMax, until the connections in the listener's queue when it
// started have been taken and the server is done admitting them.
func (r *Clients[C]) Settle() {
	r.mu.Lock()
	ln, acc := r.ln, r.acc
	r.mu.Unlock()
	if ln == nil {
		return
	}
	wait := r.settleWait
	if wait == 0 {
		wait = settleMax
	}
	deadline := time.Now().Add(wait)
	// Sleep rather than yield while waiting: the accept loop waits on
	// the poller, which the scheduler asks only when it runs out of
	// ready goroutines.
	pause := func() bool {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Microsecond)
		// The accept loop may have started its Acceptor meanwhile;
		// its count starts where the listener's left off (at 0: the
		// loop uses one or the other from its start).
		r.mu.Lock()
		acc = r.acc
		r.mu.Unlock()
		return true
	}
	taken, queued, ok := r.counts(ln, acc)
	for !ok {
		if !pause() {
			return
		}
		taken, queued, ok = r.counts(ln, acc)
	}
	want := taken + int64(queued)
	for taken < want || r.settled.Load() < taken {
		if !pause() {
			return
		}
		if t, _, ok := r.counts(ln, acc); ok {
			taken = t
		}
	}
}

// ErrClosed is returned by Attach after Shut.
var ErrClosed = errors.New("server closed")

// Attach records the listener being served and runs onAttach (may be
// nil) under the lock; after Shut it closes ln and returns ErrClosed.
// onAttach is where a server adds its start-up to the WaitGroup its Close
// waits on: added under the lock, it is either counted before Shut or not
// at all, never concurrently with Close's Wait.
func (r *Clients[C]) Attach(ln net.Listener, onAttach func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		ln.Close()
		return ErrClosed
	}
	r.ln = ln
	if onAttach != nil {
		onAttach()
	}
	return nil
}

// Addr is the listening address, once attached.
func (r *Clients[C]) Addr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return nil
	}
	return r.ln.Addr()
}

// Closed reports whether Shut has run.
func (r *Clients[C]) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// IfOpen runs fn under the lock unless Shut has run, and reports whether
// it ran: something started this way is seen by Shut's onShut.
func (r *Clients[C]) IfOpen(fn func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	fn()
	return true
}

// Shut marks the server closed, runs onShut (may be nil), closes the
// listener and calls drop for every client, all under the lock. It
// reports false, doing nothing, if it had run before.
func (r *Clients[C]) Shut(onShut func(), drop func(C)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.closed = true
	if onShut != nil {
		onShut()
	}
	if r.ln != nil {
		r.ln.Close()
	}
	if r.acc != nil {
		r.acc.Close()
	}
	for _, c := range r.m {
		drop(c)
	}
	return true
}

// Admission is Admit's verdict.
type Admission int

// Admit's verdicts.
const (
	Admitted Admission = iota
	RefusedClosed
	RefusedFull
)

// Admit registers c unless the server is closed or already serves max
// clients. On admission c gets the next client id: admitted runs under
// the lock with it, to store it in c and to add to the WaitGroup the
// server's Close waits on (so that Shut and a wait that follows cannot
// miss it). As in Redis, a refused connection takes no id.
func (r *Clients[C]) Admit(c C, max int, admitted func(id int64)) Admission {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return RefusedClosed
	case len(r.m) >= max:
		return RefusedFull
	}
	if r.m == nil {
		r.m = map[int64]C{}
	}
	if r.lastID == 0 {
		r.lastID = firstClientID - 1
	}
	r.lastID++
	r.m[r.lastID] = c
	admitted(r.lastID)
	return Admitted
}

// Serve admits c, the client of the new connection nc, and runs serve on
// a goroutine that wg counts. admitted runs as Admit's callback does
// (under the lock, with the client's id) before wg is added to. A
// connection refused at max runs full, then gets Redis's maxclients
// error and is closed; one accepted just as the server closed is closed
// at once (Shut has disconnected the clients it knew).
func (r *Clients[C]) Serve(nc net.Conn, c C, max int, wg *sync.WaitGroup, admitted func(id int64), full, serve func()) {
	counted := func(id int64) {
		admitted(id)
		wg.Add(1)
	}
	switch r.Admit(c, max, counted) {
	case RefusedClosed:
		nc.Close()
	case RefusedFull:
		full()
		nc.Write([]byte("-" + resp.ErrMaxClients + "\r\n"))
		nc.Close()
	default:
		go func() {
			defer wg.Done()
			serve()
		}()
	}
}

// firstClientID is the id of a server's first client. Redis 7.0 creates
// the clients of its two Lua engines (EVAL's and FUNCTION's) at start, as
// ids 1 and 2, so its first connection is client 3.
const firstClientID = 3

// Remove forgets client id.
func (r *Clients[C]) Remove(id int64) {
	r.mu.Lock()
	delete(r.m, id)
	r.mu.Unlock()
}

// Get finds client id.
func (r *Clients[C]) Get(id int64) (C, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.m[id]
	return c, ok
}

// Len is the number of clients.
func (r *Clients[C]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// Live returns the clients dead does not reject, in id (connection)
// order, as Redis's client list keeps them.
func (r *Clients[C]) Live(dead func(C) bool) []C {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.m))
	for id, c := range r.m {
		if !dead(c) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]C, len(ids))
	for i, id := range ids {
		out[i] = r.m[id]
	}
	return out
}
