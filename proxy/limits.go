package proxy

// Client limits, as Redis applies them to normal clients: a query buffer
// limit (client-query-buffer-limit) and an output buffer limit
// (client-output-buffer-limit normal <hard>). Both close the client, with
// a warning in the log, as Redis does.

// queryBufferExceeded reports, after a read, whether the client's unparsed
// request bytes exceed Options.QueryBufferLimit. The client is then to be
// closed. Commands queued by an open MULTI do not count: Redis 7.0 checks
// the query buffer alone (7.2 adds the MULTI state).
func (c *client) queryBufferExceeded() bool {
	n := int64(c.rd.Buffered())
	if n <= c.srv.opts.QueryBufferLimit {
		return false
	}
	c.srv.log.Warn("Closing client that reached max query buffer length",
		"client", c.id, "addr", c.raddr, "qbuf", n, "limit", c.srv.opts.QueryBufferLimit)
	return true
}

// outputExceeded reports whether the replies the proxy holds for the
// client, not yet written to its socket, exceed Options.ClientOutputLimit.
// When they do, the replies are dropped and the connection is closed (as
// Redis closes a client over its hard output limit), which ends the
// client's goroutine at its next read or write.
func (c *client) outputExceeded() bool {
	lim := c.srv.opts.ClientOutputLimit
	if lim <= 0 || int64(len(c.w.B)) <= lim {
		return false
	}
	c.srv.log.Warn("Client closed for overcoming of output buffer limits",
		"client", c.id, "addr", c.raddr, "omem", len(c.w.B), "limit", lim)
	c.w.B = nil
	c.closing = true
	c.nc.Close()
	return true
}
