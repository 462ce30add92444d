package proxy

import "github.com/shardgate/shardgate/internal/resp"

// Client limits, as Redis applies them to normal clients: a query buffer
// limit (client-query-buffer-limit) and an output buffer limit
// (client-output-buffer-limit normal <hard>). Both close the client, with
// a warning in the log, as Redis does.

// queryBufferExceeded reports, once the complete commands are parsed,
// whether what Redis's query buffer would hold of the incomplete one
// (resp.Reader.Pending: the argument still arriving) exceeds
// Options.QueryBufferLimit. The client is then to be closed. Commands
// queued by an open MULTI do not count: Redis 7.0 checks the query buffer
// alone (7.2 adds the MULTI state).
func (c *client) queryBufferExceeded() bool {
	n := int64(c.rd.Pending())
	if n <= c.srv.opts.QueryBufferLimit {
		return false
	}
	c.logQueryBufferLimit(n)
	return true
}

// argOverQueryBufferLimit is queryBufferExceeded for a whole command: one
// of its arguments alone is over the limit.
func (c *client) argOverQueryBufferLimit(args [][]byte) bool {
	n := int64(resp.QueryBufOf(args))
	if n <= c.srv.opts.QueryBufferLimit {
		return false
	}
	c.logQueryBufferLimit(n)
	return true
}

func (c *client) logQueryBufferLimit(qbuf int64) {
	c.srv.log.Warn("Closing client that reached max query buffer length",
		"client", c.id, "addr", c.raddr, "qbuf", qbuf, "limit", c.srv.opts.QueryBufferLimit)
}

// outputExceeded reports whether the replies the proxy holds for the
// client, not yet written to its socket (those of the batch and those
// queued behind a full socket, c.out), exceed Options.ClientOutputLimit.
// When they do, the replies are dropped and the connection is closed (as
// Redis closes a client over its hard output limit), which ends the
// client's goroutine at its next read or write.
func (c *client) outputExceeded() bool {
	lim := c.srv.opts.ClientOutputLimit
	omem := int64(len(c.w.B) + c.out.Pending())
	if c.b.over.Load() {
		// Replies were dropped as they arrived (batch.hold): omem is
		// what the client would have held at the one that crossed.
		omem = max(omem, c.b.held.Load())
	}
	if lim <= 0 || omem <= lim {
		return false
	}
	c.srv.log.Warn("Client closed for overcoming of output buffer limits",
		"client", c.id, "addr", c.raddr, "omem", omem, "limit", lim)
	c.b.over.Store(false)
	c.w.B = nil
	c.closing = true
	c.nc.Close()
	return true
}
