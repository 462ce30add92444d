package proxy

import (
	"github.com/shardgate/shardgate/internal/clientpause"
	"github.com/shardgate/shardgate/slots"
)

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE pause the proxy's
// own clients (internal/clientpause has the rules): the proxy is the
// server its clients see, so its pause holds their commands before they
// reach a node, and the nodes' own clients are not paused. A held command
// waits in its client's goroutine after the commands before it in the
// batch have run and their replies are written, as Redis writes them
// while the client is postponed; its time starts when it goes on. The
// wait ends early if the client is killed or the proxy closes.

func cmdClientPause(c *client, args [][]byte) {
	now := c.srv.opts.Now().UnixMilli()
	end, mode, msg := clientpause.ParsePause(args, now)
	if msg != "" {
		c.local.Error(msg)
		return
	}
	c.srv.pause.Set(end, mode, now)
	c.local.OK()
}

func cmdClientUnpause(c *client, _ [][]byte) {
	c.srv.pause.Lift()
	c.local.OK()
}

// mayWrite reports whether cmd is held by a WRITE pause: a command that
// may write, or an EXEC whose transaction holds one.
func (c *client) mayWrite(cmd *slots.Command) bool {
	return clientpause.HeldByWrite(cmd, c.multi != nil && c.multi.mayWrite)
}

// pauseHold waits while the pause holds cmd; false if the client is to
// close instead (killed, gone, or the proxy closing).
func (c *client) pauseHold(cmd *slots.Command) bool {
	mayWrite := c.mayWrite(cmd)
	if !c.srv.pause.MayHold(mayWrite) {
		return true
	}
	c.finishBatch()
	if !c.flush() {
		c.closing = true
		return false
	}
	nowMs := func() int64 { return c.srv.opts.Now().UnixMilli() }
	c.paused.Store(true)
	defer c.paused.Store(false)
	if !c.srv.pause.Wait(mayWrite, nowMs, c.killedCh, c.srv.stop) {
		c.closing = true
		// Every command adds one op (handle relies on it): this one, not
		// run, adds an empty one that counts nowhere.
		c.curCmd = 0
		c.uncounted++
		c.addLocal(len(c.local.B))
		return false
	}
	c.statStart = c.srv.statClock() // the command's time starts now
	return true
}
