package node

import (
	"fmt"
	"math"

	"github.com/shardgate/shardgate/internal/clientpause"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE (internal/clientpause
// has the rules). A held command waits in its client's goroutine, after
// the replies to the commands before it are written, as Redis writes them
// while the client is postponed; it then runs with its own time, the
// wait left out of its slow log and commandstats time, as Redis
// re-processes a postponed command. The wait ends early if the client is
// killed or the node closes; a client that just disconnects is noticed
// when the pause ends.

func (s *Server) cmdClientPause(c *client, args [][]byte) {
	now := s.opts.Now().UnixMilli()
	end, mode, msg := clientpause.ParsePause(args, now)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	s.pause.Set(end, mode, now)
	c.w.OK()
}

func (s *Server) cmdClientUnpause(c *client, args [][]byte) {
	s.pause.Lift()
	c.w.OK()
}

// SHARDGATE EXPIRY-HOLD ms, which a proxy sends its nodes when its own
// CLIENT PAUSE starts (ms: the pause's time left) or is lifted (0, which
// lifts every proxy's hold, as CLIENT UNPAUSE lifts every pause): the
// proxy holds its clients' commands itself, and the node keeps its
// dataset still meanwhile, as under a pause of its own (expired keys read
// as gone but stay stored), without holding any client.

func (s *Server) cmdExpiryHold(c *client, args [][]byte) {
	if len(args) != 3 {
		c.w.Error(fmt.Sprintf(resp.ErrWrongArgs, "shardgate|expiry-hold"))
		return
	}
	ms, ok := resp.ParseInt(args[2])
	if !ok || ms < 0 {
		c.w.Error(resp.ErrTimeoutNotInt)
		return
	}
	if ms == 0 {
		s.expiryHeld.Store(0)
		c.w.OK()
		return
	}
	// Holds merge as pauses do, the later end winning: another proxy's
	// shorter pause does not cut this one short.
	until := s.opts.Now().UnixMilli() + min(ms, math.MaxInt64/2)
	for {
		old := s.expiryHeld.Load()
		if old >= until || s.expiryHeld.CompareAndSwap(old, until) {
			break
		}
	}
	c.w.OK()
}

// mayWrite reports whether cmd is held by a WRITE pause: a command that
// may write, or an EXEC whose transaction holds one.
func (c *client) mayWrite(cmd *slots.Command) bool {
	return clientpause.HeldByWrite(cmd, c.multi != nil && c.multi.mayWrite)
}

// waitPause waits while the pause holds cmd; false if the client is to
// close instead (killed, gone, or the node closing).
func (c *client) waitPause(cmd *slots.Command) bool {
	if !c.flush() {
		c.closing = true
		return false
	}
	c.mark = 0 // the replies before this command are written
	nowMs := func() int64 { return c.srv.opts.Now().UnixMilli() }
	// Held, the client counts as blocked (CLIENT LIST's b, INFO's
	// blocked_clients), as Redis counts a postponed client.
	c.paused.Store(true)
	c.srv.blk.blocked.Add(1)
	defer func() {
		c.srv.blk.blocked.Add(-1)
		c.paused.Store(false)
	}()
	if !c.srv.pause.Wait(c.mayWrite(cmd), nowMs, c.killedCh, c.srv.stop, func() bool { return rawio.PeerClosed(c.nc) }) {
		c.closing = true
		return false
	}
	c.tick() // the command's time starts now
	return true
}
