// Package monitor serves MONITOR: the commands a server runs, streamed to
// the connections that asked for them, one line each in Redis 7.0's
// format (+<unix seconds>.<microseconds> [0 <client address>] "arg" ...).
//
// Each monitoring connection gets the lines of other clients' commands
// from a writer goroutine of its own, so a command never waits on a
// monitor's socket; a monitor that falls more than its limit behind is
// closed (Redis has no such limit). A monitor's own commands are appended to its own reply stream by
// the server (Own), after their replies, as in Redis.
package monitor

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/redact"
	"github.com/shardgate/shardgate/slots"
)

// DefaultLimit is how far a monitor may fall behind before it is closed.
// Redis sets none for monitors (they are normal clients); one that never
// reads would hold the server's memory without bound, and the buffer of
// lines costs a few times its size while it grows.
const DefaultLimit = 64 << 20

// Hub is a server's set of monitors.
type Hub struct {
	n  atomic.Int32 // len(subs), read on every command
	mu sync.Mutex
	// subs are the monitors, by connection.
	subs map[net.Conn]*sub
	// Limit is how many bytes a monitor may have waiting; over it the
	// monitor's connection is closed.
	Limit int
	// OnOverflow, if set, is told of a monitor closed for its limit.
	OnOverflow func(addr string, pending int)
}

type sub struct {
	nc      net.Conn
	mu      sync.Mutex
	buf     []byte
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

// Active reports whether anyone monitors: one atomic load, so that a
// server with no monitor pays nothing more per command.
func (h *Hub) Active() bool { return h.n.Load() > 0 }

// Add makes nc a monitor; false if it already is one (a second MONITOR
// is ignored, as in Redis).
func (h *Hub) Add(nc net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[net.Conn]*sub{}
	}
	if _, ok := h.subs[nc]; ok {
		return false
	}
	s := &sub{nc: nc, wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	h.subs[nc] = s
	h.n.Store(int32(len(h.subs)))
	go h.write(s)
	return true
}

// Remove ends nc's monitoring (RESET, or the connection closing); lines
// not yet written are dropped.
func (h *Hub) Remove(nc net.Conn) {
	h.mu.Lock()
	s := h.subs[nc]
	delete(h.subs, nc)
	h.n.Store(int32(len(h.subs)))
	h.mu.Unlock()
	if s != nil {
		close(s.done)
		<-s.stopped
	}
}

// Is reports whether nc is a monitor.
func (h *Hub) Is(nc net.Conn) bool {
	if !h.Active() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.subs[nc]
	return ok
}

// Feed sends the line of a command run by the client at addr (from, its
// connection) to every monitor but from itself, which gets it through
// Own. It is a no-op for the commands Redis never shows (admin ones such
// as CONFIG, and the skip_monitor ones).
func (h *Hub) Feed(from net.Conn, addr string, cmd *slots.Command, args [][]byte, now time.Time) {
	if !h.Active() || !Shown(cmd) {
		return
	}
	line := AppendLine(nil, addr, cmd, args, now)
	h.mu.Lock()
	defer h.mu.Unlock()
	for nc, s := range h.subs {
		if nc != from {
			h.push(s, line)
		}
	}
}

// Refused reports whether a monitoring connection may not run cmd: Redis
// keeps replica-class connections, monitors among them, away from the
// data (ERR Replica can't interact with the keyspace).
func Refused(cmd *slots.Command) bool {
	return cmd.Has(slots.FlagWrite) || cmd.Has(slots.FlagReadOnly) || cmd.Has(slots.FlagMayReplicate)
}

// Shown reports whether Redis shows cmd to monitors.
func Shown(cmd *slots.Command) bool {
	return cmd != nil && !cmd.Has(slots.FlagAdmin) && !cmd.Has(slots.FlagSkipMonitor)
}

func (h *Hub) push(s *sub, line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	limit := h.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(s.buf)+len(line) > limit {
		s.closed = true
		if h.OnOverflow != nil {
			h.OnOverflow(s.nc.RemoteAddr().String(), len(s.buf))
		}
		s.buf = nil
		s.nc.Close()
		return
	}
	s.buf = append(s.buf, line...)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// write is a monitor's writer: what was fed goes out in one write per
// wake-up.
func (h *Hub) write(s *sub) {
	defer close(s.stopped)
	var out []byte
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		out, s.buf = s.buf, out[:0]
		s.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		if _, err := s.nc.Write(out); err != nil {
			return
		}
		if cap(out) > 1<<20 {
			out = nil
		}
	}
}

// AppendLine appends a command's monitor line: the time with
// microseconds, database 0 and the client's address, then each argument
// quoted as Redis's sdscatrepr quotes it, secrets redacted.
func AppendLine(b []byte, addr string, cmd *slots.Command, args [][]byte, now time.Time) []byte {
	hidden := redact.Hidden(cmd, args)
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " [0 "...)
	b = append(b, addr...)
	b = append(b, "] "...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if hidden(i) {
			a = []byte(redact.Placeholder)
		}
		b = AppendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// AppendRepr appends s in double quotes with Redis's escapes: \\ \" \n
// \r \t \a \b, and \xHH for any other byte that is not printable ASCII.
func AppendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= 0x20 && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return append(b, '"')
}
