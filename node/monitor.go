package node

import (
	"github.com/shardgate/shardgate/internal/monitor"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// MONITOR streams every command the node runs to the connections that
// asked (internal/monitor), as Redis 7.0 does: after the command has run
// (a blocking one as it starts to wait), with its arguments as the client
// sent them but secrets redacted, never an admin command (CONFIG, CLIENT
// KILL ...) or one refused before it runs. A monitoring connection may
// still run commands that touch no data (PING, CLIENT ...): their lines
// follow their replies on its own stream.

func (s *Server) cmdMonitor(c *client, _ [][]byte) {
	if c.txCtx != nil {
		c.w.Error(resp.ErrMonitorInTx)
		return
	}
	if c.monitor {
		return // ignored, without a reply, as by Redis
	}
	if c.reply != replyOff && c.reply != replySkipThis {
		c.w.OK() // CLIENT REPLY OFF or SKIP silences it like any reply
	}
	// The OK goes before any line another client's command may send
	// (those are written by the monitor's own writer, not c.out).
	if !c.flush() || c.out.Wait() != nil {
		c.closing = true
		return
	}
	c.mark = 0
	c.monitor = true
	s.monitors.Add(c.nc)
}

// feedMonitors shows a command c ran to the monitors.
func (s *Server) feedMonitors(c *client, cmd *slots.Command, args [][]byte) {
	now := s.opts.Now()
	// A connection closing after this reply (QUIT) gets nothing more,
	// not even its own line.
	if c.monitor && !c.closing && monitor.Shown(cmd) {
		c.w.B = monitor.AppendLine(c.w.B, c.raddr, cmd, args, now)
	}
	s.monitors.Feed(c.nc, c.raddr, cmd, args, now)
}

// stopMonitor ends c's monitoring (RESET, or its connection closing).
func (s *Server) stopMonitor(c *client) {
	if c.monitor {
		c.monitor = false
		s.monitors.Remove(c.nc)
	}
}
