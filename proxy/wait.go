package proxy

import (
	"github.com/shardgate/shardgate/internal/servercmd"
	"github.com/shardgate/shardgate/slots"
)

// cmdWait answers WAIT numreplicas timeout as a Redis master without
// replicas: the proxy checks the arguments and answers 0 at once for 0
// replicas or fewer (servercmd.WaitAtOnce). For more it blocks as Redis does, until its timeout
// (forever for 0), and then answers 0: on a dedicated node connection,
// like BLPOP, since a node has no replicas either and blocks the same way.
// So QUIT, CLIENT UNBLOCK, a client that leaves and a node that dies end
// the wait as they end BLPOP's, and the shared connections never carry it.
// Inside MULTI it is queued and the node answers 0 at EXEC.
func cmdWait(c *client, args [][]byte) {
	n, _, msg := servercmd.ParseWait(args)
	switch {
	case msg != "":
		c.answerHere()
		c.localError(msg)
	case servercmd.WaitAtOnce(n):
		c.answerHere()
		mark := len(c.local.B)
		c.local.Int(0)
		c.addLocal(mark)
	default:
		c.blockingCall(c.srv.anyNode(), slots.Lookup(args[0]), args)
	}
}
