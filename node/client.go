package node

import (
	"net"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// client is one connection's state. Fields under mu are read by other
// goroutines (CLIENT LIST, CLIENT KILL, INFO); the rest belong to the
// connection's own goroutine.
type client struct {
	srv *Server
	id  int64
	nc  net.Conn
	rd  *resp.Reader
	w   resp.Writer

	laddr, raddr string
	created      time.Time

	mu      sync.Mutex
	name    string
	lastCmd string
	lastAt  time.Time
	proto   int

	authed  bool
	closing bool // close after this reply (QUIT, protocol error, KILL)

	multi *multiState // non-nil between MULTI and EXEC/DISCARD
	watch *watchState // non-nil while keys are WATCHed
	// txCtx is non-nil while EXEC runs the transaction's commands with the
	// keyspace locks held; node-level commands that read the keyspace use
	// it instead of locking (see multi.go).
	txCtx *engine.Ctx

	keyBuf []int      // scratch for key indexes
	ctx    engine.Ctx // reused by every data command
}

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		srv:     s,
		id:      s.nextID.Add(1),
		nc:      nc,
		rd:      resp.NewReader(nc),
		laddr:   nc.LocalAddr().String(),
		raddr:   nc.RemoteAddr().String(),
		created: s.opts.Now(),
		proto:   2,
		authed:  s.opts.RequirePass == "",
		keyBuf:  make([]int, 0, 8),
	}
	c.w.Proto = 2
	c.rd.Unauthenticated = !c.authed
	c.lastAt = c.created
	return c
}

// serveClient reads and runs the client's commands until it goes away.
// Replies to a pipelined batch go out in one write, after the batch.
func (s *Server) serveClient(c *client) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("client goroutine panicked; connection closed", "client", c.id, "panic", r)
		}
		c.unwatchAll()
		c.nc.Close()
		s.removeClient(c)
	}()
	for {
		for {
			args, ok, err := c.rd.Next()
			if err != nil {
				var pe *resp.ProtocolError
				if asProtocolError(err, &pe) {
					s.log.Debug("protocol error", "client", c.id, "addr", c.raddr, "err", pe.Msg)
					c.w.Error("ERR " + pe.Error())
					s.stats.errorReplies.Add(1)
				}
				c.flush()
				return
			}
			if !ok {
				break
			}
			s.execute(c, args)
			if c.closing {
				c.flush()
				return
			}
			if len(c.w.B) > 64*1024 {
				if !c.flush() {
					return
				}
			}
		}
		if !c.flush() {
			return
		}
		if err := c.rd.Fill(); err != nil {
			return
		}
		s.stats.netInput.Add(int64(c.rd.Buffered()))
	}
}

func asProtocolError(err error, pe **resp.ProtocolError) bool {
	p, ok := err.(*resp.ProtocolError)
	if ok {
		*pe = p
	}
	return ok
}

// flush writes buffered replies; false means the connection is gone.
func (c *client) flush() bool {
	if len(c.w.B) == 0 {
		return true
	}
	n, err := c.nc.Write(c.w.B)
	c.srv.stats.netOutput.Add(int64(n))
	c.w.Reset()
	return err == nil
}

var _ = slots.Count
