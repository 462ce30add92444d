// Package netserve holds the listener plumbing a node and the proxy
// share: the accept loop and closing on a context.
package netserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
)

// AcceptLoop passes every connection ln accepts to handle until the
// listener is closed. It returns nil when closed() then reports true (the
// server shut down). Any other Accept error (out of file descriptors,
// out of memory, a connection aborted before it was accepted) is retried
// after a pause that doubles from 5 ms to 1 s, with a warning at most
// once a second, instead of ending the server: Redis too keeps serving
// its clients when accept fails. A listener closed by someone else
// (net.ErrClosed without closed()) ends the loop with that error.
//
// Out of file descriptors, a client would wait in the kernel's queue
// with no answer until one is freed. The loop keeps two spare
// descriptors for that case: it lets them go, takes the waiting client,
// answers it maxclients' error and closes it, then takes them back. A
// proxy can get there below its maxclients, which counts one descriptor
// per client, while blocked clients hold a node connection each besides.
func AcceptLoop(ln net.Listener, closed func() bool, handle func(net.Conn), log *slog.Logger) error {
	return acceptLoop(ln.Accept, closed, handle, log)
}

// spareFDs is the number of descriptors the accept loop holds back: one
// for the accepted socket and one for the duplicate a rawio.Acceptor
// makes of it.
const spareFDs = 2

// acceptLoop is AcceptLoop with the accept call given.
func acceptLoop(accept func() (net.Conn, error), closed func() bool, handle func(net.Conn), log *slog.Logger) error {
	var (
		delay    time.Duration
		lastWarn time.Time
	)
	spares := reserveSpares()
	defer func() { releaseSpares(spares) }()
	for {
		nc, err := accept()
		if err != nil {
			if closed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			if outOfFDs(err) && len(spares) < spareFDs {
				// Short since an earlier refusal, when the process's
				// other descriptors (a proxy's node connections) took
				// what it freed: some may be free again.
				releaseSpares(spares)
				spares = reserveSpares()
			}
			if outOfFDs(err) && len(spares) > 0 {
				releaseSpares(spares)
				if nc, err := accept(); err == nil {
					refuse(nc)
				}
				spares = reserveSpares()
				if now := time.Now(); log != nil && now.Sub(lastWarn) >= time.Second {
					lastWarn = now
					log.Warn("out of file descriptors: a new client was refused", "err", err, "hint", hint(err))
				}
				continue
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if now := time.Now(); log != nil && now.Sub(lastWarn) >= time.Second {
				lastWarn = now
				log.Warn("accepting a connection failed; retrying", "err", err, "retry_in", delay, "hint", hint(err))
			}
			time.Sleep(delay)
			continue
		}
		delay = 0
		if len(spares) < spareFDs {
			// Short since a refusal (descriptors were scarce): try again.
			releaseSpares(spares)
			spares = reserveSpares()
		}
		handle(nc)
	}
}

// outOfFDs reports whether err is the process's or the system's
// descriptor limit.
func outOfFDs(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// reserveSpares opens the spare descriptors, as many as it can.
func reserveSpares() []*os.File {
	var out []*os.File
	for range spareFDs {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		out = append(out, f)
	}
	return out
}

func releaseSpares(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// refuse answers a client the server has no descriptor for, as Redis
// answers one past maxclients, and closes it.
func refuse(nc net.Conn) {
	nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	nc.Write([]byte("-" + resp.ErrMaxClients + "\r\n"))
	nc.Close()
}

// hint says what to do about an Accept error an operator can act on.
func hint(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "out of file descriptors: raise the limit (ulimit -n, LimitNOFILE) or lower --maxclients"
	case errors.Is(err, syscall.ENOBUFS), errors.Is(err, syscall.ENOMEM):
		return "out of memory"
	}
	return ""
}

// CloseOnDone calls closeFn when ctx ends, unless stopped is closed
// first (the server was closed directly).
func CloseOnDone(ctx context.Context, stopped <-chan struct{}, closeFn func()) {
	go func() {
		select {
		case <-ctx.Done():
			closeFn()
		case <-stopped:
		}
	}()
}

// WaitGrace waits for wg for up to grace and reports whether it finished:
// a server shutting down gives its clients that long to have their
// replies, then disconnects whoever is still busy.
func WaitGrace(wg *sync.WaitGroup, grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
