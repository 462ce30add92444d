package node

import "github.com/shardgate/shardgate/internal/servercmd"

// cmdWait is WAIT numreplicas timeout. A node has no replicas, so no write
// is ever acknowledged by one: as on a Redis master without replicas,
// WAIT 0 (or less, see servercmd.WaitAtOnce) answers 0 at once, and WAIT 1 or more blocks for its
// timeout (forever for 0) and then answers 0. Inside a transaction it
// answers at once. The wait is a blocked client like BLPOP's, without
// keys: CLIENT UNBLOCK ends it (0, or the UNBLOCKED error), it counts in
// blocked_clients, and a client that goes away ends it.
func (s *Server) cmdWait(c *client, args [][]byte) {
	n, ms, msg := servercmd.ParseWait(args)
	switch {
	case msg != "":
		c.w.Error(msg)
	case servercmd.WaitAtOnce(n) || c.txCtx != nil:
		c.w.Int(0)
	default:
		w := &waiter{req: blockReq{op: opWait, timeoutMs: ms}, proto: c.w.Proto, conn: c.nc, killed: &c.killed, done: make(chan struct{})}
		c.blocked.Store(w) // before blocked_clients counts it: see wait
		s.blk.count(w)     // no keys: nothing to queue it on
		s.wait(c, w)
	}
}
