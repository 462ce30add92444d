package proxy

import (
	"bytes"
	"time"
)

// INFO commandstats and latencystats on the proxy describe the commands
// its clients sent, as the proxy saw them (internal/cmdstats keeps them
// as a node does):
//   - a call's time runs from the start of the batch it came in to when
//     its reply was ready, the round trip to its node included: what the
//     client waits for, less the proxy's reads and writes;
//   - a command that may block (BLPOP, XREAD BLOCK ...) counts no time,
//     since the proxy cannot tell its wait from its work, and one that
//     timed out (a null reply) is left out of the latency histogram, as
//     Redis leaves it;
//   - rejected are the commands refused before they ran: by the proxy
//     (arity, NOAUTH, CROSSSLOT, inside MULTI) or by the node with a
//     cluster redirection (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) or another
//     of Redis's refusals before a call (OOM, LOADING ...);
//   - a transaction's commands count when EXEC's reply has them, with no
//     time of their own (EXEC's covers them), failed where their element
//     is an error.

// statClock is the stats clock: monotonic nanoseconds since the start.
func (s *Server) statClock() int64 { return int64(time.Since(s.clockBase)) }

// countOp notes op o, whose reply r is written (failed: an error), in the
// client's commandstats; end is when the batch's replies were in.
func (c *client) countOp(o *op, r []byte, failed bool, end int64) {
	if o.cmd == 0 {
		return
	}
	id := int(o.cmd - 1)
	if o.rejected {
		c.srv.cmdStats.Rejected(&c.cstats, id)
		return
	}
	if o.blockCounted {
		// Timed out (a null reply) or left (no reply): out of the
		// latency histogram, as in Redis.
		c.srv.cmdStats.Unblocked(&c.cstats, id, 0, failed, len(r) > 0 && !isNullReply(r))
		return
	}
	if o.blocking {
		if isNullReply(r) {
			c.srv.cmdStats.CallUntimed(&c.cstats, id, 0)
		} else {
			c.srv.cmdStats.Call(&c.cstats, id, 0, failed)
		}
		return
	}
	var ns int64
	if c.statStart != 0 {
		ns = end - c.statStart
	}
	c.srv.cmdStats.Call(&c.cstats, id, ns, failed)
}

// countBlocked counts the command being handled as it starts to wait on
// its node, as Redis counts a blocking command when it blocks.
func (c *client) countBlocked() {
	if c.curCmd == 0 {
		return
	}
	c.srv.stats.commands.Add(1)
	c.srv.cmdStats.Blocked(&c.cstats, int(c.curCmd-1))
	c.srv.cmdStats.Publish(&c.cstats) // seen while it waits
	c.curBlockCounted = true
}

// isNullReply reports whether r is a null reply in RESP2 or RESP3.
func isNullReply(r []byte) bool {
	s := string(r)
	return s == "*-1\r\n" || s == "$-1\r\n" || s == "_\r\n"
}

// isArrayReply reports whether r is an array reply, not a null one.
func isArrayReply(r []byte) bool {
	return len(r) > 0 && r[0] == '*' && !isNullReply(r)
}

// isRefusal reports whether the error reply r is one a Redis Cluster node
// gives before the command runs: a cluster refusal, or out of memory,
// loading and the like (Redis's rejectCommand).
func isRefusal(r []byte) bool {
	for _, code := range [...]string{"-MOVED ", "-ASK ", "-TRYAGAIN ", "-CLUSTERDOWN ", "-CROSSSLOT ", "-OOM ", "-LOADING ", "-MISCONF ", "-BUSY "} {
		if bytes.HasPrefix(r, []byte(code)) {
			return true
		}
	}
	return false
}
