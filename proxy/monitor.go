package proxy

import (
	"github.com/shardgate/shardgate/internal/monitor"
	"github.com/shardgate/shardgate/slots"
)

// MONITOR on the proxy streams the commands its clients send, with their
// own addresses (a node's MONITOR sees only the proxy's connections):
// each command as the proxy routes it, those of a transaction when EXEC
// sends them, never an admin command or one refused before it is routed
// (unknown, arity, NOAUTH, CROSSSLOT), in Redis 7.0's line format. A
// monitoring connection may still run commands that touch no data; the
// lines of its own commands follow their replies.

func cmdMonitor(c *client, _ [][]byte) {
	if c.monitor {
		return // ignored, without a reply, as by Redis
	}
	c.local.OK()
	// The client is a monitor at once (the commands after MONITOR in
	// its pipeline are a monitor's); other clients' lines reach it once
	// the OK is written (startMonitor), so that none goes before it.
	c.monitor, c.monitorStart = true, true
	c.finishAfter = true
}

// startMonitor sends c the other clients' lines once MONITOR's reply is
// written.
func (c *client) startMonitor() {
	c.monitorStart = false
	// The OK goes before any line another client's command may send
	// (those are written by the monitor's own writer, not c.out).
	c.out.Wait()
	c.srv.monitors.Add(c.nc)
}

// stopMonitor ends c's monitoring (RESET, or the connection closing).
func (c *client) stopMonitor() {
	if c.monitor {
		c.monitor, c.monitorStart = false, false
		c.srv.monitors.Remove(c.nc)
	}
}

// feedMonitors shows a command c sent to the monitors: to c itself, if it
// monitors, right after the command's reply (handle).
func (c *client) feedMonitors(cmd *slots.Command, args [][]byte) {
	now := c.srv.opts.Now()
	if c.monitor && !c.closing && monitor.Shown(cmd) {
		c.ownLines = monitor.AppendLine(c.ownLines, c.raddr, cmd, args, now)
	}
	c.srv.monitors.Feed(c.nc, c.raddr, cmd, args, now)
}

// monitored is a queued command to show when EXEC sends its transaction.
type monitored struct {
	cmd  *slots.Command
	args [][]byte
}

// queueMonitored keeps a copy of a command queued in tx while anyone
// monitors (args live only as long as the batch).
func (c *client) queueMonitored(tx *txState, cmd *slots.Command, args [][]byte) {
	if !c.srv.monitors.Active() && !c.monitor {
		return
	}
	kept := make([][]byte, len(args))
	for i, a := range args {
		kept[i] = append([]byte(nil), a...)
	}
	tx.monitored = append(tx.monitored, monitored{cmd, kept})
}

// feedQueued shows the commands of a transaction EXEC sends.
func (c *client) feedQueued(tx *txState) {
	if !c.srv.monitors.Active() && !c.monitor {
		return
	}
	for _, m := range tx.monitored {
		c.feedMonitors(m.cmd, m.args)
	}
}
