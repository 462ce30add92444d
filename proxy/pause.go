package proxy

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/clientpause"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE pause the proxy's
// own clients (internal/clientpause has the rules): the proxy is the
// server its clients see, so its pause holds their commands before they
// reach a node, and the nodes' own clients are not paused. The nodes keep
// their datasets still meanwhile, as Redis keeps its own under a pause
// (no expired key removed): each is told the pause's time left, or that
// it was lifted, with SHARDGATE EXPIRY-HOLD (holdNodeExpiry). A held command
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
	c.holdNodeExpiry(c.srv.pause.Left(now))
	c.local.OK()
}

func cmdClientUnpause(c *client, _ [][]byte) {
	c.srv.pause.Lift()
	c.holdNodeExpiry(0)
	c.local.OK()
}

// holdNodeExpiry sends SHARDGATE EXPIRY-HOLD ms to every node the proxy
// can reach, on the shared connection this client's commands take, so
// that its later commands find the node held (or released). The replies
// are not waited for: a node that is down, or too old to know the
// command, just goes on expiring keys; one that joins or restarts during
// the pause is not held either.
func (c *client) holdNodeExpiry(ms int64) {
	cmd := resp.AppendCommand(nil, [][]byte{[]byte("SHARDGATE"), []byte("EXPIRY-HOLD"), strconv.AppendInt(nil, ms, 10)})
	for _, p := range c.srv.route.all() {
		if p.getState() == poolRetired || !p.served() {
			continue
		}
		nc, err := p.sharedConn(c.w.Proto, c.connIdx())
		if err != nil {
			continue
		}
		b := newBatch(0)
		b.start(1, 0)
		nc.send([]*request{{b: b, node: noOwner}}, cmd)
	}
}

// dropHeld ends a client whose held command will not run. Every command
// adds one op (handle relies on it): this one adds an empty one that
// counts nowhere.
func (c *client) dropHeld() {
	c.closing = true
	c.curCmd = 0
	c.uncounted++
	c.addLocal(len(c.local.B))
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
		c.dropHeld()
		return false
	}
	nowMs := func() int64 { return c.srv.opts.Now().UnixMilli() }
	c.paused.Store(true)
	defer c.paused.Store(false)
	if !c.srv.pause.Wait(mayWrite, nowMs, c.killedCh, c.srv.drained, func() bool { return rawio.PeerClosed(c.nc) }) {
		c.dropHeld()
		return false
	}
	c.statStart = c.srv.statClock() // the command's time starts now
	return true
}
