package netserve

import (
	"errors"
	"net"
	"slices"
	"sync"
)

// Clients is the connection side of a server that node and proxy share:
// its listener, whether it is closed, and the clients it serves, under
// one mutex, so that Close cannot miss a client being admitted (Admit
// refuses once Shut has run, and runs its callback under the lock).
type Clients[C any] struct {
	mu     sync.Mutex
	ln     net.Listener
	closed bool
	m      map[int64]C
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

// Admit registers c under id unless the server is closed or already
// serves max clients. On admission, started runs under the lock (a
// WaitGroup.Add, so that Shut and a wait that follows cannot miss it).
func (r *Clients[C]) Admit(id int64, c C, max int, started func()) Admission {
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
	r.m[id] = c
	started()
	return Admitted
}

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
